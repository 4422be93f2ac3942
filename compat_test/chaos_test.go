package compat_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

// The chaos suite (issue #7): Go and Java Curator contenders take a mutex,
// a read-write lock and a semaphore on a 3-member ensemble while a seeded
// schedule of faults runs, each client behind fault proxies of its own.
// Files: chaos_test.go (the test, its settings and its summary),
// chaos_faults_test.go (the schedule and each fault), chaos_contenders_test.go
// (Go and Java clients and their loops), chaos_fencing_test.go (the fenced
// resource, the guard and the checks after the run).

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
	// chaosNoticeBound: a partitioned holder is told within it.
	chaosNoticeBound = chaosSessionTimeout + time.Second
	chaosLeases      = 3
	chaosGoClients   = 3
	chaosJavaPeers   = 2
	// chaosHold is the time inside the critical section, chaosWrites the
	// writes made in it.
	chaosHold   = 2 * time.Millisecond
	chaosWrites = 2
	// chaosLingerMax bounds how long a holder of a black-holed client holds
	// on waiting to be told.
	chaosLingerMax  = 10 * time.Second
	chaosAcquireMin = 500 * time.Millisecond
	chaosAcquireMax = 4 * time.Second
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
	resource *fencedResource
	guards   map[string]*chaosGuard
	toldPath string // Java holdings' told records
	goSlots  []*goSlot
	java     []*javaClient
	clients  []chaosClient // the Go ones, then the Java ones
	done     chan struct{} // closed when the run is over
	wg       sync.WaitGroup

	goAcquired, goFenced, goReleaseErrs atomic.Int64

	mu          sync.Mutex
	told        map[string]int64 // Go holdings told, in µs
	acquireErrs map[string]int
	faults      map[faultKind]int
	notices     []lossNotice
	lateNotices []string
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
	for i := 0; i < chaosGoClients; i++ {
		names = append(names, fmt.Sprintf("g%d", i+1))
	}
	for i := 0; i < chaosJavaPeers; i++ {
		names = append(names, fmt.Sprintf("j%d", i+1))
	}
	schedule := chaosSchedule(seed, duration, len(names), chaosGoClients)
	var plan strings.Builder
	for i, f := range schedule {
		fmt.Fprintf(&plan, "\n  %3d %s", i+1, f.describe(names, chaosGoClients))
	}
	t.Logf("chaos: seed %d, %v of faults (replay: -chaos.seed=%d -chaos.duration=%v); schedule:%s",
		seed, duration, seed, duration, plan.String())

	r := startChaos(t, seed)
	ctx, stopContenders := context.WithCancel(context.Background())
	defer stopContenders()
	contenders := r.startContenders(ctx, seed)
	start := time.Now()
	r.runSchedule(ctx, schedule, duration)
	elapsed := time.Since(start)

	// Heal, stop every contender, and look for orphans while every session
	// is still open (closing one would delete its nodes and hide them).
	r.heal()
	stopContenders()
	javaTotals := r.stopAll(contenders)
	checker := connectEnsemble(t, r.ens)
	orphans := r.orphans(checker)
	r.closeClients()
	if err := testutil.DeleteTree(checker, chaosBase); err != nil {
		t.Errorf("cleaning up %s: %v", chaosBase, err)
	}
	close(r.done)
	testutil.Wait(t, &r.wg, "the chaos run's fault watchers")

	// Judge.
	told := map[string]int64{}
	r.mu.Lock()
	for id, at := range r.told {
		told[id] = at
	}
	r.mu.Unlock()
	if err := readTold(r.toldPath, told); err != nil {
		t.Error(err)
	}
	guards := []*chaosGuard{r.guards["mutex"], r.guards["rw"], r.guards["sem"]}
	violations, overlaps, err := judgeGuards(guards, told)
	if err != nil {
		t.Error(err)
	}
	fenceViolations, accepted, fenced := r.resource.audit(told)
	violations = append(violations, fenceViolations...)

	var worst time.Duration
	for _, n := range r.notices {
		worst = max(worst, n.delay)
	}
	goAcq, javaAcq := r.goAcquired.Load(), javaTotals["acquisitions"]
	nFaults, byKind := r.faultSummary()
	summary := fmt.Sprintf("chaos: seed=%d duration=%v acquisitions=%d (go %d / java %d) faults=%d (%s) "+
		"violations=%d orphans=%d worst-loss-notice=%v fenced-writes=%d",
		seed, elapsed.Round(time.Second), goAcq+javaAcq, goAcq, javaAcq, nFaults, byKind,
		len(violations), len(orphans), worst.Round(time.Millisecond), fenced)
	r.mu.Lock()
	t.Logf("chaos: %d accepted writes; %d guard overlaps, all but %d excused by a told holder; "+
		"told: go %d, java %d; Go acquires failed: %v; Go releases failed: %d; Java: %v; loss notices: %d",
		accepted, overlaps, len(violations)-len(fenceViolations), len(r.told), len(told)-len(r.told),
		r.acquireErrs, r.goReleaseErrs.Load(), javaTotals, len(r.notices))
	late := slices.Clone(r.lateNotices)
	r.mu.Unlock()
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
	report("orphan nodes", orphans)
	report("late loss notices (bound: the session timeout + 1s)", late)
	if goAcq == 0 || javaAcq == 0 {
		t.Errorf("acquisitions: go %d, java %d; both languages must take part", goAcq, javaAcq)
	}
}

// startChaos starts the ensemble, the resource, the guards and every
// client, each behind a proxy of its own for every member.
func startChaos(t *testing.T, seed int64) *chaosRun {
	ens := zktest.NewEnsemble(t, 3, zktest.WithTickTime(chaosTick),
		zktest.WithContainerCheckInterval(500*time.Millisecond))
	r := &chaosRun{
		t:           t,
		ens:         ens,
		resource:    newFencedResource(t),
		guards:      map[string]*chaosGuard{},
		toldPath:    filepath.Join(t.TempDir(), "told"),
		done:        make(chan struct{}),
		told:        map[string]int64{},
		acquireErrs: map[string]int{},
		faults:      map[faultKind]int{},
	}
	for _, g := range []string{"mutex", "rw", "sem"} {
		r.guards[g] = newChaosGuard(t, g)
	}
	proxies := func() []*zktest.Proxy {
		var ps []*zktest.Proxy
		for _, a := range ens.Addrs() {
			ps = append(ps, zktest.NewProxy(t, a))
		}
		return ps
	}
	ctx := testutil.Context(t)
	for i := 0; i < chaosGoClients; i++ {
		s := &goSlot{slotName: fmt.Sprintf("g%d", i+1), run: r, prox: proxies(),
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
	}
	for i := 0; i < chaosJavaPeers; i++ {
		name := fmt.Sprintf("j%d", i+1)
		j := startJavaClient(t, startPeer(t, "chaos-"+name), name, proxies())
		r.java = append(r.java, j)
		r.clients = append(r.clients, j)
	}
	return r
}

// startContenders starts every Go contender loop (until ctx ends) and
// every Java loop.
func (r *chaosRun) startContenders(ctx context.Context, seed int64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for si, s := range r.goSlots {
		for ci, cs := range chaosContenders {
			for i := 0; i < cs.n; i++ {
				c := &goContender{slot: s, label: fmt.Sprintf("%s-%s-%d", s.name(), cs.lock.name, i), lock: cs.lock,
					rng: rand.New(rand.NewPCG(uint64(seed), uint64(si*100+ci*10+i)))}
				wg.Add(1)
				go func() {
					defer wg.Done()
					c.loop(ctx)
				}()
			}
		}
	}
	for _, j := range r.java {
		j.start(r)
	}
	return &wg
}

// runSchedule injects the faults in order. A failed fault ends the
// schedule; so does running over twice the duration and a minute.
func (r *chaosRun) runSchedule(ctx context.Context, schedule []fault, d time.Duration) {
	start := time.Now()
	for i, f := range schedule {
		if over := time.Since(start); over > 2*d+time.Minute {
			r.t.Errorf("chaos: the schedule ran %v, over twice its %v; stopped before fault %d of %d", over, d, i+1, len(schedule))
			return
		}
		pause(ctx, f.gap)
		at := time.Since(start)
		note, err := r.inject(ctx, f)
		if err != nil {
			r.t.Errorf("chaos: fault %d (%s): %v", i+1, f.kind, err)
			return
		}
		r.t.Logf("chaos: +%v fault %d/%d %s: %s", at.Round(time.Millisecond), i+1, len(schedule), f.kind, note)
	}
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
// the Java loops, then waits until every client is connected. It returns
// the Java loops' totals.
func (r *chaosRun) stopAll(goContenders *sync.WaitGroup) map[string]int64 {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		goContenders.Wait()
		close(stopped)
	}()
	totals := map[string]int64{}
	for _, j := range r.java {
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
	for _, j := range r.java {
		for !j.connectedNow() && ctx.Err() == nil {
			pause(ctx, 20*time.Millisecond) // polling the peer's events
		}
		if !j.connectedNow() {
			r.t.Errorf("chaos: %s is not connected after the faults", j.name())
		}
	}
	return totals
}

// orphans waits (up to 30s: guaranteed deletes finish in the background)
// until no ephemeral node is left under the lock paths, and otherwise
// returns what is left, with the client owning each.
func (r *chaosRun) orphans(conn *zk.Conn) []string {
	owners := map[int64]string{}
	for _, s := range r.goSlots {
		owners[s.current().SessionID()] = s.name()
	}
	for _, j := range r.java {
		owners[j.p.sessionID(r.t, j.name())] = j.name()
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := ephemeralsUnder(conn, chaosBase)
		if err != nil {
			r.t.Errorf("chaos: listing %s: %v", chaosBase, err)
			return nil
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			var out []string
			for _, n := range left {
				who := owners[n.owner]
				if who == "" {
					who = "no open client"
				}
				out = append(out, fmt.Sprintf("%s (session 0x%x: %s)", n.path, n.owner, who))
			}
			return out
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

// closeClients closes every Go and Java client.
func (r *chaosRun) closeClients() {
	for _, s := range r.goSlots {
		s.current().Close()
	}
	for _, j := range r.java {
		if _, err := j.p.send("-", "close-client", j.name()).wait(testutil.Context(r.t)); err != nil {
			r.t.Errorf("chaos: %v", err)
		}
	}
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
