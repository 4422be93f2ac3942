package compat_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// The chaos suite (issues #7, #16, #21 and #22; docs/guarantees.md, "The
// chaos suite"): gocurator and Java Curator contenders take a mutex, a
// read-write lock and a semaphore, and stand in two elections, on a 3-member
// ensemble while a seeded schedule of faults runs in lanes, each client
// behind fault proxies of its own, the members behind proxies on their
// quorum and election ports. Files: chaos_test.go (the test, its settings
// and its summary), chaos_clients_test.go (the clients and their
// contenders), chaos_referee_test.go (what every holding reports to, and the
// checks of it), chaos_schedule_test.go (the fault schedule and its lanes),
// chaos_faults_test.go (the faults to a client, the paused holder),
// chaos_server_faults_test.go (the faults to the ensemble) and
// chaos_notice_test.go (the loss-notice check). The contenders are
// compat_test/chaoscontender, run in the test and in compat_test/gopeer, and
// internal/curatorpeer/CuratorPeer.java's chaos verb.

var (
	chaosSeedFlag = flag.Int64("chaos.seed", 0,
		"seed of TestChaos's fault schedule (0: from the clock); the same seed and duration replay the same faults")
	chaosDurationFlag = flag.Duration("chaos.duration", chaosDefaultDuration, "how long TestChaos injects faults")
)

const (
	chaosDefaultDuration = 40 * time.Second
	chaosBase            = "/chaos"
	chaosTick            = 100 * time.Millisecond
	// chaosSessionTimeout is short, so that a short run expires sessions.
	chaosSessionTimeout = 3 * time.Second
	// chaosInitLimit is the ensemble's initLimit: ZooKeeper can take that
	// long to settle an election (a peer LEADING that no one follows waits
	// initLimit before it looks again); the default 10s would stall every
	// contender that long.
	chaosInitLimit = 3 * time.Second
	// chaosNoticeBound: a cut-off holder is told within it of its client's
	// last contact (G3).
	chaosNoticeBound = chaosSessionTimeout + time.Second
	chaosLeases      = 3
	// chaosHold is a holder's time inside, chaosTermHold a leader's in
	// office, each over chaosWrites steps.
	chaosHold     = 2 * time.Millisecond
	chaosTermHold = 20 * time.Millisecond
	chaosWrites   = 2
	// chaosAcquire bounds a contender's wait for its lock or term.
	chaosAcquire = 4 * time.Second
	// chaosLingerMax bounds how long a holder holds on, waiting to be told,
	// while a fault wants it to.
	chaosLingerMax = 10 * time.Second
	// chaosRecoveryBound: after a quorum loss, every contender holds its
	// lock again within it of the quorum's return.
	chaosRecoveryBound = 30 * time.Second
)

// chaosRun is one run of the chaos suite.
type chaosRun struct {
	t       *testing.T
	ens     *zktest.Ensemble
	checker *zk.Conn // a session of the test's, for looking at the tree
	ref     *referee
	clients []*chaosClient
	// gate: client faults hold it shared, a quorum loss alone.
	gate sync.RWMutex

	mu             sync.Mutex
	counts         map[string]map[string]int64 // the contenders' reports: "test" (in-process) or "processes", then key
	injected       map[faultKind]int
	faults         map[faultKind]int
	paused         map[string]bool
	worst          map[string]time.Duration // the worst loss notice, by policy (see chaosClient.policy)
	notices        int
	lateNotices    []string // failures: late notices of Go clients, and clients never told
	curatorLate    []string // of Java Curator clients: Curator's, reported apart
	rodeOut        int      // clients with nothing to be told (see checkNotice)
	notCutOff      int      // clients that had left the cut-off member by the cut
	unrefused      int      // pauses without a stale write refused
	quorumFindings []string
	nodeExpiry     time.Duration // the worst after a quorum loss
	recovery       time.Duration // the worst after a quorum loss
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite runs for a minute or more")
	}
	testutil.CheckLeaks(t)
	seed, duration := *chaosSeedFlag, *chaosDurationFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	names := []string{"g1", "g2", "p1", "p2", "j1", "j2"}
	lanes := chaosSchedule(seed, duration, names)
	var plan strings.Builder
	for _, l := range lanes {
		fmt.Fprintf(&plan, "\n lane %s:", l.name)
		for i, f := range l.faults {
			fmt.Fprintf(&plan, "\n  %3d %s", i+1, f.describe(names))
		}
	}
	t.Logf("chaos: seed %d, %v of faults (replay: -chaos.seed=%d -chaos.duration=%v); schedule:%s",
		seed, duration, seed, duration, plan.String())

	r := startChaos(t, names)
	ctx, stopContenders := context.WithCancel(context.Background())
	defer stopContenders()
	var contenders sync.WaitGroup
	for _, c := range r.clients {
		c.startContenders(ctx, &contenders, r.ref.url(), r.reporter(c))
	}
	start := time.Now()
	var lanesDone sync.WaitGroup
	for _, l := range lanes {
		lanesDone.Add(1)
		go func() {
			defer lanesDone.Done()
			r.runLane(ctx, l, duration, start)
		}()
	}
	lanesDone.Wait()
	elapsed := time.Since(start)

	// Heal, stop every contender, and look for orphans while every session
	// is still open (closing one would delete its nodes and hide them).
	r.heal()
	stopContenders()
	r.stopAll(&contenders)
	orphans, curatorOrphans := r.orphans()
	r.closeClients()
	if err := testutil.DeleteTree(r.checker, chaosBase); err != nil {
		t.Errorf("cleaning up %s: %v", chaosBase, err)
	}
	r.judge(seed, elapsed, orphans, curatorOrphans)
}

// startChaos starts the ensemble, the referee and every client.
func startChaos(t *testing.T, names []string) *chaosRun {
	ens := zktest.NewEnsemble(t, 3, zktest.WithTickTime(chaosTick), zktest.WithPeerLinks(),
		zktest.WithConfig("initLimit", strconv.Itoa(int(chaosInitLimit/chaosTick))),
		zktest.WithContainerCheckInterval(500*time.Millisecond))
	r := &chaosRun{t: t, ens: ens, checker: testutil.Connect(t, ens.ConnectString()), ref: newReferee(t),
		counts: map[string]map[string]int64{"test": {}, "processes": {}}, injected: map[faultKind]int{},
		faults: map[faultKind]int{}, paused: map[string]bool{}, worst: map[string]time.Duration{}}
	logs := t.TempDir()
	keepOnFailure(t, filepath.Dir(logs)) // the Java peers' logs are in directories of their own
	bin := buildGoPeer(t, logs)
	t.Cleanup(func() { os.Remove(bin) }) // after the processes have stopped, before keepOnFailure
	for _, name := range names {
		r.clients = append(r.clients, startClient(t, ens, name, bin, logs))
	}
	return r
}

// reporter returns what adds up the reports of c's contenders (an
// election candidate's acquisitions are its terms).
func (r *chaosRun) reporter(c *chaosClient) func(label, reply string) {
	group := "processes"
	if c.goc != nil {
		group = "test"
	}
	return func(label, reply string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, kv := range strings.Fields(reply) {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				r.t.Errorf("chaos: %s's report %q", label, reply)
				return
			}
			if k == "acquisitions" && (strings.Contains(label, "-latch-") || strings.Contains(label, "-selector-")) {
				k = "terms"
			}
			r.counts[group][k] += n
		}
	}
}

// labels returns every contender's label.
func (r *chaosRun) labels() []string {
	var out []string
	for _, c := range r.clients {
		out = append(out, c.labels...)
	}
	return out
}

// heal restarts any member that is down, restores every proxy and waits
// for the quorum.
func (r *chaosRun) heal() {
	for _, m := range r.ens.Members() {
		if !m.Running() {
			if err := m.Restart(); err != nil {
				r.t.Errorf("chaos: restart member %d: %v", m.ID(), err)
			}
		}
	}
	for _, c := range r.clients {
		for _, p := range c.prox {
			p.Restore()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.ens.WaitForQuorum(ctx); err != nil {
		r.t.Errorf("chaos: after the faults: %v", err)
	}
}

// stopAll stops the processes' contenders, waits for the Go contenders
// (whose context has ended), then waits until every client is connected.
func (r *chaosRun) stopAll(goContenders *sync.WaitGroup) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range r.clients {
		if c.proc != nil {
			if err := c.stopContenders(ctx, r.reporter(c)); err != nil {
				r.t.Errorf("chaos: stopping %s's contenders: %v", c.name, err)
			}
		}
	}
	stopped := make(chan struct{})
	go func() {
		goContenders.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
		r.t.Fatalf("chaos: the Go contenders did not stop within 2 minutes (%s)", dumpStacks("stop"))
	}
	for _, c := range r.clients {
		if err := c.waitConnected(ctx, time.Time{}); err != nil {
			r.t.Errorf("chaos: %s is not connected after the faults: %v", c.name, err)
		}
	}
}

// orphans waits (up to 30s: guaranteed deletes finish in the background)
// until no ephemeral node is left under the lock paths, and otherwise
// returns what is left, with the client owning each: the nodes of Go
// clients' sessions and of no client's, which are failures; and apart, those
// of Java peers' sessions, which only Curator can have left (Curator 5.4
// loses track of a lock node whose create it retried across a lost
// connection, and its acquire fails with "Path cannot be null":
// docs/mixed-fleets.md).
func (r *chaosRun) orphans() (ours, curators []string) {
	ctx := context.Background()
	owners := map[int64]*chaosClient{}
	for _, c := range r.clients {
		sid, err := c.sessionID(ctx)
		if err != nil {
			r.t.Errorf("chaos: %v", err)
		}
		owners[sid] = c
	}
	left, err := r.ephemeralsLeft(ctx, func(int64) bool { return true }, time.Now().Add(30*time.Second))
	if err != nil {
		r.t.Errorf("chaos: listing %s: %v", chaosBase, err)
	}
	for _, n := range left {
		c, who := owners[n.owner], "no open client"
		if c != nil {
			who = c.name
		}
		line := fmt.Sprintf("%s (session 0x%x: %s)", n.path, n.owner, who)
		if c != nil && c.curator() {
			curators = append(curators, line)
		} else {
			ours = append(ours, line)
		}
	}
	return ours, curators
}

// ephemeralsLeft polls the ephemeral nodes (lock, lease and latch nodes)
// under the chaos tree until none is left of a session that of counts, or
// until deadline, and returns those left then.
func (r *chaosRun) ephemeralsLeft(ctx context.Context, of func(session int64) bool, deadline time.Time) ([]ephemeralNode, error) {
	for {
		nodes, err := ephemeralsUnder(r.checker, chaosBase)
		left := slices.DeleteFunc(nodes, func(n ephemeralNode) bool { return !of(n.owner) })
		if err == nil && len(left) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return left, err
		}
		pause(ctx, 50*time.Millisecond) // polling the tree
	}
}

type ephemeralNode struct {
	path  string
	owner int64
}

// ephemeralsUnder lists the ephemeral nodes (lock and lease nodes) under
// path, after a sync so that the server answering is up to date.
func ephemeralsUnder(conn *zk.Conn, path string) ([]ephemeralNode, error) {
	if _, err := conn.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	var walk func(p string) ([]ephemeralNode, error)
	walk = func(p string) ([]ephemeralNode, error) {
		ok, st, err := conn.Exists(p)
		if err != nil || !ok {
			return nil, err
		}
		if st.EphemeralOwner != 0 {
			return []ephemeralNode{{p, st.EphemeralOwner}}, nil
		}
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var out []ephemeralNode
		for _, k := range kids {
			n, err := walk(p + "/" + k)
			if err != nil {
				return nil, err
			}
			out = append(out, n...)
		}
		return out, nil
	}
	return walk(path)
}

// closeClients closes every client.
func (r *chaosRun) closeClients() {
	for _, c := range r.clients {
		if c.goc != nil {
			c.goc.Close()
		} else if _, err := c.proc.send("-", "close-client", c.name).Wait(testutil.Context(r.t)); err != nil {
			r.t.Errorf("chaos: %v", err)
		}
	}
}

// judge checks the run and logs its summary line.
func (r *chaosRun) judge(seed int64, elapsed time.Duration, orphans, curatorOrphans []string) {
	t := r.t
	locks, twoLeaders, overlaps := r.ref.judge()
	fenceViolations, staleAccepted, accepted, refused := r.ref.audit()
	violations := append(locks, fenceViolations...)
	nFaults, byKind, missing := r.faultSummary()
	r.mu.Lock()
	defer r.mu.Unlock()
	test, procs := r.counts["test"], r.counts["processes"]
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	summary := fmt.Sprintf("chaos: seed=%d duration=%v acquisitions=%d leader-terms=%d faults=%d %s violations=%d "+
		"two-leader-moments=%d orphans=%d curator-orphans=%d stale-writes-refused=%d stale-writes-accepted=%d worst-loss-notice=%v "+
		"worst-loss-notice-session=%v curator-worst-loss-notice=%v curator-late-notices=%d quorum-node-expiry=%v quorum-recovery=%v",
		seed, elapsed.Round(time.Second), test["acquisitions"]+procs["acquisitions"], test["terms"]+procs["terms"], nFaults, byKind,
		len(violations)+len(r.quorumFindings), len(twoLeaders), len(orphans), len(curatorOrphans), refused, len(staleAccepted),
		ms(r.worst["standard"]), ms(r.worst["session"]), ms(r.worst["curator"]), len(r.curatorLate), ms(r.nodeExpiry), ms(r.recovery))
	t.Logf("chaos: contenders in the test: %v; in processes: %v; %d accepted writes; %d guard overlaps, all but %d excused; "+
		"loss notices: %d (%d clients had nothing to be told, %d had left the member before the cut); pauses: %d, %d without a stale "+
		"write refused (a holder can be told, or interrupted, first)",
		test, procs, accepted, overlaps, len(locks)+len(twoLeaders), r.notices, r.rodeOut, r.notCutOff, r.faults[faultPause], r.unrefused)
	t.Log(summary)
	if testing.Verbose() {
		fmt.Fprintln(os.Stderr, summary)
	}

	report := func(what string, list []string) {
		if len(list) > 0 {
			t.Errorf("%d %s (seed %d):\n%s", len(list), what, seed, strings.Join(list[:min(len(list), 30)], "\n"))
		}
	}
	report("violations", violations)
	report("moments of two leaders", twoLeaders)
	report("quorum-loss findings", r.quorumFindings)
	report("orphan nodes", orphans)
	if len(curatorOrphans) > 0 {
		t.Logf("chaos: %d nodes Curator left behind (its own; see docs/mixed-fleets.md):\n%s",
			len(curatorOrphans), strings.Join(curatorOrphans, "\n"))
	}
	report(fmt.Sprintf("late loss notices of Go clients (bound: %v after the last contact)", chaosNoticeBound), r.lateNotices)
	if len(r.curatorLate) > 0 {
		t.Logf("chaos: %d late loss notices of Java Curator clients (Curator's; see docs/guarantees.md):\n%s",
			len(r.curatorLate), strings.Join(r.curatorLate, "\n"))
	}
	report("stale writes accepted", staleAccepted)
	report("fault kinds that did not happen as often as injected", missing)
	if n := r.faults[faultPause]; n > 0 && refused == 0 {
		t.Errorf("%d holders paused, and the fenced resources refused no write: the check did not fire", n)
	}
	if n := test["guard-errors"] + procs["guard-errors"]; n > 0 {
		t.Errorf("%d holdings could not tell the referee they entered or left (see the clients' logs): the overlap check was blind to them", n)
	}
	if _, idle := r.ref.progress(r.labels(), time.Time{}); len(idle) > 0 {
		t.Errorf("contenders %v never held: every contender must take part", idle)
	}
}

// dumpStacks writes the stacks of the test's goroutines (its Go clients'
// among them) to a file that outlives the test, and says where.
func dumpStacks(why string) string {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	f, err := os.CreateTemp("", "chaos-"+why+"-stacks-*.txt")
	if err == nil {
		_, err = f.Write(buf)
		f.Close()
	}
	if err != nil {
		return "no stack dump: " + err.Error()
	}
	return "the test's goroutines are in " + f.Name()
}

// keepOnFailure copies dir (the test's temporary files: every client's log)
// somewhere that outlives the test if it fails, and says where. Registered before the processes start,
// it runs after they have stopped.
func keepOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dst, err := os.MkdirTemp("", "chaos-logs-")
		if err == nil {
			err = os.CopyFS(dst, os.DirFS(dir))
		}
		if err != nil {
			t.Logf("chaos: keeping the run's logs: %v", err)
			return
		}
		t.Logf("chaos: the run's logs are kept in %s", dst)
	})
}
