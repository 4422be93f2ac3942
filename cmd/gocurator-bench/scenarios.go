package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

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
	case r.P50 > 0:
		return fmt.Sprintf("p50 %s p99 %s, %.2f packets/op", fmtDur(r.P50), fmtDur(r.P99), r.PacketsPerOp)
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

// ---- scenario 1: uncontended mutex ----

func (e *env) scenario1(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 1, Title: "Uncontended mutex acquire + release, one client",
		Setup: fmt.Sprintf("one session, one lock path, %d acquire+release cycles per repetition, %d repetitions; the latency of each whole cycle",
			e.c.S1Ops, e.c.Reps)}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, e.s1Go)
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s1", e.javaArgs(1, fmt.Sprintf("ops=%d", e.c.S1Ops))...)
	}})
	s.Rows = e.interleave(ctx, 1, entries, s1Row)
	return s
}

type s1Contender struct {
	e    *env
	sess session
	o    owner
}

func (e *env) s1Go(ctx context.Context, im goImpl) (contender, error) {
	sess, err := im.connect(ctx, e.servers)
	if err != nil {
		return nil, err
	}
	mk, err := sess.Mutex(e.path(1, im.key))
	if err != nil {
		sess.Close()
		return nil, err
	}
	c := &s1Contender{e: e, sess: sess, o: mk()}
	for until := time.Now().Add(e.c.WarmGo); time.Now().Before(until); {
		if err := cycleOf(c.o)(ctx); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (c *s1Contender) close() { c.sess.Close() }

func (c *s1Contender) rep(ctx context.Context) (repResult, error) {
	p0, err := counter(c.e.servers, "zk_packets_sent")
	if err != nil {
		return repResult{}, err
	}
	lat := make([]time.Duration, c.e.c.S1Ops)
	for i := range lat {
		t := time.Now()
		if err := c.o.Acquire(ctx); err != nil {
			return repResult{}, err
		}
		if err := c.o.Release(ctx); err != nil {
			return repResult{}, err
		}
		lat[i] = time.Since(t)
	}
	p1, err := counter(c.e.servers, "zk_packets_sent")
	if err != nil {
		return repResult{}, err
	}
	return repResult{lat: lat, packets: p1 - p0}, nil
}

func s1Row(reps []repResult) row {
	var r row
	var packets, ops int64
	for _, rep := range reps {
		r.RepP50 = append(r.RepP50, percentile(rep.lat, 50))
		r.RepP99 = append(r.RepP99, percentile(rep.lat, 99))
		packets += rep.packets
		ops += int64(len(rep.lat))
	}
	r.P50, r.P99 = medianDuration(r.RepP50), medianDuration(r.RepP99)
	if ops > 0 {
		r.PacketsPerOp = float64(packets) / float64(ops)
	}
	return r
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

func (e *env) scenario2(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 2, Title: "One hot mutex, many clients",
		Setup: fmt.Sprintf("%d sessions, each acquire+release in a loop on one lock path; %s", e.c.S2Client, e.throughputSetup(ctx))}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, func(ctx context.Context, im goImpl) (contender, error) {
		ss, closeAll, err := connectAll(ctx, im, e.servers, e.c.S2Client)
		if err != nil {
			return nil, err
		}
		var workers []func(context.Context) error
		for _, sess := range ss {
			mk, err := sess.Mutex(e.path(2, im.key))
			if err != nil {
				closeAll()
				return nil, err
			}
			workers = append(workers, cycleOf(mk()))
		}
		return e.newTimed(ctx, workers, closeAll)
	})
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s2", e.javaArgs(2, e.durationArg(), fmt.Sprintf("clients=%d", e.c.S2Client))...)
	}})
	s.Rows = e.interleave(ctx, 2, entries, rateRow)
	return s
}

func (e *env) scenario4(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 4, Title: "Semaphore",
		Setup: fmt.Sprintf("%d leases, %d sessions, each acquire+return one lease in a loop; %s", e.c.S4Leases, e.c.S4Client, e.throughputSetup(ctx))}
	entries := goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (contender, error) {
		ss, closeAll, err := connectAll(ctx, im, e.servers, e.c.S4Client)
		if err != nil {
			return nil, err
		}
		var workers []func(context.Context) error
		for _, sess := range ss {
			mk, err := sess.Semaphore(e.path(4, im.key), e.c.S4Leases)
			if err != nil {
				closeAll()
				return nil, err
			}
			workers = append(workers, cycleOf(mk()))
		}
		return e.newTimed(ctx, workers, closeAll)
	})
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s4", e.javaArgs(4, e.durationArg(), fmt.Sprintf("clients=%d", e.c.S4Client), fmt.Sprintf("leases=%d", e.c.S4Leases))...)
	}})
	s.Rows = e.interleave(ctx, 4, entries, rateRow)
	s.Rows = append(s.Rows, row{Impl: nameZKLock, Status: "cannot: go-zookeeper has no semaphore"})
	s.Notes = append(s.Notes, "The floor is Curator's deprecated InterProcessSemaphore (v1) algorithm on raw go-zookeeper: a lease holder is among the first N children, a waiter watches the node N places ahead. Curator's InterProcessSemaphoreV2 instead serialises every acquisition through an internal mutex and a child watch on the leases.")
	return s
}

func (e *env) scenario5(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 5, Title: "Many lock paths, one client",
		Setup: fmt.Sprintf("one session, %d goroutines (Java: threads), each acquire+release of a lock chosen at random among %d paths; %s",
			e.c.S5Worker, e.c.S5Paths, e.throughputSetup(ctx))}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, func(ctx context.Context, im goImpl) (contender, error) {
		sess, err := im.connect(ctx, e.servers)
		if err != nil {
			return nil, err
		}
		mks := make([]func() owner, e.c.S5Paths)
		for i := range mks {
			if mks[i], err = sess.Mutex(fmt.Sprintf("%s/l%d", e.path(5, im.key), i)); err != nil {
				sess.Close()
				return nil, err
			}
		}
		var workers []func(context.Context) error
		for w := range e.c.S5Worker {
			owners := make([]owner, e.c.S5Paths)
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			workers = append(workers, func(ctx context.Context) error {
				i := rng.IntN(len(owners))
				if owners[i] == nil {
					owners[i] = mks[i]()
				}
				return cycleOf(owners[i])(ctx)
			})
		}
		return e.newTimed(ctx, workers, sess.Close)
	})
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s5", e.javaArgs(5, e.durationArg(), fmt.Sprintf("threads=%d", e.c.S5Worker), fmt.Sprintf("paths=%d", e.c.S5Paths))...)
	}})
	s.Rows = e.interleave(ctx, 5, entries, rateRow)
	return s
}

// ---- scenario 3: read-write lock herd ----

// s3Pattern is the queue: a writer, then group readers, ..., readers in all
// (true: a writer).
func s3Pattern(readers, group int) []bool {
	var w []bool
	for r := 0; r < readers; {
		w = append(w, true)
		for g := 0; g < group && r < readers; g, r = g+1, r+1 {
			w = append(w, false)
		}
	}
	return w
}

func (e *env) scenario3(ctx context.Context) *scenarioResult {
	pattern := s3Pattern(e.c.S3Reader, e.c.S3Group)
	writers := 0
	for _, w := range pattern {
		if w {
			writers++
		}
	}
	s := &scenarioResult{ID: 3, Title: "Read-write lock: writers and readers interleaved",
		Setup: fmt.Sprintf("queue W R×%d W R×%d … (%d writers, %d readers, each its own session), formed in order while the first writer holds; "+
			"then the first writer releases and each participant releases as soon as it acquires. Measured from that release until the last "+
			"participant has released: server packets sent (mntr zk_packets_sent delta, replies and watch notifications) and wall time; "+
			"%d repetitions after one unmeasured; per acquisition = / %d, per writer release = / %d",
			e.c.S3Group, e.c.S3Group, writers, e.c.S3Reader, e.c.Reps, len(pattern)-1, writers)}
	entries := goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (contender, error) {
		return e.s3Go(ctx, im, pattern)
	})
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s3", e.javaArgs(3, fmt.Sprintf("readers=%d", e.c.S3Reader), fmt.Sprintf("group=%d", e.c.S3Group))...)
	}})
	s.Rows = e.interleave(ctx, 3, entries, s3Row)
	s.Rows = append(s.Rows, row{Impl: nameZKLock, Status: "cannot: go-zookeeper has no read-write lock"})
	s.Notes = append(s.Notes,
		"Curator's readers watch the FIRST writer in the queue, so every writer release wakes every reader still queued (the herd). The floor's readers, as the ZooKeeper recipe says, watch the nearest writer before them.")
	return s
}

func s3Row(reps []repResult) row {
	var r row
	for _, rep := range reps {
		r.RepPacketsPerAcq = append(r.RepPacketsPerAcq, float64(rep.packets)/float64(rep.acquisitions))
		r.RepDrain = append(r.RepDrain, rep.drain)
		r.Participants, r.Writers = rep.participants, rep.wrote
	}
	r.PacketsPerAcq = median(r.RepPacketsPerAcq)
	if r.Writers > 0 {
		r.PacketsPerWriter = r.PacketsPerAcq * float64(r.Participants-1) / float64(r.Writers)
	}
	r.Drain = medianDuration(r.RepDrain)
	return r
}

type s3Contender struct {
	e        *env
	im       goImpl
	pattern  []bool
	sessions []session
	closeAll func()
	admin    *rawConn
	n        int
}

func (e *env) s3Go(ctx context.Context, im goImpl, pattern []bool) (contender, error) {
	// fail early, before opening sessions, if the recipe is missing
	probe, err := im.connect(ctx, e.servers)
	if err != nil {
		return nil, err
	}
	_, _, err = probe.ReadWrite(e.path(3, im.key) + "/probe")
	probe.Close()
	if err != nil {
		return nil, err
	}
	ss, closeAll, err := connectAll(ctx, im, e.servers, len(pattern))
	if err != nil {
		return nil, err
	}
	admin, err := connectRaw(ctx, e.servers)
	if err != nil {
		closeAll()
		return nil, err
	}
	c := &s3Contender{e: e, im: im, pattern: pattern, sessions: ss, closeAll: closeAll, admin: admin}
	if _, err := c.rep(ctx); err != nil { // unmeasured, as the Java side
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *s3Contender) close() {
	c.admin.close()
	c.closeAll()
}

func (c *s3Contender) rep(ctx context.Context) (repResult, error) {
	path := fmt.Sprintf("%s/r%d", c.e.path(3, c.im.key), c.n)
	c.n++
	owners := make([]owner, len(c.pattern))
	writers := 0
	for i, sess := range c.sessions {
		rd, wr, err := sess.ReadWrite(path)
		if err != nil {
			return repResult{}, err
		}
		if c.pattern[i] {
			owners[i] = wr()
			writers++
		} else {
			owners[i] = rd()
		}
	}
	packets, drain, err := c.e.s3Rep(ctx, c.admin, owners, path)
	if err != nil {
		return repResult{}, err
	}
	return repResult{packets: packets, drain: drain, acquisitions: len(owners) - 1, participants: len(owners), wrote: writers}, nil
}

// s3Rep forms the queue of owners in order and drains it; it returns the
// server packets sent and the time of the drain.
func (e *env) s3Rep(ctx context.Context, admin *rawConn, owners []owner, path string) (int64, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch0, err := counter(e.servers, "zk_watch_count")
	if err != nil {
		return 0, 0, err
	}
	firstHeld, gate := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(errors.New("scenario 3 ended"))
	for i, o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := o.Acquire(ctx); err != nil {
				cancel(fmt.Errorf("participant %d: %w", i, err))
				return
			}
			if i == 0 {
				close(firstHeld)
				select {
				case <-gate:
				case <-ctx.Done():
				}
			}
			if err := o.Release(context.WithoutCancel(ctx)); err != nil {
				cancel(fmt.Errorf("participant %d: release: %w", i, err))
			}
		}()
		if i == 0 {
			select {
			case <-firstHeld:
			case <-ctx.Done():
				return 0, 0, context.Cause(ctx)
			case <-time.After(30 * time.Second):
				return 0, 0, errors.New("the first writer did not acquire")
			}
			continue
		}
		// the next participant queues only once this one's node exists
		if err := waitFor(ctx, 30*time.Second, func() (bool, error) {
			kids, _, err := admin.Children(path)
			return len(kids) >= i+1, err
		}); err != nil {
			return 0, 0, fmt.Errorf("participant %d did not queue: %w", i, err)
		}
	}
	if err := waitFor(ctx, 30*time.Second, func() (bool, error) {
		n, err := counter(e.servers, "zk_watch_count")
		return n-watch0 >= int64(len(owners)-1), err
	}); err != nil {
		return 0, 0, fmt.Errorf("waiters did not set their watches: %w", err)
	}
	p0, err := counter(e.servers, "zk_packets_sent")
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	close(gate)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		return 0, 0, errors.New("the queue did not drain")
	}
	drain := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, 0, err
	}
	time.Sleep(100 * time.Millisecond) // as the Java side: let background work reach the server
	p1, err := counter(e.servers, "zk_packets_sent")
	if err != nil {
		return 0, 0, err
	}
	return p1 - p0, drain, nil
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

// ---- scenario 6: many waiters in one process ----

// s6FloorWaiters caps the floor's waiters in scenario 6 (see its note).
const s6FloorWaiters = 2000

func (e *env) scenario6(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 6, Title: "Many waiting handles in one process",
		Setup: fmt.Sprintf("one session; one handle holds the lock while %d more, each on its own goroutine, queue behind it; "+
			"memory per waiter = growth of runtime.MemStats HeapInuse (after GC) / %d, goroutine stacks (StackInuse) shown apart; "+
			"then the holder releases and each waiter releases as soon as it acquires: FIFO means the nodes' sequence numbers ascend in acquisition order; one run",
			e.c.S6Wait, e.c.S6Wait)}
	for _, im := range []goImpl{implFloor, implOurs} {
		n := e.c.S6Wait
		if im.key == "floor" {
			n = min(n, s6FloorWaiters)
		}
		e.logf("scenario 6: %s with %d waiters ...", im.name(), n)
		start := time.Now()
		var stop func()
		if e.profileDir != "" && im.key == "gocurator" {
			stop = e.startProfile("s6-gocurator")
		}
		r, err := e.s6Go(ctx, im, n)
		if stop != nil {
			stop()
		}
		r.Impl, r.Status = im.name(), statusOf(err)
		if r.ok() {
			e.logf("scenario 6: %s: done in %s: %s", im.name(), time.Since(start).Round(time.Millisecond), brief(r))
		} else {
			e.logf("scenario 6: %s: %s", im.name(), r.Status)
		}
		s.Rows = append(s.Rows, r)
	}
	s.Rows = append(s.Rows, row{Impl: nameCurator, Status: "not measured: a Curator waiter is a blocked thread, so this would take as many JVM threads as waiters"})
	s.Notes = append(s.Notes, "Both read the FIFO order from the node's sequence number, which costs nothing: gocurator's FencingToken (the node's czxid) costs a round trip on its first call, which the hand-offs timed here would pay one after another, so they do not ask for it.",
		fmt.Sprintf("The floor runs with at most %d waiters, to keep the run short: every waiter of a ZooKeeper lock lists all the lock's children when it queues and when it wakes, so the time of this scenario grows with the square of the waiters, while the memory per waiter does not depend on their number. Its times are therefore not comparable with gocurator's.", s6FloorWaiters))
	return s
}

func (e *env) s6Go(ctx context.Context, im goImpl, n int) (row, error) {
	sess, err := im.connect(ctx, e.servers)
	if err != nil {
		return row{}, err
	}
	defer sess.Close()
	mk, err := sess.Mutex(e.path(6, im.key))
	if err != nil {
		return row{}, err
	}
	holder := mk()
	if err := holder.Acquire(ctx); err != nil {
		return row{}, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tokens := make([]int64, n)
	var order atomic.Int64
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(errors.New("scenario 6 ended"))
	watch0, err := counter(e.servers, "zk_watch_count")
	if err != nil {
		return row{}, err
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := mk()
			if err := o.Acquire(ctx); err != nil {
				cancel(err)
				return
			}
			tokens[order.Add(1)-1] = o.Token()
			if err := o.Release(context.WithoutCancel(ctx)); err != nil {
				cancel(err)
			}
		}()
	}
	// every waiter waits once its watch is set; allow a minute without progress
	last, lastChange := int64(-1), time.Now()
	if err := waitFor(ctx, time.Hour, func() (bool, error) {
		w, err := counter(e.servers, "zk_watch_count")
		if err != nil {
			return false, err
		}
		if w != last {
			last, lastChange = w, time.Now()
		} else if time.Since(lastChange) > time.Minute {
			return false, fmt.Errorf("stuck at %d of %d watches", w-watch0, n)
		}
		time.Sleep(20 * time.Millisecond)
		return w-watch0 >= int64(n), nil
	}); err != nil {
		return row{}, fmt.Errorf("waiters did not all wait: %w", err)
	}
	r := row{Waiters: n, Setup: time.Since(start)}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	r.HeapPerWaiter = (float64(m1.HeapInuse) - float64(m0.HeapInuse)) / float64(n)
	r.StackPerWaiter = (float64(m1.StackInuse) - float64(m0.StackInuse)) / float64(n)
	first := holder.Token()
	t0 := time.Now()
	if err := holder.Release(ctx); err != nil {
		return row{}, err
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return row{}, context.Cause(ctx)
	}
	r.AcquireAll = time.Since(t0)
	if err := context.Cause(ctx); err != nil {
		return row{}, err
	}
	r.FIFO, r.FIFODetail = checkFIFO(first, tokens[:order.Load()], n)
	return r, nil
}

// checkFIFO reports whether n waiters acquired, each with a token above the
// one before (the first holder's token first).
func checkFIFO(first int64, tokens []int64, n int) (bool, string) {
	if len(tokens) != n {
		return false, fmt.Sprintf("%d of %d waiters acquired", len(tokens), n)
	}
	prev := first
	for i, t := range tokens {
		if t <= prev {
			return false, fmt.Sprintf("acquisition %d had token %d after %d", i+1, t, prev)
		}
		prev = t
	}
	if !slices.IsSorted(tokens) {
		return false, "tokens out of order"
	}
	return true, fmt.Sprintf("all %d acquired in queue order", n)
}
