package compat_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file holds the chaos suite's fault schedule: lanes that run at once,
// the server lane and one lane per family of clients, each a seeded
// sequence of rounds of faults.

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

// The rounds of a lane, each its kinds in an order the seed shuffles. The
// faults that end sessions come less often: a client lane has a black hole
// in one round, a pause in the next; the server lane loses the quorum in its
// first round and then at most every chaosQuorumEvery of its plan.
var (
	serverRound = []faultKind{faultFollower, faultLeader, faultPartition, faultSlow}
	clientRound = []faultKind{faultDrop, faultDrop, faultLoseCreate, faultLoseCreate,
		faultLoseDelete, faultLoseDelete, faultCloseClient, faultCancel, faultCancel}
)

const chaosQuorumEvery = 2 * time.Minute

// lane is one sequence of faults; a client lane's faults go to its clients.
type lane struct {
	name    string
	clients []int // indexes into chaosNames; none for the server lane
	faults  []fault
}

// fault is one planned fault.
type fault struct {
	kind faultKind
	gap  time.Duration // the pause before it
	// target is a client (an index into chaosNames) or, for the server
	// lane, a number that picks the member.
	target int
	// length: how long a killed member stays down, the quorum is lost, a
	// member is partitioned or slowed, or a client black-holed.
	length time.Duration
	delay  time.Duration // a slow server's
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

func (f fault) describe() string {
	s := fmt.Sprintf("after %v: %s (pick %d)", f.gap, f.kind, f.target)
	if !slices.Contains(serverRound, f.kind) && f.kind != faultQuorum {
		s = fmt.Sprintf("after %v: %s %s", f.gap, f.kind, chaosNames[f.target])
	}
	if f.delay > 0 {
		s += fmt.Sprintf(" by %v", f.delay)
	}
	if f.length > 0 {
		s += fmt.Sprintf(" for %v", f.length)
	}
	return s
}

// overhead is how long a fault takes beyond its gap and its length (a
// pause: its session timeout), as measured in 10-minute runs with -race:
// holders inside, restarts and elections, checks, reconnects. A lane is as
// long as the duration asked for, by these estimates.
var overhead = map[faultKind]time.Duration{faultFollower: 4500 * time.Millisecond, faultLeader: 4 * time.Second,
	faultQuorum: 8 * time.Second, faultPartition: 3 * time.Second, faultSlow: time.Second, faultBlackHole: time.Second,
	faultPause: chaosSessionTimeout + 3*time.Second, faultLoseCreate: 300 * time.Millisecond}

func (f fault) estimate() time.Duration {
	return f.gap + f.length + max(overhead[f.kind], 100*time.Millisecond)
}

// chaosSchedule plans the lanes' faults for a seed and a duration: the
// server lane, then one lane per family (g1, p1 and j1 make clients-1),
// each rounds drawn from the seed until the estimates fill the duration,
// but whole first rounds (the server lane's first, a client lane's first
// two), so that every kind comes however short the run.
func chaosSchedule(seed int64, d time.Duration) []*lane {
	lanes := []*lane{{name: "server"}, {name: "clients-1"}, {name: "clients-2"}}
	for i, n := range chaosNames {
		fam, _ := strconv.Atoi(familyOf(n))
		lanes[fam].clients = append(lanes[fam].clients, i)
	}
	for li, l := range lanes {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73+uint64(li)))
		var planned time.Duration
		lastQuorum, minRounds := -chaosQuorumEvery, 2
		if li == 0 {
			minRounds = 1
		}
		for round := 0; planned < d || round < minRounds; round++ {
			kinds := slices.Clone(clientRound)
			switch {
			case li == 0:
				kinds = slices.Clone(serverRound)
				if planned-lastQuorum >= chaosQuorumEvery {
					kinds = append(kinds, faultQuorum)
				}
			case (round+li)%2 == 0:
				kinds = append(kinds, faultBlackHole)
			default:
				kinds = append(kinds, faultPause)
			}
			rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
			for _, k := range kinds {
				if planned >= d && round >= minRounds {
					break
				}
				if k == faultQuorum {
					lastQuorum = planned
				}
				f := planFault(rng, k, l.clients)
				planned += f.estimate()
				l.faults = append(l.faults, f)
			}
		}
	}
	return lanes
}

// planFault draws one fault of kind k, for one of clients that can take it
// or, if there are none (the server lane), for the ensemble.
func planFault(rng *rand.Rand, k faultKind, clients []int) fault {
	ms := func(lo, hi int64) time.Duration {
		return time.Duration(lo+rng.Int64N(hi-lo)) * time.Millisecond
	}
	T := chaosSessionTimeout.Milliseconds()
	if len(clients) > 0 {
		ok := slices.DeleteFunc(slices.Clone(clients), func(c int) bool { return !eligible(k, chaosNames[c]) })
		f := fault{kind: k, gap: ms(100, 1000), target: ok[rng.IntN(len(ok))]}
		if k == faultBlackHole {
			f.length = chaosSessionTimeout + ms(300, 1500)
		}
		return f
	}
	f := fault{kind: k, gap: ms(200, 1500), target: rng.IntN(6)}
	switch k {
	case faultFollower, faultLeader:
		f.length = ms(500, 3000)
	case faultQuorum:
		f.length = ms(2*T, 3*T)
	case faultPartition:
		f.length = ms(1000, 4000)
	case faultSlow:
		f.delay = ms(7*T/10, 9*T/10) // a round trip of two delays: past the clients' read timeouts (2/3 of it)
		f.length = ms(T, 3*T/2)
	}
	return f
}

// A seed and a duration make one schedule; every kind comes in each lane's
// first rounds (a 40s run has them all), each fault goes to a client of its
// lane that can take it, and the quorum is lost at most every
// chaosQuorumEvery of a lane's plan.
func TestChaosScheduleReplays(t *testing.T) {
	a, b, c := chaosSchedule(42, 40*time.Second), chaosSchedule(42, 40*time.Second), chaosSchedule(43, 40*time.Second)
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
			if a[i].name != "server" && (!slices.Contains(a[i].clients, f.target) || !eligible(f.kind, chaosNames[f.target])) {
				t.Fatalf("lane %s: %s", a[i].name, f.describe())
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
		for _, l := range chaosSchedule(seed, 40*time.Second) {
			for _, f := range l.faults {
				kinds[f.kind] = true
			}
		}
		if len(kinds) != len(faultKinds) {
			t.Fatalf("seed %d: a 40s schedule has the kinds %v, want all %d", seed, kinds, len(faultKinds))
		}
	}
	var planned, last time.Duration
	quorums := 0
	for _, f := range chaosSchedule(42, 10*time.Minute)[0].faults {
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
