package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// This file holds the timed loops of scenarios 1, 2, 4 and 5, in Go and
// in Java.

// loop is a timed loop's shape: workers goroutines (Java: threads), worker
// i on session i % sessions, each acquiring and releasing in a loop a lock
// chosen at random among paths lock paths, or a lease of it as a semaphore
// of leases leases (leases > 0).
type loop struct{ sessions, workers, paths, leases int }

// loopEntries are the Go implementations' and Curator's entries of scenario
// key's loop.
func (e *env) loopEntries(key string, impls []goImpl, l loop) []entry {
	entries := e.goEntries(impls, func(ctx context.Context, im goImpl) (*contender, error) {
		return e.lockLoop(ctx, im, e.path(key, im.key), l)
	})
	return append(entries, e.javaEntry(key, "loop", nil, "durationMs="+strconv.FormatInt(e.c.Duration.Milliseconds(), 10),
		fmt.Sprintf("clients=%d", l.sessions), fmt.Sprintf("threads=%d", l.workers), fmt.Sprintf("paths=%d", l.paths), fmt.Sprintf("leases=%d", l.leases)))
}

// lockLoop opens l.sessions sessions of im and returns l as a contender
// whose repetition runs the first n workers (all for 0) for
// counts.Duration.
func (e *env) lockLoop(ctx context.Context, im goImpl, path string, l loop) (*contender, error) {
	ss, closeAll, err := connectAll(ctx, im, e.servers, l.sessions)
	if err != nil {
		return nil, err
	}
	mks := make([][]func() owner, len(ss)) // by session and path
	for i, s := range ss {
		for p := range l.paths {
			lp := fmt.Sprintf("%s/l%d", path, p)
			mk, err := s.mutex(lp)
			if l.leases > 0 {
				mk, err = s.semaphore(lp, l.leases)
			}
			if err != nil {
				closeAll()
				return nil, err
			}
			mks[i] = append(mks[i], mk)
		}
	}
	var workers []func(context.Context) error
	for w := range l.workers {
		owners := make([]owner, l.paths) // each made on its first use
		rng := rand.New(rand.NewPCG(uint64(w), 5))
		workers = append(workers, func(ctx context.Context) error {
			p := rng.IntN(l.paths)
			if owners[p] == nil {
				owners[p] = mks[w%len(ss)][p]()
			}
			if err := owners[p].Acquire(ctx); err != nil {
				return err
			}
			return owners[p].Release(ctx)
		})
	}
	return &contender{close: closeAll, rep: func(ctx context.Context, n int) (repResult, error) {
		if n == 0 {
			n = len(workers)
		}
		if n > len(workers) {
			return repResult{}, fmt.Errorf("%d workers asked for, %d set up", n, len(workers))
		}
		return runTimed(ctx, workers[:n], e.c.Duration)
	}}, nil
}

// runTimed runs every worker in a loop on its own goroutine for d and
// returns the time of every cycle completed, and how long until all had
// stopped.
func runTimed(ctx context.Context, workers []func(context.Context) error, d time.Duration) (repResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		r  repResult
		mu sync.Mutex
		wg sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for _, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			for t := time.Now(); t.Before(deadline); {
				if err := w(ctx); err != nil {
					cancel(err)
					return
				}
				end := time.Now()
				lat, t = append(lat, end.Sub(t)), end
			}
			mu.Lock()
			r.lat = append(r.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	r.elapsed, r.ops = time.Since(start), int64(len(r.lat))
	return r, context.Cause(ctx)
}

// rateValues adds a timed loop's rate to its measures.
func rateValues(r repResult, m map[string]float64) { m["rate"] = float64(r.ops) / r.elapsed.Seconds() }

// loopSetup says how a timed loop's repetitions ran.
func (e *env) loopSetup() string {
	return fmt.Sprintf("%s measured × %d repetitions, after %s of warm-up (JVM: %s)", e.c.Duration, e.c.Reps, e.c.WarmGo, e.c.WarmJava)
}
