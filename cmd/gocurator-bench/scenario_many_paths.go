package main

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// scenario5 measures the acquisitions per second of many goroutines of one
// session, each on a lock chosen at random among many paths.
func (e *env) scenario5(ctx context.Context) *Scenario {
	s := &Scenario{Key: "5", Title: "Many lock paths, one client",
		Setup: fmt.Sprintf("One session, %d goroutines (Java: threads), each acquire+release of a lock chosen at random among %d paths; %s",
			e.c.S5Worker, e.c.S5Paths, e.throughputSetup()),
		Measures: append([]Measure{{Key: "rate", Label: "acquisitions per second", Unit: unitRate, Better: "higher"}}, perMeasures("acquisition")...)}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, func(ctx context.Context, im goImpl) (*contender, error) {
		sess, err := im.connect(ctx, e.servers)
		if err != nil {
			return nil, err
		}
		mks := make([]func() owner, e.c.S5Paths)
		for i := range mks {
			if mks[i], err = sess.mutex(fmt.Sprintf("%s/l%d", e.path("5", im.key), i)); err != nil {
				sess.close()
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
		return e.timed(ctx, workers, sess.close)
	})
	entries = append(entries, e.javaEntry("5", "s5", nil, e.durationArg(), fmt.Sprintf("threads=%d", e.c.S5Worker), fmt.Sprintf("paths=%d", e.c.S5Paths)))
	e.interleave(ctx, s, entries, rateValues)
	return s
}
