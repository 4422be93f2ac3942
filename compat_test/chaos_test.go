package compat_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
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

// The chaos suite (docs/guarantees.md, "The chaos suite"): this file holds
// the test, its settings, its summary and its look at the tree; the other
// chaos_*_test.go files are named by their jobs. The contenders are
// compat_test/chaoscontender (in the test and in compat_test/gopeer) and
// CuratorPeer.java's chaos verb.

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
	// chaosInitLimit is the ensemble's initLimit, which an election can
	// take (the default 10s would stall every contender that long).
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
	faults         map[faultKind]int
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
	granted        int64         // acquisitions the Go clients' events told
	unbalanced     []string      // Go clients whose events did not add up (eventBalances)
}

// eventBalances closes every Go client (its contenders stopped) and asks
// what its events added up to: what a metrics backend builds on them
// (waiters, holders, leaders) must be back at zero, and every acquisition
// granted once and ended once, whatever the faults did.
func (r *chaosRun) eventBalances() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, c := range r.clients {
		if c.curator() {
			continue
		}
		reply, err := c.send("-", "events", c.name)(ctx)
		if err != nil {
			r.unbalanced = append(r.unbalanced, fmt.Sprintf("%s: %v", c.name, err))
			continue
		}
		got := map[string]int64{}
		for _, kv := range strings.Fields(reply) {
			k, v, _ := strings.Cut(kv, "=")
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				got[k] = n
			}
		}
		balanced := len(got) == len(eventsReplyKeys)
		for _, k := range eventsReplyKeys {
			n, ok := got[k]
			balanced = balanced && ok && (k == "granted" || n == 0)
		}
		// Each holding the referee saw enter was granted first: a hook
		// that heard nothing balances, but tells too few grants.
		if held := r.ref.lockHoldings(c.name); got["granted"] < int64(held) {
			balanced = false
			reply += fmt.Sprintf(" (the referee saw %d of its lock holdings enter)", held)
		}
		if !balanced {
			r.unbalanced = append(r.unbalanced, c.name+": "+reply)
		}
		r.granted += got["granted"]
	}
}

// eventsReplyKeys are the fields of the events verb's reply (chaoscontender's
// balance), every one a count, each but granted 0 when the events add up.
var eventsReplyKeys = []string{"granted", "waiters", "holders", "leaders", "unended", "ended-ungranted", "granted-twice"}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite runs for a minute or more")
	}
	testutil.CheckLeaks(t)
	seed, duration := *chaosSeedFlag, *chaosDurationFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	lanes := chaosSchedule(seed, duration)
	var plan strings.Builder
	for _, l := range lanes {
		fmt.Fprintf(&plan, "\n lane %s:", l.name)
		for i, f := range l.faults {
			fmt.Fprintf(&plan, "\n  %3d %s", i+1, f.describe())
		}
	}
	t.Logf("chaos: seed %d, %v of faults (replay: -chaos.seed=%d -chaos.duration=%v); schedule:%s",
		seed, duration, seed, duration, plan.String())

	r := startChaos(t)
	for _, c := range r.clients {
		c.startContenders(r.ref.srv.URL, chaosRoles, chaosAcquire, chaosLingerMax)
	}
	start := time.Now()
	var lanesDone sync.WaitGroup
	for _, l := range lanes {
		lanesDone.Add(1)
		go func() {
			defer lanesDone.Done()
			r.runLane(t.Context(), l, duration, start)
		}()
	}
	lanesDone.Wait()
	elapsed := time.Since(start)

	// Heal, stop every contender, and look for orphans while every session
	// is still open (closing one would delete its nodes and hide them).
	r.heal()
	r.stopAll()
	orphans, curatorOrphans := r.orphans()
	r.eventBalances()
	if err := testutil.DeleteTree(r.checker, chaosBase); err != nil {
		t.Errorf("cleaning up %s: %v", chaosBase, err)
	}
	r.judge(seed, elapsed, orphans, curatorOrphans)
}

// startChaos starts the ensemble, the referee and every client.
func startChaos(t *testing.T) *chaosRun {
	ens := zktest.NewEnsemble(t, 3, zktest.WithTickTime(chaosTick), zktest.WithPeerLinks(),
		zktest.WithConfig("initLimit", strconv.Itoa(int(chaosInitLimit/chaosTick))),
		zktest.WithContainerCheckInterval(500*time.Millisecond))
	r := &chaosRun{t: t, ens: ens, checker: testutil.Connect(t, ens.ConnectString()), ref: newReferee(t),
		counts: map[string]map[string]int64{"test": {}, "processes": {}},
		faults: map[faultKind]int{}, worst: map[string]time.Duration{}}
	logs := t.TempDir()
	keepOnFailure(t, filepath.Dir(logs)) // the Java peers' logs are in directories of their own
	// The Go contender process is built as a service would be, without the
	// race detector (the Go clients in the test's process run under it).
	bin := filepath.Join(logs, "gopeer")
	if out, err := exec.CommandContext(testutil.Context(t), "go", "build", "-o", bin, "./gopeer").CombinedOutput(); err != nil {
		t.Fatalf("building the Go contender process: %v\n%s", err, out)
	}
	t.Cleanup(func() { os.Remove(bin) }) // after the processes have stopped, before keepOnFailure
	for _, name := range chaosNames {
		r.clients = append(r.clients, startClient(t, ens, name, bin, logs))
	}
	return r
}

// labels returns every contender's label.
func (r *chaosRun) labels() []string {
	var out []string
	for _, c := range r.clients {
		out = append(out, c.labels...)
	}
	return out
}

// heal restores every proxy, restarts any member that is down and waits
// for the quorum.
func (r *chaosRun) heal() {
	down := slices.DeleteFunc(r.ens.Members(), (*zktest.Server).Running)
	for _, c := range r.clients {
		for _, p := range c.prox {
			p.Restore()
		}
	}
	if err := r.restore(context.Background(), down...); err != nil {
		r.t.Errorf("chaos: after the faults: %v", err)
	}
}

// stopAll stops every contender and adds up their reports (an election
// candidate's acquisitions are its terms), then waits until every client is
// connected.
func (r *chaosRun) stopAll() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, c := range r.clients {
		for _, l := range c.labels {
			if _, err := c.send("-", "chaos-stop", l)(ctx); err != nil && !strings.Contains(err.Error(), "no chaos loop") {
				r.t.Errorf("chaos: %v", err)
			}
		}
	}
	for _, c := range r.clients {
		group := "processes"
		if c.host != nil {
			group = "test"
		}
		for i, wait := range c.reports {
			reply, err := wait(ctx)
			if err != nil {
				r.t.Errorf("chaos: %s: %v", c.labels[i], err)
			}
			for _, kv := range strings.Fields(reply) {
				k, v, _ := strings.Cut(kv, "=")
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					r.t.Errorf("chaos: %s's report %q", c.labels[i], reply)
				}
				if k == "acquisitions" && (strings.Contains(c.labels[i], "-latch-") || strings.Contains(c.labels[i], "-selector-")) {
					k = "terms"
				}
				r.counts[group][k] += n
			}
		}
	}
	if ctx.Err() != nil {
		r.t.Fatalf("chaos: the contenders did not stop within 2 minutes (%s)", dumpStacks("stop"))
	}
	if err := r.waitAllConnected(ctx); err != nil {
		r.t.Errorf("after the faults: %v", err)
	}
}

// waitAllConnected waits (up to a minute) until every client's last state
// is a connection, and says which are not.
func (r *chaosRun) waitAllConnected(ctx context.Context) error {
	var errs []error
	by := time.Now().Add(time.Minute)
	for _, c := range r.clients {
		if !c.waitConnected(ctx, time.Time{}, by) {
			errs = append(errs, fmt.Errorf("%s is not connected (states in the last minute: %s)", c.name,
				statesSince(c, time.Now().Add(-time.Minute))))
		}
	}
	return errors.Join(errs...)
}

// orphans waits (up to 30s: guaranteed deletes finish in the background)
// until no ephemeral node is left under the lock paths, and returns those
// left then, with the client owning each: apart, those of Java peers'
// sessions, which only Curator can have left (docs/mixed-fleets.md).
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
func (r *chaosRun) ephemeralsLeft(ctx context.Context, of func(session int64) bool, deadline time.Time) (left []ephemeralNode, err error) {
	poll(ctx, deadline, 50*time.Millisecond, func() bool {
		left, err = ephemeralsUnder(r.checker, chaosBase)
		left = slices.DeleteFunc(left, func(n ephemeralNode) bool { return !of(n.owner) })
		return err == nil && len(left) == 0
	})
	return left, err
}

type ephemeralNode struct {
	path  string
	owner int64
}

// ephemeralsUnder lists the ephemeral nodes (lock, lease and latch nodes)
// under path, after a sync so that the server answering is up to date.
func ephemeralsUnder(conn *zk.Conn, path string) ([]ephemeralNode, error) {
	if _, err := conn.Sync(path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	var out []ephemeralNode
	for todo := []string{path}; len(todo) > 0; {
		p := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		ok, st, err := conn.Exists(p)
		switch {
		case err != nil:
			return nil, err
		case ok && st.EphemeralOwner != 0:
			out = append(out, ephemeralNode{p, st.EphemeralOwner})
		case ok:
			kids, _, err := conn.Children(p)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return nil, err
			}
			for _, k := range kids {
				todo = append(todo, p+"/"+k)
			}
		}
	}
	return out, nil
}

// judge checks the run and logs its summary line.
func (r *chaosRun) judge(seed int64, elapsed time.Duration, orphans, curatorOrphans []string) {
	t := r.t
	locks, twoLeaders, overlaps := r.ref.judge()
	fenceViolations, staleAccepted, accepted, refused := r.ref.audit()
	violations := append(locks, fenceViolations...)
	r.mu.Lock()
	defer r.mu.Unlock()
	var nFaults int
	var byKind []string
	for _, k := range faultKinds {
		nFaults += r.faults[k]
		byKind = append(byKind, fmt.Sprintf("%s=%d", k, r.faults[k]))
	}
	test, procs := r.counts["test"], r.counts["processes"]
	ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	summary := fmt.Sprintf("chaos: seed=%d duration=%v acquisitions=%d leader-terms=%d faults=%d %s violations=%d "+
		"two-leader-moments=%d orphans=%d curator-orphans=%d stale-writes-refused=%d stale-writes-accepted=%d worst-loss-notice=%v "+
		"worst-loss-notice-session=%v curator-worst-loss-notice=%v curator-late-notices=%d quorum-node-expiry=%v quorum-recovery=%v "+
		"go-events-granted=%d go-events-unbalanced=%d",
		seed, elapsed.Round(time.Second), test["acquisitions"]+procs["acquisitions"], test["terms"]+procs["terms"], nFaults, strings.Join(byKind, " "),
		len(violations)+len(r.quorumFindings), len(twoLeaders), len(orphans), len(curatorOrphans), refused, len(staleAccepted),
		ms(r.worst["standard"]), ms(r.worst["session"]), ms(r.worst["curator"]), len(r.curatorLate), ms(r.nodeExpiry), ms(r.recovery),
		r.granted, len(r.unbalanced))
	t.Logf("chaos: contenders in the test: %v; in processes: %v; %d accepted writes; %d guard overlaps, all but %d excused; "+
		"loss notices: %d (%d clients had nothing to be told, %d had left the member before the cut); pauses: %d, %d without a stale "+
		"write refused (a holder can be told, or interrupted, first)",
		test, procs, accepted, overlaps, len(locks)+len(twoLeaders), r.notices, r.rodeOut, r.notCutOff, r.faults[faultPause], r.unrefused)
	t.Log(summary)
	if testing.Verbose() {
		fmt.Fprintln(os.Stderr, summary)
	}

	report := reporter(t, "chaos", seed)
	report(true, "violations", violations)
	report(true, "moments of two leaders", twoLeaders)
	report(true, "quorum-loss findings", r.quorumFindings)
	report(true, "orphan nodes", orphans)
	report(false, "nodes Curator left behind (its own; see docs/mixed-fleets.md)", curatorOrphans)
	report(true, fmt.Sprintf("late loss notices of Go clients (bound: %v after the last contact)", chaosNoticeBound), r.lateNotices)
	report(false, "late loss notices of Java Curator clients (Curator's; see docs/guarantees.md)", r.curatorLate)
	report(true, "stale writes accepted", staleAccepted)
	report(true, "Go clients whose events do not add up (gauges not back at zero, an acquisition not ended once)", r.unbalanced)
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

// keepOnFailure copies dir (every client's log) somewhere that outlives a
// failed test, and says where; registered before the clients start, it
// runs after they have stopped.
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

// reporter returns what a suite's judge says a list of findings with: a
// failure (fail), or only a note (Curator's own, or what the run is to
// show), the first 30 of them, with the suite's name and the seed that
// replays the run.
func reporter(t *testing.T, suite string, seed int64) func(fail bool, what string, list []string) {
	return func(fail bool, what string, list []string) {
		say := t.Logf
		if fail {
			say = t.Errorf
		}
		if len(list) > 0 {
			say("%s: %d %s (seed %d):\n%s", suite, len(list), what, seed, strings.Join(list[:min(len(list), 30)], "\n"))
		}
	}
}
