package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds what the scenarios share: their env, the interleaved
// repetitions of the implementations (contenders, entries), the timed loops
// of the throughput scenarios and their rows, and waitFor.
//
// env is what every scenario runs with.
type env struct {
	servers    string
	base       string // every lock path of the run lies below it
	c          counts
	java       *javaRunner // nil: Java is off
	javaOff    string      // why Java is off
	profileDir string      // non-empty: CPU profiles of gocurator's repetitions go here
	logf       func(format string, args ...any)
}

func (e *env) path(scenario int, impl string) string {
	return fmt.Sprintf("%s/s%d/%s", e.base, scenario, impl)
}

// repResult is one measured repetition of one implementation.
type repResult struct {
	lat     []time.Duration // scenario 1: each cycle
	packets int64           // scenarios 1 and 3: server packets sent

	ops     int64 // scenarios 2, 4, 5: cycles completed
	elapsed time.Duration

	drain                             time.Duration // scenario 3
	acquisitions, participants, wrote int
}

// contender is one implementation, set up and warmed up for a scenario.
type contender interface {
	rep(ctx context.Context) (repResult, error)
	close()
}

// entry is an implementation to set up for a scenario.
type entry struct {
	impl  string
	setup func(ctx context.Context) (contender, error)
}

func statusOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, errSkipped):
		return err.Error()
	case errors.Is(err, errUnsupported):
		return "cannot: " + err.Error()
	default:
		return "failed: " + err.Error()
	}
}

// interleave sets every implementation up (connect, warm up) one after the
// other, then runs the repetitions round-robin: floor, gocurator, zk.Lock,
// Curator, floor, ... so that a change of load on the machine during the run
// falls on all of them alike, and never two at once. agg turns an
// implementation's repetitions into its row.
func (e *env) interleave(ctx context.Context, id int, entries []entry, agg func([]repResult) row) []row {
	type live struct {
		c      contender
		reps   []repResult
		status string
	}
	ls := make([]live, len(entries))
	defer func() {
		for _, l := range ls {
			if l.c != nil {
				l.c.close()
			}
		}
	}()
	for i, en := range entries {
		if ctx.Err() != nil {
			ls[i].status = statusOf(ctx.Err())
			continue
		}
		e.logf("scenario %d: %s: setting up and warming up ...", id, en.impl)
		c, err := en.setup(ctx)
		ls[i].c, ls[i].status = c, statusOf(err)
		if err != nil {
			e.logf("scenario %d: %s: %s", id, en.impl, ls[i].status)
		}
	}
	// let the JVM's compiler threads, started by the last warm-up, settle
	select {
	case <-time.After(e.c.WarmGo):
	case <-ctx.Done():
	}
	for r := range e.c.Reps {
		for i, en := range entries {
			l := &ls[i]
			if l.c == nil {
				continue
			}
			var stop func()
			if e.profileDir != "" && en.impl == nameOurs {
				stop = e.startProfile(fmt.Sprintf("s%d-gocurator-rep%d", id, r+1))
			}
			start := time.Now()
			res, err := l.c.rep(ctx)
			if stop != nil {
				stop()
			}
			if err != nil {
				l.status = statusOf(err)
				e.logf("scenario %d: %s: repetition %d %s", id, en.impl, r+1, l.status)
				l.c.close()
				l.c = nil
				continue
			}
			l.reps = append(l.reps, res)
			e.logf("scenario %d: %s: repetition %d in %s: %s", id, en.impl, r+1, time.Since(start).Round(time.Millisecond), brief(agg([]repResult{res})))
		}
	}
	rows := make([]row, len(entries))
	for i, en := range entries {
		if ls[i].status != "" || len(ls[i].reps) == 0 {
			rows[i] = row{Impl: en.impl, Status: ls[i].status}
			if rows[i].Status == "" {
				rows[i].Status = "failed: no repetition"
			}
			continue
		}
		rows[i] = agg(ls[i].reps)
		rows[i].Impl = en.impl
	}
	return rows
}

func (e *env) startProfile(name string) func() {
	f, err := os.Create(filepath.Join(e.profileDir, name+".cpu.pprof"))
	if err != nil {
		e.logf("profile: %v", err)
		return nil
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		e.logf("profile: %v", err)
		f.Close()
		return nil
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// brief is a one-line summary of a row for progress output.
func brief(r row) string {
	switch {
	case r.Lat.P50 > 0:
		return fmt.Sprintf("p50 %s p99 %s max %s, %d over %s, %.2f packets/op",
			fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtDur(r.Lat.Max()), r.Lat.Slow(), fmtDur(slowCycle), r.PacketsPerOp)
	case r.Rate > 0:
		return fmt.Sprintf("%.0f/s", r.Rate)
	case r.Writers > 0:
		return fmt.Sprintf("%.2f packets/acquisition, %.1f per writer release, drain %s",
			r.PacketsPerAcq, r.PacketsPerWriter, fmtDur(r.Drain))
	case r.Waiters > 0:
		return fmt.Sprintf("%d waiters: heap %.0f B + stack %.0f B each; %s", r.Waiters, r.HeapPerWaiter, r.StackPerWaiter, r.FIFODetail)
	}
	return ""
}

// goEntries makes an entry per Go implementation.
func goEntries(impls []goImpl, setup func(ctx context.Context, im goImpl) (contender, error)) []entry {
	var out []entry
	for _, im := range impls {
		out = append(out, entry{impl: im.name(), setup: func(ctx context.Context) (contender, error) { return setup(ctx, im) }})
	}
	return out
}

// ---- throughput: scenarios 2, 4, 5 ----

// runTimed runs every worker in a loop on its own goroutine for d and
// returns how many cycles completed and how long until all had stopped.
func runTimed(ctx context.Context, workers []func(context.Context) error, d time.Duration) (int64, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			for time.Now().Before(deadline) {
				if err := w(ctx); err != nil {
					cancel(err)
					return
				}
				n++
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, 0, err
	}
	return total.Load(), elapsed, nil
}

type timedContender struct {
	e        *env
	workers  []func(context.Context) error
	closeAll func()
}

func (c *timedContender) close() { c.closeAll() }

func (c *timedContender) rep(ctx context.Context) (repResult, error) {
	n, el, err := runTimed(ctx, c.workers, c.e.c.Duration)
	return repResult{ops: n, elapsed: el}, err
}

// newTimed warms the workers up and returns them as a contender.
func (e *env) newTimed(ctx context.Context, workers []func(context.Context) error, closeAll func()) (contender, error) {
	if _, _, err := runTimed(ctx, workers, e.c.WarmGo); err != nil {
		closeAll()
		return nil, err
	}
	return &timedContender{e: e, workers: workers, closeAll: closeAll}, nil
}

func rateRow(reps []repResult) row {
	var r row
	for _, rep := range reps {
		r.RepRates = append(r.RepRates, float64(rep.ops)/rep.elapsed.Seconds())
	}
	r.Rate = median(r.RepRates)
	return r
}

func cycleOf(o owner) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := o.Acquire(ctx); err != nil {
			return err
		}
		return o.Release(ctx)
	}
}

// connectAll opens n sessions of im, a few at a time; closeAll closes them
// all at once.
func connectAll(ctx context.Context, im goImpl, servers string, n int) ([]session, func(), error) {
	ss := make([]session, n)
	closeAll := func() {
		var wg sync.WaitGroup
		for _, s := range ss {
			if s != nil {
				wg.Add(1)
				go func() { defer wg.Done(); s.Close() }()
			}
		}
		wg.Wait()
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		slots = make(chan struct{}, 8)
	)
	for i := range ss {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			s, err := im.connect(ctx, servers)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			ss[i] = s
		}()
	}
	wg.Wait()
	if first != nil {
		closeAll()
		return nil, nil, first
	}
	return ss, closeAll, nil
}

func (e *env) throughputSetup(ctx context.Context) string {
	return fmt.Sprintf("%s measured × %d repetitions, after %s of warm-up (JVM: %s)", e.c.Duration, e.c.Reps, e.c.WarmGo, e.c.WarmJava)
}

// waitFor polls cond every few milliseconds until it holds, ctx ends or
// limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil && !isNoNode(err) {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", limit)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(2 * time.Millisecond):
		}
	}
}
