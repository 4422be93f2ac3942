package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"syscall"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds what the scenarios share: their env, the interleaved
// repetitions of the implementations (entries, contenders, lineup), what
// every repetition measures (server packets, client CPU), and waitFor.

// env is what every scenario runs with.
type env struct {
	srv     *zktest.Server // the server the clients use, and whose counters are read
	servers string         // its address
	base    string         // every lock path of the run lies below it
	c       counts
	java    *javaRunner // nil: Java is off
	javaOff string      // why Java is off
	proxy   *proxyProc  // the proxy every client is behind, in the latency section; else nil
	latency *latencySetup
	logf    func(format string, args ...any)
	// heapProfile, if set, is where scenario 6 writes heap profiles of
	// gocurator's and the floor's waiters once all wait (-gocurator and
	// -floor appended to the name).
	heapProfile string
}

func (e *env) path(key, impl string) string { return fmt.Sprintf("%s/s%s/%s", e.base, key, impl) }

// repResult is what one repetition of one implementation measured.
type repResult struct {
	ops     int64         // acquisitions (leases, hand-offs) in the repetition
	elapsed time.Duration // scenarios 1, 2, 4, 5: the timed window; 3: the drain
	cpu     time.Duration // the client process's CPU time (user + system)
	packets int64         // server packets sent during the repetition

	lat        []time.Duration    // scenarios 1, 2, 4, 5: each cycle; 7: each hand-off after the leader's Close
	latSession []time.Duration    // scenario 7: each hand-off after the leader's session ended
	values     map[string]float64 // measures of its own (scenario 6)
}

// errSkipped marks an implementation deliberately not measured; its
// message is the row's status.
var errSkipped = errors.New("not measured")

// contender is one implementation, set up and warmed up for a scenario:
// rep runs one repetition (sessions > 0: with that many of its sessions,
// for scenario 2's sweep), after form (if not nil), which prepares it
// unmeasured; close ends it; cpu reads its process's CPU time (nil: this
// process's, processCPU).
type contender struct {
	form  func(ctx context.Context) error
	rep   func(ctx context.Context, sessions int) (repResult, error)
	close func()
	cpu   func() (time.Duration, error)
}

// entry is an implementation to set up for a scenario, and to warm up for
// warm.
type entry struct {
	impl  string
	warm  time.Duration
	setup func(ctx context.Context) (*contender, error)
}

// goEntries makes an entry per Go implementation, warmed up for
// counts.WarmGo.
func (e *env) goEntries(impls []goImpl, setup func(ctx context.Context, im goImpl) (*contender, error)) []entry {
	var out []entry
	for _, im := range impls {
		out = append(out, entry{impl: im.name, warm: e.c.WarmGo, setup: func(ctx context.Context) (*contender, error) { return setup(ctx, im) }})
	}
	return out
}

func statusOf(err error) string {
	if errors.Is(err, errSkipped) {
		return err.Error()
	}
	return "failed: " + err.Error()
}

// lineup is a scenario's implementations, set up and warmed up, ready to
// run their repetitions interleaved, once or at each step of a sweep.
type lineup struct {
	e       *env
	s       *Scenario
	entries []entry
	cs      []*contender // nil: not set up, or failed
	status  []string     // why cs[i] is nil
}

// interleave sets the entries up, runs their repetitions (lineup.run) and
// puts their rows into s.
func (e *env) interleave(ctx context.Context, s *Scenario, entries []entry, values func(r repResult, m map[string]float64)) {
	l := e.setUp(ctx, s, entries)
	defer l.close()
	s.Rows = l.run(ctx, 0, values)
}

// setUp sets every implementation up and warms it up with unmeasured
// repetitions (JIT, caches, connections), one after the other, and lets
// the last warm-up settle.
func (e *env) setUp(ctx context.Context, s *Scenario, entries []entry) *lineup {
	l := &lineup{e: e, s: s, entries: entries, cs: make([]*contender, len(entries)), status: make([]string, len(entries))}
	for i, en := range entries {
		e.logf("scenario %s: %s: setting up and warming up ...", s.Key, en.impl)
		c, err := en.setup(ctx)
		for until := time.Now().Add(en.warm); err == nil && time.Now().Before(until); {
			_, err = e.measure(ctx, c, 0)
		}
		if err != nil {
			if c != nil {
				c.close()
			}
			l.status[i] = statusOf(err)
			e.logf("scenario %s: %s: %s", s.Key, en.impl, l.status[i])
			continue
		}
		l.cs[i] = c
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

// run runs the repetitions round-robin (floor, gocurator, …, Curator,
// floor, …) so that a change of load on the machine during the run falls
// on all implementations alike, and never two at once. A repetition's
// measures are its client CPU and server packets per acquisition
// (perAcquisition), its values, and what values adds (nil: nothing). It
// returns a row per implementation. One whose repetition fails is closed,
// and its row says why.
func (l *lineup) run(ctx context.Context, sessions int, values func(r repResult, m map[string]float64)) map[string]Row {
	e, label := l.e, l.s.Key
	if sessions > 0 {
		label = fmt.Sprintf("%s, %d sessions", label, sessions)
	}
	reps := make([][]map[string]float64, len(l.entries))
	for r := range e.c.Reps {
		for i, en := range l.entries {
			if l.cs[i] == nil {
				continue
			}
			start := time.Now()
			res, err := e.measure(ctx, l.cs[i], sessions)
			if err != nil {
				l.status[i] = statusOf(err)
				e.logf("scenario %s: %s: repetition %d %s", label, en.impl, r+1, l.status[i])
				l.cs[i].close()
				l.cs[i] = nil
				continue
			}
			v := perAcquisition(res)
			maps.Copy(v, res.values)
			if values != nil {
				values(res, v)
			}
			reps[i] = append(reps[i], v)
			e.logf("scenario %s: %s: repetition %d in %s: %s", label, en.impl, r+1, time.Since(start).Round(time.Millisecond), summary(l.s.Measures, v))
		}
	}
	rows := map[string]Row{}
	for i, en := range l.entries {
		rows[en.impl] = Row{Status: cmp.Or(l.status[i], "failed: no repetition")}
		if l.status[i] == "" && len(reps[i]) > 0 {
			rows[en.impl] = rowOf(l.s.Measures, reps[i])
		}
	}
	return rows
}

// measure runs one repetition of c, after its form, and adds what every
// repetition measures: the server packets sent meanwhile and the CPU time
// of the implementation's process. Scenarios run one at a time and their
// repetitions one after the other, so this process's CPU time is the Go
// implementation's; a JVM counts its own; the ZooKeeper server is a
// process of its own, and not counted.
func (e *env) measure(ctx context.Context, c *contender, sessions int) (repResult, error) {
	cpu := c.cpu
	if cpu == nil {
		cpu = processCPU
	}
	if c.form != nil {
		if err := c.form(ctx); err != nil {
			return repResult{}, err
		}
	}
	var q0, q1 proxyCounts
	var errQ error
	if e.proxy != nil {
		if q0, errQ = e.proxy.counts(ctx); errQ != nil {
			return repResult{}, errQ
		}
	}
	p0, errP := e.counter("zk_packets_sent")
	c0, errC := cpu()
	if err := cmp.Or(errP, errC); err != nil {
		return repResult{}, err
	}
	r, err := c.rep(ctx, sessions)
	if err != nil {
		return r, err
	}
	c1, errC := cpu()
	p1, errP := e.counter("zk_packets_sent")
	r.cpu, r.packets = c1-c0, p1-p0
	if e.proxy != nil {
		if q1, errQ = e.proxy.counts(ctx); errQ == nil {
			if r.values == nil {
				r.values = map[string]float64{}
			}
			q1.perAcquisition(q0, r, r.values)
		}
	}
	return r, cmp.Or(errC, errP, errQ)
}

// newScenario is the scenario of key with title and setup, taking
// measures; in the latency section, its setup says so and it breaks its
// requests down by kind (requestMeasures).
func (e *env) newScenario(key, title, setup string, measures []Measure) *Scenario {
	s := &Scenario{Key: key, Title: title, Setup: setup, Measures: measures}
	if e.latency != nil && delayed(key) {
		s.Setup += latencyNote(e.latency)
		what := "acquisition"
		if m, ok := s.measure("packets"); ok {
			what = strings.TrimPrefix(m.Label, "server packets per ")
		}
		s.Measures = append(s.Measures, requestMeasures(what)...)
	}
	return s
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() (time.Duration, error) {
	var ru syscall.Rusage
	err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), err
}

// connectAll opens n sessions of im; closeAll closes them.
func connectAll(ctx context.Context, im goImpl, servers string, n int) ([]*session, func(), error) {
	var ss []*session
	closeAll := func() {
		for _, s := range ss {
			s.close()
		}
	}
	for range n {
		s, err := im.connect(ctx, servers)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		ss = append(ss, s)
	}
	return ss, closeAll, nil
}

// waitFor polls cond every interval until it holds, ctx ends or limit
// passes.
func waitFor(ctx context.Context, limit, every time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
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
		case <-time.After(every):
		}
	}
}
