package main

import (
	"context"
	"fmt"
)

// scenario2 measures the acquisitions per second of one mutex that many
// sessions contend for.
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
