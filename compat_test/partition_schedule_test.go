package compat_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// This file holds the partition suite's nemesis schedule: a seeded sequence
// of rounds, each every kind of cut in an order the seed shuffles, one
// fault at a time, each healed before the next.

type pfaultKind string

const (
	pfLeader   pfaultKind = "isolate-leader"    // the leader and its clients, cut off from the rest
	pfFollower pfaultKind = "isolate-follower"  // a follower and its clients, cut off from the rest
	pfMinority pfaultKind = "majority-minority" // a minority of members and a majority, clients on both sides
	pfBridge   pfaultKind = "bridge"            // two halves, one member in neither, which sees both
	pfFlap     pfaultKind = "flapping"          // a minority/majority cut made and healed every 1-3 s
	pfOneWay   pfaultKind = "one-way"           // a member's packets to the other members dropped; theirs to it pass
)

// pfaultKinds is every kind, in the summary's order.
var pfaultKinds = []pfaultKind{pfLeader, pfFollower, pfMinority, pfBridge, pfFlap, pfOneWay}

// pfault is one planned cut.
type pfault struct {
	kind pfaultKind
	gap  time.Duration // the pause before it
	// pick picks the member (a follower among the followers, the one-way
	// cut's sender among the members, the minority, the bridge), and
	// sides the side of each client (bit i: the i-th client by name) where
	// the kind puts clients on sides.
	pick  int
	sides uint64
	// length is how long the cut lasts; flaps, for flapping, how long each
	// cut and each heal lasts in turn (cut first).
	length time.Duration
	flaps  []time.Duration
}

func (f pfault) describe() string {
	s := fmt.Sprintf("after %v: %s (pick %d, sides %04b) for %v", f.gap, f.kind, f.pick, f.sides&0xff, f.length)
	if len(f.flaps) > 0 {
		s += fmt.Sprintf(" in %d cuts and heals", len(f.flaps))
	}
	return s
}

// estimate is how long the fault takes, its gap, its length and the
// holders' holding on before it and the recovery after it.
func (f pfault) estimate(lag time.Duration) time.Duration {
	return f.gap + f.length + time.Second + 4*time.Second + lag/3
}

// partitionSchedule plans the faults for a seed and a duration, the
// follower lag (syncLimit × tickTime) and the session timeout: rounds of
// every kind, each shuffled by the seed, until the estimates fill the
// duration (at least one fault). A cut lasts the lag and a session timeout
// and 1-3 s more, so that whatever it is to bring about (a member noticing
// it is cut off, a session's expiry) comes while it lasts; flapping cuts
// and heals every 1-3 s for 8-14 s.
func partitionSchedule(seed int64, d, lag, session time.Duration) []pfault {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7061727473))
	ms := func(lo, hi time.Duration) time.Duration {
		return lo + time.Duration(rng.Int64N(int64(hi-lo)/1e6))*time.Millisecond
	}
	var out []pfault
	var planned time.Duration
	for planned < d || len(out) == 0 {
		kinds := slices.Clone(pfaultKinds)
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, k := range kinds {
			if planned >= d && len(out) > 0 {
				break
			}
			f := pfault{kind: k, gap: ms(500*time.Millisecond, 2*time.Second), pick: rng.IntN(120), sides: rng.Uint64()}
			if k == pfFlap {
				for total := ms(8*time.Second, 14*time.Second); f.length < total; {
					step := ms(time.Second, 3*time.Second)
					f.flaps = append(f.flaps, step)
					f.length += step
				}
			} else {
				f.length = lag + session + ms(time.Second, 3*time.Second)
			}
			planned += f.estimate(lag)
			out = append(out, f)
		}
	}
	return out
}

// A seed and a duration make one schedule, another seed another; a 5-minute
// schedule has every kind, a short one at least a fault; cuts outlast the
// lag and the session timeout, and flapping cuts and heals every 1-3 s.
func TestPartitionScheduleReplays(t *testing.T) {
	lag, T := 200*time.Millisecond, 6*time.Second
	a, b, c := partitionSchedule(42, 5*time.Minute, lag, T), partitionSchedule(42, 5*time.Minute, lag, T),
		partitionSchedule(43, 5*time.Minute, lag, T)
	if !slices.EqualFunc(a, b, pfaultEqual) {
		t.Fatal("the same seed made two schedules")
	}
	if slices.EqualFunc(a, c, pfaultEqual) {
		t.Fatal("two seeds made one schedule")
	}
	kinds := map[pfaultKind]int{}
	var planned time.Duration
	for _, f := range a {
		kinds[f.kind]++
		planned += f.estimate(lag)
		switch {
		case f.kind == pfFlap:
			for _, s := range f.flaps {
				if s < time.Second || s > 3*time.Second {
					t.Fatalf("%s: a flap of %v", f.describe(), s)
				}
			}
		case f.length < lag+T+time.Second:
			t.Fatalf("%s: shorter than the lag and the session timeout", f.describe())
		}
	}
	if len(kinds) != len(pfaultKinds) || planned < 5*time.Minute {
		t.Fatalf("a 5-minute schedule plans %v for %v", kinds, planned)
	}
	if s := partitionSchedule(1, time.Second, lag, T); len(s) != 1 {
		t.Fatalf("a 1s schedule has %d faults", len(s))
	}
}

func pfaultEqual(a, b pfault) bool {
	return a.kind == b.kind && a.gap == b.gap && a.pick == b.pick && a.sides == b.sides && a.length == b.length &&
		slices.Equal(a.flaps, b.flaps)
}
