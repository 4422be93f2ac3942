package main

import (
	"cmp"
	"fmt"
)

// target is what gocurator must reach in one measure of one scenario: its
// value divided by another implementation's at most ratio when lower is
// better, at least ratio when higher is better.
type target struct {
	scenario, measure, against string
	ratio                      float64
}

// targets are the report's targets. The ones marked "last report" hold
// gocurator to the ratios of the report of commit 71782af (make bench
// -reps 5, 2026-11-22): no worse than that.
var targets = []target{
	{"1", "p50", nameFloor, 0.75},
	{"1", "p50", nameLimit, 1.15},
	{"1e", "p50", nameFloor, 0.75},
	{"2", "rate", nameCurator, 2},
	{"3", "perWriter", nameCurator, 0.16}, // last report
	{"3", "drain", nameCurator, 0.13},     // last report
	{"4", "rate", nameCurator, 1.82},      // last report
	{"5", "rate", nameCurator, 1.2},
	{"5", "rate", nameFloor, 1.0},
	{"6", "heap", nameFloor, 3.38},   // last report
	{"7", "p50", nameCurator, 0.51},  // last report
	{"7", "sp50", nameCurator, 0.33}, // last report
	// client CPU per acquisition no more than Curator's, in every scenario
	// that runs Curator (all but 6)
	{"1", "cpu", nameCurator, 1},
	{"1e", "cpu", nameCurator, 1},
	{"2", "cpu", nameCurator, 1},
	{"2e", "cpu", nameCurator, 1},
	{"3", "cpu", nameCurator, 1},
	{"4", "cpu", nameCurator, 1},
	{"5", "cpu", nameCurator, 1},
	{"7", "cpu", nameCurator, 1},
}

// targetResult is a target as the report shows it.
type targetResult struct {
	Scenario, Measure, Target string
	Ours, Theirs, Ratio       string
	Status                    string // "met", "MISSED", or "not measured: why"
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
			}
		}
		out = append(out, tr)
	}
	return out
}
