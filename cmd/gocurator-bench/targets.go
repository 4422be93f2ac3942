package main

import (
	"cmp"
	"fmt"
	"time"
)

// target is what gocurator must reach in one measure of one scenario: its
// value divided by another implementation's at most ratio when lower is
// better, at least ratio when higher is better.
type target struct {
	scenario, measure, against string
	ratio                      float64
	// bound says, from the run's own values, what keeps gocurator from
	// the target when it is missed; nil when nothing known does.
	bound func(r *Results) string
}

// targets are the report's targets. The ones marked "last report" hold
// gocurator to the ratios of the report of commit 71782af (make bench
// -reps 5, 2026-11-22): no worse than that.
var targets = []target{
	{"1", "p50", nameFloor, 0.75, limitBound("1", 0.75)},
	{"1", "p50", nameLimit, 1.15, nil},
	{"1e", "p50", nameFloor, 0.75, limitBound("1e", 0.75)},
	{"2", "rate", nameCurator, 2, handOffBound},
	{"3", "perWriter", nameCurator, 0.16, nil}, // last report
	{"3", "drain", nameCurator, 0.13, nil},     // last report
	{"4", "rate", nameCurator, 1.82, nil},      // last report
	{"5", "rate", nameCurator, 1.2, floorBound("5", "rate")},
	{"5", "rate", nameFloor, 1.0, nil},
	{"6", "heap", nameFloor, 3.38, waiterBound}, // last report
	{"7", "p50", nameCurator, 0.51, nil},        // last report
	{"7", "sp50", nameCurator, 0.33, nil},       // last report
	// client CPU per acquisition no more than Curator's, in every scenario
	// that runs Curator (all but 6)
	{"1", "cpu", nameCurator, 1, nil},
	{"1e", "cpu", nameCurator, 1, nil},
	{"2", "cpu", nameCurator, 1, nil},
	{"2e", "cpu", nameCurator, 1, nil},
	{"3", "cpu", nameCurator, 1, nil},
	{"4", "cpu", nameCurator, 1, nil},
	{"5", "cpu", nameCurator, 1, floorBound("5", "cpu")},
	{"7", "cpu", nameCurator, 1, nil},
}

// targetResult is a target as the report shows it.
type targetResult struct {
	Scenario, Measure, Target string
	Ours, Theirs, Ratio       string
	Status                    string // "met", "MISSED", or "not measured: why"
	Bound                     string // when missed: what keeps gocurator from it, if known
}

// targetResults evaluates the targets of the scenarios that ran.
func (r *Results) targetResults() []targetResult {
	var out []targetResult
	for _, t := range targets {
		s := r.scenario(t.scenario)
		if s == nil {
			continue
		}
		tr := targetResult{Scenario: t.scenario, Ours: "—", Theirs: "—", Ratio: "—"}
		m, _ := s.measure(t.measure)
		op := "≤"
		if m.Better == "higher" {
			op = "≥"
		}
		tr.Measure, tr.Target = m.Label, fmt.Sprintf("%s %.2f × %s", op, t.ratio, short(t.against))
		ours, ok := s.Rows[nameOurs].Value[t.measure]
		theirs, ok2 := s.Rows[t.against].Value[t.measure]
		switch {
		case !ok:
			tr.Status = "not measured: " + nameOurs + ": " + cmp.Or(s.Rows[nameOurs].Status, "no value")
		case !ok2 || theirs == 0:
			tr.Status = "not measured: " + t.against + ": " + cmp.Or(s.Rows[t.against].Status, "no value")
		default:
			x := ours / theirs
			tr.Ours, tr.Theirs, tr.Ratio = fmtValue(m.Unit, ours), fmtValue(m.Unit, theirs), fmtRatio(x)
			tr.Status = "MISSED"
			if (op == "≤" && x <= t.ratio) || (op == "≥" && x >= t.ratio) {
				tr.Status = "met"
			} else {
				tr.Bound = "no bound known (the spread between runs, or not understood)"
				if t.bound != nil {
					tr.Bound = cmp.Or(t.bound(r), tr.Bound)
				}
			}
		}
		out = append(out, tr)
	}
	return out
}

// value returns impl's value of measure in scenario key; 0 when it was not
// measured (a bound then says nothing).
func (r *Results) value(key, impl, measure string) float64 {
	if s := r.scenario(key); s != nil {
		return s.Rows[impl].Value[measure]
	}
	return 0
}

// limitBound: no lock goes below the limit (its two writes), whatever the
// floor's listing costs; a target of ratio × the floor below the limit
// cannot be met.
func limitBound(key string, ratio float64) func(*Results) string {
	return func(r *Results) string {
		limit, floor, ours := r.value(key, nameLimit, "p50"), r.value(key, nameFloor, "p50"), r.value(key, nameOurs, "p50")
		if min(limit, floor, ours) == 0 {
			return ""
		}
		why := fmt.Sprintf("the limit (create + delete, no listing: the two writes every ZooKeeper lock makes) is %s here, %s the floor; "+
			"gocurator is %s the limit, and %.2f × the floor is %s the limit",
			fmtValue(unitTime, limit), fmtRatio(limit/floor), fmtRatio(ours/limit), ratio, fmtRatio(ratio*floor/limit))
		if ratio*floor < limit {
			return why + ": below what the two writes alone take."
		}
		return why + "."
	}
}

// handOffBound says what a hot lock's acquisitions wait on, each behind the
// previous holder's delete; it does not show the target out of reach.
func handOffBound(r *Results) string {
	limit, rate := r.value("1", nameLimit, "p50"), r.value("2", nameOurs, "rate")
	curatorRate := r.value("2", nameCurator, "rate")
	packets, curator := r.value("2", nameOurs, "packets"), r.value("2", nameCurator, "packets")
	if min(limit, rate, curatorRate, packets, curator) == 0 {
		return ""
	}
	return fmt.Sprintf("not a bound, what it waits on: each acquisition waits for the previous holder's delete to be committed and "+
		"its notification to reach the next waiter, which then holds at once (the hand-off). One write's round trip, half "+
		"scenario 1's limit, is about %s; gocurator takes %s per acquisition, where the target needs %s, with the %d sessions' "+
		"other requests and the server sharing the CPUs: %.2f server packets per acquisition to Curator's %.2f (the "+
		"lookahead's watch and its notification, which take the re-listing off the hand-off's path).",
		fmtValue(unitTime, limit/2), fmtValue(unitTime, float64(time.Second)/rate),
		fmtValue(unitTime, float64(time.Second)/(2*curatorRate)), r.Counts.S2Client, packets, curator)
}

// floorBound: the floor sends the same requests through the same
// go-zookeeper, and pays its cost per request too.
func floorBound(key, measure string) func(*Results) string {
	return func(r *Results) string {
		ours, floor, curator := r.value(key, nameOurs, measure), r.value(key, nameFloor, measure), r.value(key, nameCurator, measure)
		packets, floorPackets := r.value(key, nameOurs, "packets"), r.value(key, nameFloor, "packets")
		if min(ours, floor, curator, packets, floorPackets) == 0 {
			return ""
		}
		return fmt.Sprintf("gocurator sends the floor's requests (%.2f server packets per acquisition; the floor %.2f) through the "+
			"same go-zookeeper, and is %s the floor; Curator is %s the floor. Not a bound, an explanation: the rest is "+
			"go-zookeeper's cost per request, which the floor pays too (a write of its own for every request, and a "+
			"hand-off between goroutines for every call and every reply).", packets, floorPackets, fmtRatio(ours/floor), fmtRatio(curator/floor))
	}
}

// waiterBound: what a waiting handle keeps that the floor's waiter does
// not.
func waiterBound(r *Results) string {
	ours, floor := r.value("6", nameOurs, "heap"), r.value("6", nameFloor, "heap")
	if min(ours, floor) == 0 {
		return ""
	}
	return fmt.Sprintf("a waiting handle keeps %s more than the floor's waiter, which is a goroutine blocked on go-zookeeper's "+
		"watch channel and nothing else: the handle, its grant (a context derived from the client's trust, made before "+
		"its node is created), its turn in the handle, and its share of the client's shared watch on the node it "+
		"waits for (what lets a wait that gives up leave no watch behind).", fmtValue(unitBytes, ours-floor))
}
