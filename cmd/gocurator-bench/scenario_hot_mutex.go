package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// scenario2 measures the acquisitions per second of one mutex that many
// sessions contend for: with counts.S2Client sessions for every
// implementation (the headline), and with each number of sessions of sweep
// for gocurator, Curator and the floor (the report's plot; none on the
// ensemble). Every implementation opens its sessions once; a repetition
// with n sessions runs the first n of them.
func (e *env) scenario2(ctx context.Context, key, where string, sweep []int) *Scenario {
	steps := slices.Sorted(slices.Values(append(slices.Clone(sweep), e.c.S2Client)))
	steps = slices.Compact(steps)
	most := steps[len(steps)-1]
	s := &Scenario{Key: key, Title: "One hot mutex, many clients" + where,
		Setup:    fmt.Sprintf("%d sessions, each acquire+release in a loop on one lock path; %s", e.c.S2Client, e.throughputSetup()),
		Measures: append([]Measure{{Key: "rate", Label: "acquisitions per second", Unit: unitRate, Better: "higher"}}, perMeasures("acquisition")...)}
	if len(sweep) > 0 {
		s.Setup += fmt.Sprintf("; and %s sessions for gocurator, Curator and the floor, each number of sessions, the fewest first, "+
			"running its repetitions of all implementations in turn", joinInts(sweep))
	}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, func(ctx context.Context, im goImpl) (*contender, error) {
		if im.key != implZKLock.key {
			return e.mutexWorkers(ctx, im, most, e.path(key, im.key), 0)
		}
		c, err := e.mutexWorkers(ctx, im, e.c.S2Client, e.path(key, im.key), 0)
		if err != nil {
			return nil, err
		}
		return &contender{close: c.close, rep: func(ctx context.Context, n int) (repResult, error) {
			if n != e.c.S2Client {
				return repResult{}, fmt.Errorf("%w with %d sessions: the sweep is gocurator's, Curator's and the floor's", errSkipped, n)
			}
			return c.rep(ctx, n)
		}}, nil
	})
	entries = append(entries, e.javaEntry(key, "s2", nil, e.durationArg(), fmt.Sprintf("clients=%d", most)))
	l := e.setUp(ctx, s, entries)
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

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}
