package main

import (
	"context"
	"fmt"
)

// scenario4 measures the leases per second of a semaphore that more
// sessions contend for than it has leases.
func (e *env) scenario4(ctx context.Context) *Scenario {
	s := &Scenario{Key: "4", Title: "Semaphore",
		Setup:    fmt.Sprintf("%d leases, %d sessions, each acquire+return one lease in a loop; %s", e.c.S4Leases, e.c.S4Client, e.throughputSetup()),
		Measures: append([]Measure{{Key: "rate", Label: "leases per second", Unit: unitRate, Better: "higher"}}, perMeasures("lease")...),
		Notes: []string{"The floor is Curator's deprecated InterProcessSemaphore (v1) algorithm on raw go-zookeeper: a lease holder is among the first N children, " +
			"a waiter watches the node N places ahead. Curator's InterProcessSemaphoreV2 instead serialises every acquisition through an internal mutex and a child watch on the leases."}}
	entries := goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (*contender, error) {
		return e.mutexWorkers(ctx, im, e.c.S4Client, e.path("4", im.key), e.c.S4Leases)
	})
	entries = append(entries, e.javaEntry("4", "s4", nil, e.durationArg(), fmt.Sprintf("clients=%d", e.c.S4Client), fmt.Sprintf("leases=%d", e.c.S4Leases)))
	e.interleave(ctx, s, entries, rateValues)
	s.Rows = append(s.Rows, Row{Impl: nameZKLock, Status: "cannot: go-zookeeper has no semaphore"})
	return s
}
