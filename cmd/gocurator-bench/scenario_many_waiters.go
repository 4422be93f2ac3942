package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"
)

// This file holds scenario 6: the memory per waiter of many handles waiting
// on one lock in one process, and whether they acquire in FIFO order.

func (e *env) scenario6(ctx context.Context) *Scenario {
	s := &Scenario{Key: "6", Title: "Many waiting handles in one process",
		Setup: fmt.Sprintf("One session; one handle holds the lock while %d more, each on its own goroutine, queue behind it; "+
			"memory per waiter = growth of runtime.MemStats HeapInuse (after GC) / waiters (the spans in use: live objects, HeapAlloc, and the free slots of spans that hold any), goroutine stacks (StackInuse) apart; "+
			"then the holder releases and each waiter releases as soon as it acquires; the drain per hand-off is the time from that release until all acquired, "+
			"divided by the waiters; the same number of waiters for every implementation; %d repetitions, each on a new session, without warm-up", e.c.S6Wait, e.c.Reps),
		Measures: append([]Measure{
			{Key: "waiters", Label: "waiting handles", Unit: unitCount},
			{Key: "heap", Label: "heap per waiting handle", Unit: unitBytes, Better: "lower"},
			{Key: "objects", Label: "of which live objects (HeapAlloc)", Unit: unitBytes, Better: "lower"},
			{Key: "stack", Label: "goroutine stack per waiting handle", Unit: unitBytes, Better: "lower"},
			{Key: "formed", Label: "time until all wait", Unit: unitTime},
			{Key: "acquired", Label: "time from the holder's release until all acquired", Unit: unitTime},
			{Key: "handoff", Label: "drain per hand-off", Unit: unitTime, Better: "lower"},
		}, perMeasures("acquisition")...),
		Notes: []string{
			"Every waiter must acquire in queue order, read from its node's sequence number (which costs nothing: gocurator's FencingToken, the node's czxid, " +
				"costs a round trip on its first call); a run where they do not fails its row.",
			"Every waiter of a ZooKeeper lock lists the lock's children when it queues, and a waiter (the floor's) or one of the waiters behind it (gocurator's lookahead) " +
				"when a hand-off wakes it: each listing grows with the queue, so the drain per hand-off grows with the number of waiters.",
		}}
	cold := *e // no warm-up: thousands of waiters take many seconds, and their memory varies little
	cold.c.WarmGo = 0
	n := e.c.S6Wait
	entries := cold.goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (*contender, error) {
		return &contender{close: func() {}, rep: func(ctx context.Context, _ int) (repResult, error) {
			v, err := e.s6Go(ctx, im, n)
			return repResult{ops: int64(n + 1), values: v}, err
		}}, nil
	})
	cold.interleave(ctx, s, entries, nil)
	for _, im := range []goImpl{implOurs, implFloor} {
		e.logf("scenario 6: %s: where a waiter's heap goes: %d more waiters, every allocation sampled ...", im.name, heapProfiled)
		shares, err := e.waiterHeap(ctx, im)
		if err != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("Where a waiter's heap goes, %s: not measured: %v.", im.name, err))
			continue
		}
		if s.HeapBy == nil {
			s.HeapBy = map[string][]heapShare{}
			s.Notes = append(s.Notes, fmt.Sprintf("Where a waiter's heap goes: the heap profile's growth (every allocation sampled, the objects' sizes, "+
				"without the spans' slack that HeapInuse counts) from before until all of %d more waiters wait, an unmeasured queue of each implementation, by what allocated it, in the next items.", heapProfiled))
		}
		s.HeapBy[im.name] = shares
		s.Notes = append(s.Notes, "Where a waiter's heap goes, "+fmtHeapShares(im.name, shares)+".")
	}
	s.Rows[nameCurator] = Row{Status: "not measured: a Curator waiter is a blocked thread, so this would take as many JVM threads as waiters"}
	return s
}

// s6Go queues n waiters behind a holder, measures their memory, and drains
// them in FIFO order.
func (e *env) s6Go(ctx context.Context, im goImpl, n int) (map[string]float64, error) {
	sess, err := im.connect(ctx, e.servers)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	mk, holder, watch0, err := e.holdFor(ctx, sess, e.path("6", im.key))
	if err != nil {
		return nil, err
	}
	profile := e.heapProfile + "-" + im.key
	if e.heapProfile != "" {
		restore := profileHeap()
		defer restore()
		if err := writeHeapProfile(profile + ".base"); err != nil {
			return nil, err
		}
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	start := time.Now()
	q := newQueue(ctx)
	defer q.close()
	if err := e.form(q, mk, n, watch0); err != nil {
		return nil, err
	}
	v := map[string]float64{"waiters": float64(n), "formed": float64(time.Since(start))}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	v["heap"] = (float64(m1.HeapInuse) - float64(m0.HeapInuse)) / float64(n)
	v["objects"] = (float64(m1.HeapAlloc) - float64(m0.HeapAlloc)) / float64(n)
	if e.heapProfile != "" {
		if err := writeHeapProfile(profile); err != nil {
			return nil, err
		}
		e.logf("scenario 6: %s: wrote the heap profile of %d waiters to %s, and the one before they queued to %s.base "+
			"(go tool pprof -sample_index=inuse_space -base %[3]s.base %[3]s); this repetition's times are not comparable", im.name, n, profile)
	}
	v["stack"] = (float64(m1.StackInuse) - float64(m0.StackInuse)) / float64(n)
	first := holder.Token()
	acquired, err := q.drain(holder, time.Hour)
	if err != nil {
		return nil, err
	}
	v["acquired"], v["handoff"] = float64(acquired), float64(acquired)/float64(n)
	return v, checkFIFO(first, q.tokens, n)
}

// checkFIFO returns an error unless n waiters acquired, each with a token
// above the one before (the first holder's token first).
func checkFIFO(first int64, tokens []int64, n int) error {
	if len(tokens) != n {
		return fmt.Errorf("%d of %d waiters acquired", len(tokens), n)
	}
	prev := first
	for i, t := range tokens {
		if t <= prev {
			return fmt.Errorf("not FIFO: acquisition %d had token %d after %d", i+1, t, prev)
		}
		prev = t
	}
	return nil
}

// profileHeap samples every allocation from now on (for a heap profile of
// what the waiters keep: slower), and returns what sets the sampling back.
func profileHeap() func() {
	rate := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	return func() { runtime.MemProfileRate = rate }
}

// writeHeapProfile writes the heap profile, as of now, to path: what is in
// use by where it was allocated (go tool pprof -sample_index=inuse_space);
// and what every goroutine is doing, to path.goroutines.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	settleHeapProfile()
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if err = errors.Join(err, f.Close()); err != nil {
		return err
	}
	if f, err = os.Create(path + ".goroutines"); err != nil {
		return err
	}
	err = pprof.Lookup("goroutine").WriteTo(f, 1)
	return errors.Join(err, f.Close())
}
