package compat_test

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/compat_test/chaoscontender"
	"github.com/gocurator/curator/internal/netpart"
	"github.com/gocurator/curator/internal/testutil"
)

// The partition suite (docs/guarantees.md, "The partition suite"): every
// ZooKeeper member and every client process in a network namespace of its
// own (internal/netpart), cut apart the way networks fail, with the chaos
// suite's contenders, referee and checks. This file holds the test, its
// settings and its summary; partition_setup_test.go the net, the ensemble
// and the clients; partition_schedule_test.go the nemesis's plan,
// partition_faults_test.go the cuts, and partition_measure_test.go what is
// measured of each.

var (
	partitionsSeedFlag = flag.Int64("partitions.seed", 0,
		"seed of TestPartitions's schedule (0: from the clock); the same seed, duration, lag and members replay the same cuts")
	partitionsDurationFlag = flag.Duration("partitions.duration", partitionsDefaultDuration, "how long TestPartitions cuts the network")
	partitionsLagFlag      = flag.String("partitions.lag", "below",
		"the side of the follower-lag assumption TestPartitions runs on: below (syncLimit × tickTime under T/20) or above (twice T)")
	partitionsMembersFlag = flag.Int("partitions.members", 3, "ensemble members of TestPartitions: 3 or 5")
)

const (
	// partitionsDefaultDuration is go test's (and so make test's) short
	// run: a few kinds of cuts; make partitions runs the full schedule.
	partitionsDefaultDuration = 50 * time.Second
	// partitionsSession is the clients' session timeout, T.
	partitionsSession = 6 * time.Second
	partitionsTick    = 100 * time.Millisecond
	partitionsInit    = 3 * time.Second // initLimit, as the chaos suite's
	// partitionsPrefix and partitionsSubnet name the net (netpart.Config).
	partitionsPrefix = "gcpart-"
)

var partitionsSubnet = netip.MustParsePrefix("198.19.201.0/24")

// partitionSettings is one configuration of the ensemble, on one side of
// the assumption docs/guarantees.md makes: a follower is at most
// syncLimit × tickTime behind the leader, below T/20.
type partitionSettings struct {
	side      string // "below" or "above"
	members   int
	syncLimit int
}

func partitionSettingsOf(side string, members int) (partitionSettings, error) {
	s := partitionSettings{side: side, members: members}
	switch side {
	case "below":
		s.syncLimit = 2 // 200 ms: T/30
	case "above":
		s.syncLimit = int(2 * partitionsSession / partitionsTick) // 12 s: 2T
	default:
		return s, fmt.Errorf("-partitions.lag=%q: below or above", side)
	}
	if members != 3 && members != 5 {
		return s, fmt.Errorf("-partitions.members=%d: 3 or 5", members)
	}
	return s, nil
}

// lag is how long a member cut off from the leader goes on serving its
// clients: syncLimit × tickTime.
func (s partitionSettings) lag() time.Duration { return time.Duration(s.syncLimit) * partitionsTick }

// memberNode names member i (an index into Members) in the net.
func memberNode(i int) string { return "m" + strconv.Itoa(i+1) }

// partitionClients are the clients: Go contender processes (gopeer) under
// the Standard policy (pa1, pc1) and the Session policy (pb1), and Java
// Curator peers (ja1, jb1, jc1); all of family 1, so that they contend for
// the same locks across the cuts. Five members get all six.
func partitionClients(members int) []string {
	if members == 5 {
		return []string{"pa1", "ja1", "pb1", "jb1", "pc1", "jc1"}
	}
	return []string{"pa1", "ja1", "pb1", "jb1"}
}

// partitionRoles are what each client's contenders contend for: a mutex
// (two contenders), a read-write lock (a writer and a reader) and a leader
// latch, as the chaos suite runs them.
var partitionRoles = slices.DeleteFunc(slices.Clone(chaosRoles), func(ro chaosRole) bool {
	return !slices.Contains([]chaoscontender.Role{chaoscontender.Mutex, chaoscontender.Write, chaoscontender.Read,
		chaoscontender.Latch}, ro.role)
})

// partitionRun is one run of the partition suite: a chaos run (its
// clients, referee and checks) on a net of namespaces.
type partitionRun struct {
	*chaosRun
	set     partitionSettings
	net     *netpart.Net
	referee string // the referee's URL on the net
	bin     string // the Go contender process's program
	logs    string // the clients' logs
	cuts    []*pcut

	// What the cuts measured (partition_measure_test.go), beside the
	// chaosRun's lateNotices, curatorLate and worst (the worst notice by
	// policy, here from the cut).
	windows []holderWindow
}

func TestPartitions(t *testing.T) {
	if testing.Short() {
		t.Skip("the partition suite runs for a minute or more")
	}
	set, err := partitionSettingsOf(*partitionsLagFlag, *partitionsMembersFlag)
	testutil.Must(t, err)
	if err := netpart.Available(); err != nil {
		t.Skipf("partitions: skipped: %v", err)
	}
	testutil.CheckLeaks(t)
	seed, duration := *partitionsSeedFlag, *partitionsDurationFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	faults := partitionSchedule(seed, duration, set.lag(), partitionsSession)
	var plan strings.Builder
	for i, f := range faults {
		fmt.Fprintf(&plan, "\n  %3d %s", i+1, f.describe())
	}
	t.Logf("partitions: seed %d, %v of cuts, lag %s (syncLimit %d × tickTime %v = %v, T = %v), %d members "+
		"(replay: -partitions.seed=%d -partitions.duration=%v -partitions.lag=%s -partitions.members=%d); schedule:%s",
		seed, duration, set.side, set.syncLimit, partitionsTick, set.lag(), partitionsSession, set.members,
		seed, duration, set.side, set.members, plan.String())

	r := startPartitions(t, set, partitionClients(set.members))
	for _, name := range partitionClients(set.members) {
		c := r.startClient(name, r.ens.ConnectString())
		bound := set.lag() + partitionsSession + 3*time.Second
		c.startContenders(r.referee, partitionRoles, bound, bound)
	}
	start := time.Now()
	for i, f := range faults {
		if over := time.Since(start); over > 2*duration+2*time.Minute {
			t.Errorf("partitions: the schedule ran %v, over twice its %v; stopped before fault %d of %d", over, duration, i+1, len(faults))
			break
		}
		pause(t.Context(), f.gap)
		at := time.Since(start)
		note, err := r.inject(t.Context(), f)
		if err != nil {
			t.Errorf("partitions: fault %d (%s): %v", i+1, f.describe(), err)
			break
		}
		t.Logf("partitions: +%v %d/%d %s: %s", at.Round(time.Millisecond), i+1, len(faults), f.kind, note)
	}
	elapsed := time.Since(start)

	// Heal, stop every contender, and look for orphans while every session
	// is still open (closing one would delete its nodes and hide them).
	if err := r.net.Heal(); err != nil {
		t.Errorf("partitions: %v", err)
	}
	r.stopAll()
	orphans, curatorOrphans := r.orphans()
	r.eventBalances()
	if err := testutil.DeleteTree(r.checker, chaosBase); err != nil {
		t.Errorf("cleaning up %s: %v", chaosBase, err)
	}
	r.judgePartitions(seed, elapsed, orphans, curatorOrphans)
}

// judgePartitions checks the run and logs its summary line. On both sides
// of the assumption: no fenced resource accepted a stale write or saw a
// token twice, no node is left, every Go client cut off from every quorum
// told its holders within the bound, every contender held. Below it, no
// two holders (or leaders) overlapped, and no holder learned of its loss
// after another client held its lock; above it, that window must appear,
// and fencing is what refuses its stale writes.
func (r *partitionRun) judgePartitions(seed int64, elapsed time.Duration, orphans, curatorOrphans []string) {
	t := r.t
	below := r.set.side == "below"
	locks, twoLeaders, overlaps := r.ref.judge()
	fenceViolations, staleAccepted, accepted, refused := r.ref.audit()
	var reused, beforeNotice []string // a token used twice; a write refused from a holder never told
	for _, v := range fenceViolations {
		if strings.Contains(v, "never told") {
			beforeNotice = append(beforeNotice, v)
		} else {
			reused = append(reused, v)
		}
	}
	byKind := map[pfaultKind]int{}
	var worstRecovery time.Duration
	for _, c := range r.cuts {
		byKind[c.kind]++
		worstRecovery = max(worstRecovery, c.recovery)
	}
	var kinds []string
	for _, k := range pfaultKinds {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, byKind[k]))
	}
	open, worst, margin := windowStats(r.windows)
	var opened []string
	for _, w := range open {
		opened = append(opened, fmt.Sprintf("%s: %v", w.kind, w))
	}
	test, procs := r.counts["test"], r.counts["processes"]
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	summary := fmt.Sprintf("partitions: seed=%d side=%s lag=%v session=%v members=%d duration=%v acquisitions=%d leader-terms=%d "+
		"faults=%d %s holders-cut=%d open-windows=%d worst-window=%s least-margin=%s overlaps=%d two-leader-moments=%d violations=%d "+
		"stale-writes-refused=%d stale-writes-accepted=%d refused-before-notice=%d orphans=%d curator-orphans=%d "+
		"worst-notice=%v worst-notice-session=%v curator-worst-notice=%v late-notices=%d curator-late-notices=%d worst-recovery=%v "+
		"go-events-granted=%d go-events-unbalanced=%d",
		seed, r.set.side, r.set.lag(), partitionsSession, r.set.members, elapsed.Round(time.Second),
		test["acquisitions"]+procs["acquisitions"], test["terms"]+procs["terms"], len(r.cuts), strings.Join(kinds, " "),
		len(r.windows), len(open), worst, margin, len(locks), len(twoLeaders), len(reused), refused, len(staleAccepted), len(beforeNotice),
		len(orphans), len(curatorOrphans), ms(r.worst["standard"]), ms(r.worst["session"]), ms(r.worst["curator"]),
		len(r.lateNotices), len(r.curatorLate), ms(worstRecovery), r.granted, len(r.unbalanced))
	t.Logf("partitions: contenders' counts: %v; %d accepted writes; %d guard overlaps in all", procs, accepted, overlaps)
	t.Log(summary)
	if testing.Verbose() {
		fmt.Fprintln(os.Stderr, summary)
	}

	report := reporter(t, "partitions", seed)
	side := "below the assumption: a failure"
	if !below {
		side = "above the assumption: expected"
	}
	report(below, "overlaps of holders, "+side, locks)
	report(below, "moments of two leaders, "+side, twoLeaders)
	report(below, "holders told after another client held their lock, "+side, opened)
	report(below, "stale writes refused from holders not yet told, "+side, beforeNotice)
	report(true, "tokens used twice", reused)
	report(true, "stale writes accepted", staleAccepted)
	report(true, "orphan nodes", orphans)
	report(false, "nodes Curator left behind (its own; see docs/mixed-fleets.md)", curatorOrphans)
	report(true, fmt.Sprintf("late loss notices of Go clients (bound: %v after the cut)", r.noticeBound()), r.lateNotices)
	report(false, "late loss notices of Java Curator clients (Curator's)", r.curatorLate)
	report(true, "Go clients whose events do not add up (gauges not back at zero, an acquisition not ended once)", r.unbalanced)
	if !below && len(locks)+len(twoLeaders)+len(opened) == 0 {
		t.Errorf("partitions: above the assumption (lag %v, T %v), no holder was told after another client held its lock, and no "+
			"two held at once: the run did not show the window it is to show (%d holdings measured at %d cuts)",
			r.set.lag(), partitionsSession, len(r.windows), len(r.cuts))
	}
	if n := procs["guard-errors"]; n > 0 {
		t.Errorf("%d holdings could not tell the referee they entered or left (see the clients' logs): the overlap check was blind to them", n)
	}
	if _, idle := r.ref.progress(r.labels(), time.Time{}); len(idle) > 0 {
		t.Errorf("contenders %v never held: every contender must take part", idle)
	}
}
