package main

import (
	"context"
	"fmt"
)

// scenario4 measures the leases per second of a semaphore that more
// sessions contend for than it has leases.
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
