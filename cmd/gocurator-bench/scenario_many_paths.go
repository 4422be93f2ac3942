package main

import (
	"context"
	"fmt"
)

// scenario5 measures the acquisitions per second of many goroutines of one
// session, each on a lock chosen at random among many paths; key "5", or
// "5d" behind the latency section's proxy.
func (e *env) scenario5(ctx context.Context, key, where string) *Scenario {
	s := e.newScenario(key, "Many lock paths, one client"+where,
		fmt.Sprintf("One session, %d goroutines (Java: threads), each acquire+release of a lock chosen at random among %d paths; %s",
			e.c.S5Worker, e.c.S5Paths, e.loopSetup()),
		append([]Measure{{Key: "rate", Label: "acquisitions per second", Unit: unitRate, Better: "higher"}}, perMeasures("acquisition")...))
	e.interleave(ctx, s, e.loopEntries(key, []goImpl{implFloor, implOurs}, loop{1, e.c.S5Worker, e.c.S5Paths, 0}), rateValues)
	return s
}
