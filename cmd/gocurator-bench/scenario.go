package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
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
	lat        []time.Duration // scenario 1: each cycle; scenario 7: each hand-off after the leader's Close
	latSession []time.Duration // scenario 7: each hand-off after the leader's session ended
	packets    int64           // scenarios 1 and 3: server packets sent

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
	l := e.setUp(ctx, id, entries)
	defer l.close()
	return l.run(ctx, "", func(ctx context.Context, _ entry, c contender) (repResult, error) { return c.rep(ctx) }, agg)
}

// lineup is a scenario's implementations, set up and warmed up, ready to
// run their repetitions interleaved, once (interleave) or at each step of a
// sweep (scenario 2).
type lineup struct {
	e       *env
	id      int
	entries []entry
	cs      []contender // nil: not set up, or failed
	status  []string    // why cs[i] is nil
}

// setUp sets every implementation up, one after the other, and lets the
// last warm-up settle.
func (e *env) setUp(ctx context.Context, id int, entries []entry) *lineup {
	l := &lineup{e: e, id: id, entries: entries, cs: make([]contender, len(entries)), status: make([]string, len(entries))}
	for i, en := range entries {
		if ctx.Err() != nil {
			l.status[i] = statusOf(ctx.Err())
			continue
		}
		e.logf("scenario %d: %s: setting up and warming up ...", id, en.impl)
		c, err := en.setup(ctx)
		l.cs[i], l.status[i] = c, statusOf(err)
		if err != nil {
			e.logf("scenario %d: %s: %s", id, en.impl, l.status[i])
		}
	}
	// let the JVM's compiler threads, started by the last warm-up, settle
	select {
	case <-time.After(e.c.WarmGo):
	case <-ctx.Done():
	}
	return l
}

func (l *lineup) close() {
	for _, c := range l.cs {
		if c != nil {
			c.close()
		}
	}
}

// run runs the repetitions round-robin and returns a row per
// implementation. step names what rep runs ("": the scenario's one
// measure) in the log and the profiles. An implementation whose rep fails
// is closed, and its row says why from then on; one whose rep returns an
// error wrapping errSkipped is not measured at this step, and stays.
func (l *lineup) run(ctx context.Context, step string, rep func(context.Context, entry, contender) (repResult, error), agg func([]repResult) row) []row {
	e, id := l.e, l.id
	label, tag := fmt.Sprint(id), ""
	if step != "" {
		label, tag = label+", "+step, "-"+strings.ReplaceAll(step, " ", "-")
	}
	reps := make([][]repResult, len(l.entries))
	skipped := make([]string, len(l.entries))
	for r := range e.c.Reps {
		for i, en := range l.entries {
			if l.cs[i] == nil || skipped[i] != "" {
				continue
			}
			var stop func()
			if e.profileDir != "" && en.impl == nameOurs {
				stop = e.startProfile(fmt.Sprintf("s%d%s-gocurator-rep%d", id, tag, r+1))
			}
			start := time.Now()
			res, err := rep(ctx, en, l.cs[i])
			if stop != nil {
				stop()
			}
			switch {
			case errors.Is(err, errSkipped):
				skipped[i] = statusOf(err)
				continue
			case err != nil:
				l.status[i] = statusOf(err)
				e.logf("scenario %s: %s: repetition %d %s", label, en.impl, r+1, l.status[i])
				l.cs[i].close()
				l.cs[i] = nil
				continue
			}
			reps[i] = append(reps[i], res)
			e.logf("scenario %s: %s: repetition %d in %s: %s", label, en.impl, r+1, time.Since(start).Round(time.Millisecond), brief(agg([]repResult{res})))
		}
	}
	rows := make([]row, len(l.entries))
	for i, en := range l.entries {
		status := cmp.Or(skipped[i], l.status[i])
		if status != "" || len(reps[i]) == 0 {
			rows[i] = row{Impl: en.impl, Status: cmp.Or(status, "failed: no repetition")}
			continue
		}
		rows[i] = agg(reps[i])
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
	case r.SessionLat.P50 > 0:
		return fmt.Sprintf("hand-off after Close: p50 %s p99 %s max %s; after the session's end: p50 %s p99 %s max %s",
			fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtDur(r.Lat.Max()), fmtDur(r.SessionLat.P50), fmtDur(r.SessionLat.P99), fmtDur(r.SessionLat.Max()))
	case r.Lat.P50 > 0:
		return fmt.Sprintf("p50 %s p99 %s max %s, %d over %d ms, %.2f packets/op",
			fmtDur(r.Lat.P50), fmtDur(r.Lat.P99), fmtDur(r.Lat.Max()), r.Lat.Slow(), slowCycle.Milliseconds(), r.PacketsPerOp)
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
	return c.repAt(ctx, len(c.workers))
}

// sweeper is a contender that can run a repetition with only some of its
// sessions (scenario 2's sweep).
type sweeper interface {
	repAt(ctx context.Context, sessions int) (repResult, error)
}

// repAt runs a repetition with the first n workers; with fewer, it is not
// measured.
func (c *timedContender) repAt(ctx context.Context, n int) (repResult, error) {
	if n > len(c.workers) {
		return repResult{}, fmt.Errorf("%w with %d sessions (set up with %d)", errSkipped, n, len(c.workers))
	}
	ops, el, err := runTimed(ctx, c.workers[:n], c.e.c.Duration)
	return repResult{ops: ops, elapsed: el}, err
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
