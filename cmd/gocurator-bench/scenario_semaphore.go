package main

import (
	"context"
	"fmt"
)

// scenario4 measures the leases per second of a semaphore that more
// sessions contend for than it has leases; key "4", or "4d" behind the
// latency section's proxy.
func (e *env) scenario4(ctx context.Context, key, where string) *Scenario {
	s := e.newScenario(key, "Semaphore"+where,
		fmt.Sprintf("%d leases, %d sessions, each acquire+return one lease in a loop; %s", e.c.S4Leases, e.c.S4Client, e.loopSetup()),
		append([]Measure{{Key: "rate", Label: "leases per second", Unit: unitRate, Better: "higher"}}, perMeasures("lease")...))
	s.Notes = []string{"The floor is Curator's deprecated InterProcessSemaphore (v1) algorithm on raw go-zookeeper: a lease holder is among the first N children, " +
		"a waiter watches the node N places ahead. Curator's InterProcessSemaphoreV2 instead serialises every acquisition through an internal mutex and a child watch on the leases."}
	e.interleave(ctx, s, e.loopEntries(key, []goImpl{implFloor, implOurs}, loop{e.c.S4Client, e.c.S4Client, 1, e.c.S4Leases}), rateValues)
	return s
}
