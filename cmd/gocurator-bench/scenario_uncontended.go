package main

import "context"

// scenario1 measures the latency of an uncontended mutex acquire + release
// on one session, the server packets and the client CPU each costs; key
// "1" on the standalone server, "1d" behind the latency section's proxy,
// "1e" on the ensemble.
func (e *env) scenario1(ctx context.Context, key, where string) *Scenario {
	s := e.newScenario(key, "Uncontended mutex acquire + release, one client"+where,
		"One session, acquire+release in a loop on one lock path; the latency of each whole cycle; "+e.loopSetup(),
		append(latencyMeasures("", "acquire+release"), perMeasures("acquisition")...))
	e.interleave(ctx, s, e.loopEntries(key, []goImpl{implFloor, implLimit, implOurs}, loop{1, 1, 1, 0}), func(r repResult, m map[string]float64) {
		latencyValues(m, "", r.lat)
	})
	return s
}
