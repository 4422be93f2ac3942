package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds scenario 6: the memory per waiter of many handles waiting
// on one lock in one process, and whether they acquire in FIFO order.
//
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
