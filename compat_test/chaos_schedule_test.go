package compat_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// This file holds the chaos suite's fault schedule: its lanes, each a
// seeded sequence of rounds of faults. Faults run in lanes, at once: the
// server lane (members killed, quorum lost, a member partitioned or slowed)
// and one lane per family of clients (a Go client in the test, a Go
// contender process, a Java peer), each with faults to its own clients
// only. A quorum loss runs alone: the client lanes wait for it, so that
// what it measures is its own doing.

type faultKind string

const (
	faultFollower    faultKind = "follower-kill"     // kill a follower, restart it
	faultLeader      faultKind = "leader-kill"       // kill the leader, wait for a new one, restart it
	faultQuorum      faultKind = "quorum-loss"       // kill two members for 2-3 session timeouts
	faultPartition   faultKind = "partition-member"  // cut a member off from the others, its clients on
	faultSlow        faultKind = "slow-server"       // delay a member's traffic past a third of the session timeout
	faultDrop        faultKind = "drop-connections"  // close a client's connections
	faultBlackHole   faultKind = "black-hole"        // partition a client past its session timeout
	faultLoseCreate  faultKind = "lose-create-reply" // the server creates, the client never hears
	faultLoseDelete  faultKind = "lose-delete-reply" // the server deletes, the client never hears
	faultCloseClient faultKind = "close-go-client"   // close a Go client while its handles wait; open a new one
	faultCancel      faultKind = "cancel-acquires"   // cancel a Go client's acquires under way
	faultPause       faultKind = "pause-holder"      // SIGSTOP a process holding a lock past its session, then SIGCONT
)

// faultKinds is every kind, in the summary's order.
var faultKinds = []faultKind{faultFollower, faultLeader, faultQuorum, faultPartition, faultSlow,
	faultDrop, faultBlackHole, faultLoseCreate, faultLoseDelete, faultCloseClient, faultCancel, faultPause}

// The rounds of a lane: each its kinds in an order the seed shuffles. The
// faults that end a session (a black hole, a pause) or the quorum block
// every lock the cut-off clients hold or wait for, until the session
// expires; so they come less often than the quick ones, which come twice a
// round: a client lane has a black hole in one round, a pause in the next;
// the server lane loses the quorum in its first round and then at most
// every chaosQuorumEvery of its plan.
var (
	serverRound = []faultKind{faultFollower, faultLeader, faultPartition, faultSlow}
	clientRound = []faultKind{faultDrop, faultDrop, faultLoseCreate, faultLoseCreate,
		faultLoseDelete, faultLoseDelete, faultCloseClient, faultCancel, faultCancel}
)

const chaosQuorumEvery = 2 * time.Minute

// roundKinds returns the kinds of round i of lane l (li is its index),
// sinceQuorum how much of the lane's plan has passed since its last quorum
// loss (or -1 for none yet).
func roundKinds(l *lane, li, i int, sinceQuorum time.Duration) []faultKind {
	kinds := slices.Clone(l.kinds)
	if l.name == "server" {
		if sinceQuorum < 0 || sinceQuorum >= chaosQuorumEvery {
			kinds = append(kinds, faultQuorum)
		}
		return kinds
	}
	if (i+li)%2 == 0 {
		return append(kinds, faultBlackHole)
	}
	return append(kinds, faultPause)
}

// lane is one sequence of faults; a client lane's faults go to its clients.
type lane struct {
	name    string
	kinds   []faultKind
	clients []int // indexes into the run's clients; none for the server lane
	faults  []fault
}

// fault is one planned fault.
type fault struct {
	kind faultKind
	gap  time.Duration // the pause before it
	// target is a client (an index into the run's clients) or, for the
	// server lane, a number that picks the member.
	target int
	// length: how long a killed member stays down, how long the quorum is
	// lost, a member partitioned or slowed, or how long past the session
	// timeout a black hole lasts.
	length time.Duration
	// delay: a slow server's delay.
	delay time.Duration
}

// eligible reports whether a fault of kind can go to the client named name:
// closing a client and cancelling its acquires need a Go client in the
// test, a pause a process of its own.
func eligible(kind faultKind, name string) bool {
	switch kind {
	case faultCloseClient, faultCancel:
		return strings.HasPrefix(name, "g")
	case faultPause:
		return !strings.HasPrefix(name, "g")
	}
	return true
}

func (f fault) describe(names []string) string {
	s := fmt.Sprintf("after %v: %s", f.gap, f.kind)
	switch f.kind {
	case faultFollower:
		s += fmt.Sprintf(" (follower %d), down %v", f.target%2+1, f.length)
	case faultLeader:
		s += fmt.Sprintf(", down %v", f.length)
	case faultQuorum:
		s += fmt.Sprintf(" (member %d survives), for %v", f.target%3+1, f.length)
	case faultPartition:
		s += fmt.Sprintf(" (pick %d), for %v", f.target, f.length)
	case faultSlow:
		s += fmt.Sprintf(" (pick %d), by %v for %v", f.target, f.delay, f.length)
	case faultBlackHole:
		s += fmt.Sprintf(" %s for the session timeout + %v", names[f.target], f.length)
	default:
		s += " " + names[f.target]
	}
	return s
}

// estimate is how long the fault is planned to take, gap included: a lane
// is as long as the duration asked for, by these estimates.
func (f fault) estimate() time.Duration {
	d := f.gap
	switch f.kind { // as measured in 10-minute runs with -race
	case faultFollower:
		d += f.length + 4500*time.Millisecond // holders inside, restart, quorum
	case faultLeader:
		d += f.length + 4*time.Second // holders inside, election, restart, quorum
	case faultQuorum:
		d += f.length + 8*time.Second // restart, quorum, expiry and progress checks
	case faultPartition:
		d += f.length + 3*time.Second // holders inside, rejoin
	case faultSlow:
		d += f.length + time.Second // holders inside, reconnect
	case faultBlackHole:
		d += chaosSessionTimeout + f.length + time.Second // holders inside, reconnect
	case faultPause:
		d += chaosSessionTimeout + 3*time.Second // a writer inside, take-over, stale write, reconnect
	case faultLoseCreate:
		d += 300 * time.Millisecond
	default:
		d += 100 * time.Millisecond
	}
	return d
}

// chaosLanes returns the lanes for the clients named: the server lane, then
// one lane per client number (g1, p1 and j1 make lane 1).
func chaosLanes(names []string) []*lane {
	lanes := []*lane{{name: "server", kinds: serverRound}}
	byNumber := map[string]*lane{}
	for i, n := range names {
		num := familyOf(n)
		l, ok := byNumber[num]
		if !ok {
			l = &lane{name: "clients-" + num, kinds: clientRound}
			byNumber[num] = l
			lanes = append(lanes, l)
		}
		l.clients = append(l.clients, i)
	}
	return lanes
}

// chaosSchedule plans each lane's faults for a seed and a duration: rounds
// (see roundKinds) in an order drawn from the seed, with pauses, targets
// and lengths drawn from it too, until the estimates fill the duration, but
// whole first rounds (the server lane's first, a client lane's first two),
// so that every kind comes however short the run. Kinds no client of a lane
// can take are left out.
func chaosSchedule(seed int64, d time.Duration, names []string) []*lane {
	lanes := chaosLanes(names)
	for li, l := range lanes {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73+uint64(li)))
		var planned time.Duration
		lastQuorum := time.Duration(-1)
		minRounds := 2
		if l.name == "server" {
			minRounds = 1
		}
		for round := 0; planned < d || round < minRounds; round++ {
			since := time.Duration(-1)
			if lastQuorum >= 0 {
				since = planned - lastQuorum
			}
			kinds := roundKinds(l, li, round, since)
			rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
			for _, k := range kinds {
				if planned >= d && round >= minRounds {
					break
				}
				f, ok := planFault(rng, k, l, names)
				if !ok {
					continue
				}
				if k == faultQuorum {
					lastQuorum = planned
				}
				planned += f.estimate()
				l.faults = append(l.faults, f)
			}
		}
	}
	return lanes
}

// planFault draws one fault of kind k for lane l.
func planFault(rng *rand.Rand, k faultKind, l *lane, names []string) (fault, bool) {
	ms := func(lo, hi int64) time.Duration {
		return time.Duration(lo+rng.Int64N(hi-lo)) * time.Millisecond
	}
	f := fault{kind: k, gap: ms(100, 1000)}
	T := chaosSessionTimeout.Milliseconds()
	switch k {
	case faultFollower, faultLeader:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(2)
		f.length = ms(500, 3000)
	case faultQuorum:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(3)
		f.length = ms(2*T, 3*T)
	case faultPartition:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(6)
		f.length = ms(1000, 4000)
	case faultSlow:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(6)
		f.delay = ms(7*T/10, 9*T/10) // a round trip of two delays: past the clients' read timeouts (2/3 of it)
		f.length = ms(T, 3*T/2)
	default:
		var ok []int
		for _, c := range l.clients {
			if eligible(k, names[c]) {
				ok = append(ok, c)
			}
		}
		if len(ok) == 0 {
			return f, false
		}
		f.target = ok[rng.IntN(len(ok))]
		if k == faultBlackHole {
			f.length = ms(300, 1500)
		}
	}
	return f, true
}

// A seed and a duration make one schedule; every kind comes in each lane's
// first rounds (a 40s run has them all), each fault goes to a client of its
// lane that can take it, and the quorum is lost at most every
// chaosQuorumEvery of a lane's plan.
func TestChaosScheduleReplays(t *testing.T) {
	names := []string{"g1", "g2", "p1", "p2", "j1", "j2"}
	a := chaosSchedule(42, 40*time.Second, names)
	b := chaosSchedule(42, 40*time.Second, names)
	c := chaosSchedule(43, 40*time.Second, names)
	if len(a) != 3 || a[0].name != "server" || !slices.Equal(a[1].clients, []int{0, 2, 4}) || !slices.Equal(a[2].clients, []int{1, 3, 5}) {
		t.Fatalf("lanes: %+v", a)
	}
	same := true
	for i := range a {
		if !slices.Equal(a[i].faults, b[i].faults) {
			t.Fatalf("lane %s: the same seed made two schedules", a[i].name)
		}
		same = same && slices.Equal(a[i].faults, c[i].faults)
		var planned time.Duration
		for _, f := range a[i].faults {
			planned += f.estimate()
			if a[i].name != "server" && (!slices.Contains(a[i].clients, f.target) || !eligible(f.kind, names[f.target])) {
				t.Fatalf("lane %s: %s", a[i].name, f.describe(names))
			}
		}
		if planned < 40*time.Second {
			t.Fatalf("lane %s: %d faults planned for %v", a[i].name, len(a[i].faults), planned)
		}
	}
	if same {
		t.Fatal("two seeds made one schedule")
	}
	for seed := int64(0); seed < 100; seed++ {
		kinds := map[faultKind]bool{}
		for _, l := range chaosSchedule(seed, 40*time.Second, names) {
			for _, f := range l.faults {
				kinds[f.kind] = true
			}
		}
		if len(kinds) != len(faultKinds) {
			t.Fatalf("seed %d: a 40s schedule has the kinds %v, want all %d", seed, kinds, len(faultKinds))
		}
	}
	long := chaosSchedule(42, 10*time.Minute, names)
	var planned, last time.Duration
	quorums := 0
	for _, f := range long[0].faults {
		if f.kind == faultQuorum {
			if quorums > 0 && planned-last < chaosQuorumEvery {
				t.Fatalf("quorum lost again %v after the last time", planned-last)
			}
			quorums++
			last = planned
		}
		planned += f.estimate()
	}
	if quorums < 3 {
		t.Fatalf("%d quorum losses in 10 minutes", quorums)
	}
}
