package compat_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// The chaos suite (issues #7 and #16): gocurator and Java Curator contenders
// take a mutex, a read-write lock and a semaphore on a 3-member ensemble
// while a seeded schedule of faults runs in lanes, each client behind fault
// proxies of its own, the members behind proxies on their quorum and
// election ports. Files: chaos_test.go (the test, its settings and its
// summary), chaos_faults_test.go (the schedule, its lanes and the faults to a
// client), chaos_server_faults_test.go (the faults to the ensemble),
// chaos_pause_test.go (the paused holder), chaos_contenders_test.go (what
// every client shares), chaos_goclient_test.go (Go clients in the test's
// process), chaos_peerclient_test.go (Go contender processes and Java
// peers), chaos_fencing_test.go (the fenced resource, the guard and the
// checks after the run).

var (
	chaosSeedFlag = flag.Int64("chaos.seed", 0,
		"seed of TestChaos's fault schedule (default: from the clock); the same seed and duration replay the same faults")
	chaosDurationFlag = flag.Duration("chaos.duration", chaosDefaultDuration,
		"how long TestChaos injects faults (or set CHAOS_DURATION)")
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
	// chaosNoticeBound: a partitioned holder is told within it.
	chaosNoticeBound = chaosSessionTimeout + time.Second
	chaosLeases      = 3
	// The clients: Go clients in the test's process, Go contender processes
	// (compat_test/gopeer) and Java Curator peers.
	chaosGoClients = 2
	chaosGoProcs   = 2
	chaosJavaPeers = 2
	// chaosHold is the time inside the critical section, chaosWrites the
	// writes made in it.
	chaosHold = 2 * time.Millisecond
	// chaosTermHold is a leader's time in office, chaosWrites the writes
	// made in it.
	chaosTermHold = 20 * time.Millisecond
	chaosWrites   = 2
	// chaosLingerMax bounds how long a holder of a black-holed client holds
	// on waiting to be told.
	chaosLingerMax  = 10 * time.Second
	chaosAcquireMin = 500 * time.Millisecond
	chaosAcquireMax = 4 * time.Second
	// chaosRecoveryBound: after a quorum loss, every contender holds its
	// lock again within it of the quorum's return.
	chaosRecoveryBound = 30 * time.Second
)

// chaosSettings returns the seed and the duration: the flags if given, else
// the clock and $CHAOS_DURATION (else 40s).
func chaosSettings() (seed int64, d time.Duration, err error) {
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	seed, d = *chaosSeedFlag, *chaosDurationFlag
	if !set["chaos.seed"] {
		seed = time.Now().UnixNano()
	}
	if v := os.Getenv("CHAOS_DURATION"); v != "" && !set["chaos.duration"] {
		if d, err = time.ParseDuration(v); err != nil {
			return 0, 0, fmt.Errorf("CHAOS_DURATION: %w", err)
		}
	}
	return seed, d, nil
}

// chaosRun is one run of the chaos suite.
type chaosRun struct {
	t        *testing.T
	ens      *zktest.Ensemble
	checker  *zk.Conn // a session of the test's, for looking at the tree
	resource *fencedResource
	guards   map[string]*chaosGuard
	toldPath string // told records of holdings in other processes
	goSlots  []*goSlot
	peers    []*peerClient // the Go processes, then the Java peers
	clients  []chaosClient // the Go slots, then the peers
	done     chan struct{} // closed when the run is over
	wg       sync.WaitGroup
	// gate: client faults hold it shared, a quorum loss alone.
	gate sync.RWMutex

	goAcquired, goTerms, goFenced, goReleaseErrs atomic.Int64

	lingerMu  sync.Mutex
	lingering map[string]int // by client: how many faults want its holders to hold on

	mu              sync.Mutex
	told            map[string]int64 // Go holdings told, in µs
	acquireErrs     map[string]int
	injected        map[faultKind]int
	faults          map[faultKind]int
	notices         []lossNotice
	lateNotices     []string
	paused          map[string]bool
	pauses          []pauseWindow
	pausesUnrefused int
	quorumFindings  []string
	rodeOut         int      // clients of a slow member that heard nothing: nothing to be told
	notCutOff       int      // clients that had left the cut-off member by the cut: nothing to be told
	curatorLate     []string // late loss notices of Java Curator clients: Curator's, reported apart
	nodeExpiries    []time.Duration
	recoveries      []time.Duration
}

// names returns the clients' names, in order.
func (r *chaosRun) names() []string {
	var out []string
	for _, c := range r.clients {
		out = append(out, c.name())
	}
	return out
}

func (r *chaosRun) goTold(id string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.told[id] = at.UnixMicro()
}

// acquireFailed counts a failed Go acquire by why it failed, and logs the
// first few unexpected ones.
func (r *chaosRun) acquireFailed(err, cause error, replaced bool) {
	kind := "other"
	switch {
	case replaced || errors.Is(err, framework.ErrClosed):
		kind = "client closed"
	case errors.Is(cause, context.Canceled):
		kind = "cancelled"
	case errors.Is(cause, context.DeadlineExceeded):
		kind = "timed out"
	}
	r.mu.Lock()
	r.acquireErrs[kind]++
	n := r.acquireErrs[kind]
	r.mu.Unlock()
	if kind == "other" && n <= 5 {
		r.t.Logf("chaos: Go acquire failed: %v", err)
	}
}

func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("the chaos suite runs for a minute or more")
	}
	testutil.CheckLeaks(t)
	seed, duration, err := chaosSettings()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range []struct {
		prefix string
		n      int
	}{{"g", chaosGoClients}, {"p", chaosGoProcs}, {"j", chaosJavaPeers}} {
		for i := 0; i < g.n; i++ {
			names = append(names, fmt.Sprintf("%s%d", g.prefix, i+1))
		}
	}
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
	contenders := r.startContenders(ctx, seed)
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
	peerTotals := r.stopAll(contenders)
	orphans, curatorOrphans := r.orphans(r.checker)
	r.closeClients()
	if err := testutil.DeleteTree(r.checker, chaosBase); err != nil {
		t.Errorf("cleaning up %s: %v", chaosBase, err)
	}
	close(r.done)
	testutil.Wait(t, &r.wg, "the chaos run's fault watchers")
	r.t.Logf("chaos: holdings inside per 10s since the faults began: %v", r.resource.timeline(start, 10*time.Second))
	r.judge(seed, elapsed, peerTotals, orphans, curatorOrphans)
}

// judge checks the run and logs its summary line.
func (r *chaosRun) judge(seed int64, elapsed time.Duration, peerTotals map[string]int64, orphans, curatorOrphans []string) {
	t := r.t
	r.mu.Lock()
	ex := excuses{told: map[string]int64{}, pauses: slices.Clone(r.pauses)}
	for id, at := range r.told {
		ex.told[id] = at
	}
	goTold := len(r.told)
	r.mu.Unlock()
	if err := readTold(r.toldPath, ex.told); err != nil {
		t.Error(err)
	}
	var locks, elections []*chaosGuard
	for _, name := range slices.Sorted(maps.Keys(r.guards)) {
		if g := r.guards[name]; strings.HasPrefix(name, chaosLatch.guard+"-") || strings.HasPrefix(name, chaosSelector.guard+"-") {
			elections = append(elections, g)
		} else {
			locks = append(locks, g)
		}
	}
	violations, overlaps, err := judgeGuards(locks, ex)
	if err != nil {
		t.Error(err)
	}
	twoLeaders, leaderOverlaps, err := judgeGuards(elections, ex)
	if err != nil {
		t.Error(err)
	}
	overlaps += leaderOverlaps
	fenceViolations, staleAccepted, accepted, refused := r.resource.audit(ex)
	violations = append(violations, fenceViolations...)

	r.mu.Lock()
	var worst, worstCurator time.Duration
	for _, n := range r.notices {
		if n.curator {
			worstCurator = max(worstCurator, n.delay)
		} else {
			worst = max(worst, n.delay)
		}
	}
	var worstExpiry, worstRecovery time.Duration
	for _, d := range r.nodeExpiries {
		worstExpiry = max(worstExpiry, d)
	}
	for _, d := range r.recoveries {
		worstRecovery = max(worstRecovery, d)
	}
	late, curatorLate, notCutOff := slices.Clone(r.lateNotices), slices.Clone(r.curatorLate), r.notCutOff
	quorum := slices.Clone(r.quorumFindings)
	unrefused, nPauses := r.pausesUnrefused, len(r.pauses)
	acquireErrs := maps.Clone(r.acquireErrs)
	nNotices := len(r.notices)
	r.mu.Unlock()
	goAcq, peerAcq := r.goAcquired.Load(), peerTotals["acquisitions"]
	goTerms, peerTerms := r.goTerms.Load(), peerTotals["terms"]
	nFaults, byKind, missing := r.faultSummary()
	summary := fmt.Sprintf("chaos: seed=%d duration=%v acquisitions=%d leader-terms=%d faults=%d %s violations=%d "+
		"two-leader-moments=%d orphans=%d curator-orphans=%d stale-writes-refused=%d stale-writes-accepted=%d worst-loss-notice=%v "+
		"curator-worst-loss-notice=%v curator-late-notices=%d quorum-node-expiry=%v quorum-recovery=%v",
		seed, elapsed.Round(time.Second), goAcq+peerAcq, goTerms+peerTerms, nFaults, byKind, len(violations)+len(quorum),
		len(twoLeaders), len(orphans), len(curatorOrphans), refused, len(staleAccepted), worst.Round(time.Millisecond),
		worstCurator.Round(time.Millisecond), len(curatorLate), worstExpiry.Round(time.Millisecond), worstRecovery.Round(time.Millisecond))
	t.Logf("chaos: acquisitions: Go in the test %d, processes %d; leader terms: Go in the test %d, processes %d; "+
		"%d accepted writes; %d guard overlaps, all but %d excused; told: in the test %d, processes %d; "+
		"Go acquires failed: %v; Go releases failed: %d; processes: %v; loss notices: %d (%d clients had left the member before the cut); pauses: %d, %d without a refused write",
		goAcq, peerAcq, goTerms, peerTerms, accepted, overlaps, len(violations)-len(fenceViolations)+len(twoLeaders),
		goTold, len(ex.told)-goTold, acquireErrs, r.goReleaseErrs.Load(), peerTotals, nNotices, notCutOff, nPauses, unrefused)
	t.Log(summary)
	if testing.Verbose() {
		fmt.Fprintln(os.Stderr, summary)
	}

	report := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		shown := list[:min(len(list), 30)]
		t.Errorf("%d %s (seed %d):\n%s", len(list), what, seed, strings.Join(shown, "\n"))
	}
	report("violations", violations)
	report("moments of two leaders", twoLeaders)
	report("quorum-loss findings", quorum)
	report("orphan nodes", orphans)
	if len(curatorOrphans) > 0 {
		t.Logf("chaos: %d nodes Curator left behind (its own; see docs/mixed-fleets.md):\n%s",
			len(curatorOrphans), strings.Join(curatorOrphans, "\n"))
	}
	report("late loss notices (bound: the session timeout + 1s)", late)
	if len(curatorLate) > 0 {
		t.Logf("chaos: %d late loss notices of Java Curator clients (Curator's; see docs/guarantees.md):\n%s",
			len(curatorLate), strings.Join(curatorLate, "\n"))
	}
	report("stale writes accepted", staleAccepted)
	report("fault kinds that did not happen as often as injected", missing)
	if nPauses > 0 && refused == 0 {
		t.Errorf("%d holders paused, and the fenced resource refused no write: the check did not fire", nPauses)
	}
	if n := peerTotals["guard-errors"]; n > 0 {
		t.Errorf("%d holdings of the Go contender processes could not enter or read their guard (see their logs): the overlap check was blind to them", n)
	}
	if goAcq == 0 || peerAcq == 0 || goTerms == 0 || peerTerms == 0 {
		t.Errorf("acquisitions: Go in the test %d, processes %d; leader terms: %d, %d; all must take part",
			goAcq, peerAcq, goTerms, peerTerms)
	}
}

// startChaos starts the ensemble, the resource, the guards and every
// client, each behind a proxy of its own for every member.
func startChaos(t *testing.T, names []string) *chaosRun {
	ens := zktest.NewEnsemble(t, 3, zktest.WithTickTime(chaosTick), zktest.WithPeerLinks(),
		zktest.WithConfig("initLimit", strconv.Itoa(int(chaosInitLimit/chaosTick))),
		zktest.WithContainerCheckInterval(500*time.Millisecond))
	r := &chaosRun{
		t:           t,
		ens:         ens,
		checker:     connectEnsemble(t, ens),
		resource:    newFencedResource(t),
		guards:      map[string]*chaosGuard{},
		toldPath:    filepath.Join(t.TempDir(), "told"),
		done:        make(chan struct{}),
		lingering:   map[string]int{},
		told:        map[string]int64{},
		acquireErrs: map[string]int{},
		injected:    map[faultKind]int{},
		faults:      map[faultKind]int{},
		paused:      map[string]bool{},
	}
	keepOnFailure(t, filepath.Dir(filepath.Dir(r.toldPath)))
	for _, name := range names {
		for _, g := range chaosGuards {
			if n := g + "-" + familyOf(name); r.guards[n] == nil {
				r.guards[n] = newChaosGuard(t, n)
			}
		}
	}

	proxies := func() []*zktest.Proxy {
		var ps []*zktest.Proxy
		for _, a := range ens.Addrs() {
			ps = append(ps, zktest.NewProxy(t, a))
		}
		return ps
	}
	ctx := testutil.Context(t)
	goPeer := buildGoPeer(t)
	for _, name := range names {
		switch name[0] {
		case 'g':
			s := &goSlot{slotName: name, run: r, prox: proxies(), log: newSlotLog(t, name),
				acquiring: map[*goContender]context.CancelFunc{}, active: map[*goHolding]struct{}{}}
			if err := s.open(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.current().Close() })
			if err := s.current().BlockUntilConnected(ctx); err != nil {
				t.Fatal(err)
			}
			r.goSlots = append(r.goSlots, s)
			r.clients = append(r.clients, s)
		case 'p':
			p := startPeerClient(t, startGoPeer(t, goPeer, "chaos-"+name), "go", name, proxies())
			r.peers = append(r.peers, p)
			r.clients = append(r.clients, p)
		default:
			p := startPeerClient(t, startPeer(t, "chaos-"+name), "java", name, proxies())
			r.peers = append(r.peers, p)
			r.clients = append(r.clients, p)
		}
	}
	return r
}

// startContenders starts every Go contender loop (until ctx ends) and
// every peer's loops.
func (r *chaosRun) startContenders(ctx context.Context, seed int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for si, s := range r.goSlots {
		for ci, cs := range chaosContenders {
			for i := 0; i < cs.n; i++ {
				c := &goContender{slot: s, label: contenderLabel(s.name(), cs.lock, i), lock: cs.lock,
					rng: rand.New(rand.NewPCG(uint64(seed), uint64(si*100+ci*10+i)))}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if cs.lock.isElection() {
						c.elect(ctx)
					} else {
						c.loop(ctx)
					}
				}()
			}
		}
	}
	for _, j := range r.peers {
		j.start(r)
	}
	return &wg
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
		for _, p := range c.proxies() {
			p.Restore()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.ens.WaitForQuorum(ctx); err != nil {
		r.t.Errorf("chaos: after the faults: %v", err)
	}
}

// stopAll waits for the Go contenders (whose context has ended) and stops
// the peers' loops, then waits until every client is connected. It returns
// the peers' loops' totals.
func (r *chaosRun) stopAll(goContenders *sync.WaitGroup) map[string]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		goContenders.Wait()
		close(stopped)
	}()
	totals := map[string]int64{}
	for _, j := range r.peers {
		t, err := j.stop(ctx)
		if err != nil {
			r.t.Errorf("chaos: stopping %s's loops: %v", j.name(), err)
		}
		for k, v := range t {
			totals[k] += v
		}
	}
	select {
	case <-stopped:
	case <-ctx.Done():
		r.t.Fatalf("chaos: the Go contenders did not stop within 2 minutes")
	}
	for _, s := range r.goSlots {
		if err := s.current().BlockUntilConnected(ctx); err != nil {
			r.t.Errorf("chaos: %s: %v", s.name(), err)
		}
	}
	for _, j := range r.peers {
		for !connectedNow(j) && ctx.Err() == nil {
			pause(ctx, 20*time.Millisecond) // polling the peer's events
		}
		if !connectedNow(j) {
			r.t.Errorf("chaos: %s is not connected after the faults", j.name())
		}
	}
	return totals
}

// orphans waits (up to 30s: guaranteed deletes finish in the background)
// until no ephemeral node is left under the lock paths, and otherwise
// returns what is left, with the client owning each: the nodes of Go
// clients' sessions (in the test or in processes) and of no client's,
// which are failures; and apart, those of Java peers' sessions, which only
// Curator can have left (Curator 5.4 loses track of a lock node whose
// create it retried across a lost connection, and its acquire fails with
// "Path cannot be null": docs/mixed-fleets.md).
func (r *chaosRun) orphans(conn *zk.Conn) (ours, curators []string) {
	owners := map[int64]string{}
	for _, s := range r.goSlots {
		owners[s.current().SessionID()] = s.name()
	}
	for _, j := range r.peers {
		owners[j.p.sessionID(r.t, j.name())] = j.name()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := ephemeralsUnder(conn, chaosBase)
		if err != nil {
			r.t.Errorf("chaos: listing %s: %v", chaosBase, err)
			return nil, nil
		}
		if len(left) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) {
			for _, n := range left {
				who := owners[n.owner]
				if who == "" {
					who = "no open client"
				}
				line := fmt.Sprintf("%s (session 0x%x: %s)", n.path, n.owner, who)
				if strings.HasPrefix(who, "j") {
					curators = append(curators, line)
				} else {
					ours = append(ours, line)
				}
			}
			return ours, curators
		}
		time.Sleep(100 * time.Millisecond) // polling, until the deadline
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
	for _, s := range r.goSlots {
		s.current().Close()
	}
	for _, j := range r.peers {
		if _, err := j.p.send("-", "close-client", j.name()).wait(testutil.Context(r.t)); err != nil {
			r.t.Errorf("chaos: %v", err)
		}
	}
}

// keepOnFailure copies dir (the test's temporary files: every client's
// log, the guards, the told records) somewhere that outlives the test if
// it fails, and says where. Registered before the processes start, it runs
// after they have stopped.
func keepOnFailure(t *testing.T, dir string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		dst, err := os.MkdirTemp("", "chaos-artifacts-")
		if err == nil {
			err = os.CopyFS(dst, os.DirFS(dir))
		}
		if err != nil {
			t.Logf("chaos: keeping the run's files: %v", err)
			return
		}
		t.Logf("chaos: the run's logs, guards and told records are kept in %s", dst)
	})
}

// connectEnsemble opens a raw session to every member of ens, for checking
// the tree, and closes it when the test ends.
func connectEnsemble(t testing.TB, ens *zktest.Ensemble) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(ens.Addrs(), 10*time.Second, zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testutil.DrainEvents(t, conn, events) })
	deadline := time.After(testutil.Timeout)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("no session with %s", ens.ConnectString())
		}
	}
	return conn
}
