package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// scenario2 measures the acquisitions per second of one mutex that many
// sessions contend for: with counts.S2Client sessions (the headline), and
// with each number of sessions of sweep (the report's plot; none on the
// ensemble nor behind the proxy). Every implementation opens its sessions once; a repetition
// with n sessions runs the first n of them.
func (e *env) scenario2(ctx context.Context, key, where string, sweep []int) *Scenario {
	steps := slices.Sorted(slices.Values(append(slices.Clone(sweep), e.c.S2Client)))
	steps = slices.Compact(steps)
	most := steps[len(steps)-1]
	s := e.newScenario(key, "One hot mutex, many clients"+where,
		fmt.Sprintf("%d sessions, each acquire+release in a loop on one lock path; %s", e.c.S2Client, e.loopSetup()),
		append([]Measure{{Key: "rate", Label: "acquisitions per second", Unit: unitRate, Better: "higher"}}, perMeasures("acquisition")...))
	if len(sweep) > 0 {
		s.Setup += fmt.Sprintf("; and %s sessions, each number of sessions, the fewest first, "+
			"running its repetitions of all implementations in turn", strings.ReplaceAll(strings.Trim(fmt.Sprint(sweep), "[]"), " ", ", "))
	}
	l := e.setUp(ctx, s, e.loopEntries(key, []goImpl{implFloor, implOurs}, loop{most, most, 1, 0}))
	defer l.close()
	for _, n := range steps {
		rows := l.run(ctx, n, rateValues)
		if len(sweep) > 0 {
			s.Sweep = append(s.Sweep, SweepPoint{Sessions: n, Rows: rows})
		}
		if n == e.c.S2Client {
			s.Rows = rows
		}
	}
	return s
}
