package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// scenario2 measures the acquisitions per second of one mutex that many
// sessions contend for: with counts.S2Client sessions for every
// implementation (the headline), and with each number of sessions of
// counts.S2Sweep for gocurator, Curator and the floor (the report's plot).
// Every implementation opens its sessions once; a repetition with n
// sessions runs the first n of them.
func (e *env) scenario2(ctx context.Context) *scenarioResult {
	steps := s2Steps(e.c)
	most := steps[len(steps)-1]
	s := &scenarioResult{ID: 2, Title: "One hot mutex, many clients",
		Setup: fmt.Sprintf("%d sessions for every implementation, and %s sessions for gocurator, Curator and the floor, "+
			"each acquire+release in a loop on one lock path; each number of sessions, the fewest first, runs its repetitions "+
			"of all implementations in turn; %s", e.c.S2Client, joinInts(steps, ", "), e.throughputSetup(ctx))}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, func(ctx context.Context, im goImpl) (contender, error) {
		n := most
		if im.key == implZKLock.key {
			n = e.c.S2Client
		}
		ss, closeAll, err := connectAll(ctx, im, e.servers, n)
		if err != nil {
			return nil, err
		}
		var workers []func(context.Context) error
		for _, sess := range ss {
			mk, err := sess.Mutex(e.path(2, im.key))
			if err != nil {
				closeAll()
				return nil, err
			}
			workers = append(workers, cycleOf(mk()))
		}
		return e.newTimed(ctx, workers, closeAll)
	})
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s2", e.javaArgs(2, e.durationArg(), fmt.Sprintf("clients=%d", most))...)
	}})
	l := e.setUp(ctx, 2, entries)
	defer l.close()
	for _, n := range steps {
		rows := l.run(ctx, fmt.Sprintf("%d sessions", n), func(ctx context.Context, en entry, c contender) (repResult, error) {
			if en.impl == nameZKLock && n != e.c.S2Client {
				return repResult{}, fmt.Errorf("%w with %d sessions: the sweep is gocurator's, Curator's and the floor's", errSkipped, n)
			}
			return c.(sweeper).repAt(ctx, n)
		}, rateRow)
		s.Sweep = append(s.Sweep, sweepPoint{Sessions: n, Rows: rows})
		if n == e.c.S2Client {
			s.Rows = rows
		}
	}
	return s
}

// s2Steps is scenario 2's numbers of sessions, ascending: the sweep's and
// the headline's.
func s2Steps(c counts) []int {
	steps := slices.Clone(c.S2Sweep)
	if !slices.Contains(steps, c.S2Client) {
		steps = append(steps, c.S2Client)
	}
	slices.Sort(steps)
	return slices.Compact(steps)
}

func joinInts(xs []int, sep string) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, sep)
}
