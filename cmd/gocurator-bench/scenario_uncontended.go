package main

import "context"

// scenario1 measures the latency of an uncontended mutex acquire + release
// on one session, the server packets and the client CPU each costs; key
// "1" on the standalone server, "1e" on the ensemble. The JVM runs it as
// CuratorBench's s2 with one session.
func (e *env) scenario1(ctx context.Context, key, where string) *Scenario {
	s := &Scenario{Key: key, Title: "Uncontended mutex acquire + release, one client" + where,
		Setup:    "One session, acquire+release in a loop on one lock path; the latency of each whole cycle; " + e.throughputSetup(),
		Measures: append(latencyMeasures("", "acquire+release"), perMeasures("acquisition")...)}
	entries := goEntries([]goImpl{implFloor, implLimit, implOurs, implZKLock}, func(ctx context.Context, im goImpl) (*contender, error) {
		return e.mutexWorkers(ctx, im, 1, e.path(key, im.key), 0)
	})
	entries = append(entries, e.javaEntry(key, "s2", nil, e.durationArg(), "clients=1"))
	e.interleave(ctx, s, entries, func(r repResult) map[string]float64 {
		m := perAcquisition(r)
		latencyValues(m, "", r.lat)
		return m
	})
	return s
}
