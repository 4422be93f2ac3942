package compat_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// This file holds the chaos suite's contenders: Go clients (each behind
// proxies of its own, replaceable by a fault) with their contender loops,
// and Java clients in CuratorPeer JVMs with theirs ("chaos" verb).

// chaosLock is one of the locks every client contends for: how a holder of
// it enters the guard, and which resource it writes to ("" for none).
type chaosLock struct {
	name     string // the contender's role: mutex, write, read, sem
	guard    string // the guard's name: mutex, rw, sem
	kind     guardKind
	max      int
	resource string
}

var (
	chaosMutex = chaosLock{name: "mutex", guard: "mutex", kind: exclusive, max: 1, resource: "mutex"}
	chaosWrite = chaosLock{name: "write", guard: "rw", kind: exclusive, max: 1, resource: "write"}
	chaosRead  = chaosLock{name: "read", guard: "rw", kind: shared, max: 1}
	chaosSem   = chaosLock{name: "sem", guard: "sem", kind: counted, max: chaosLeases}
)

// chaosContenders is how many contenders of each role every client runs.
var chaosContenders = []struct {
	lock chaosLock
	n    int
}{{chaosMutex, 2}, {chaosWrite, 1}, {chaosRead, 1}, {chaosSem, 2}}

// chaosClient is a client as the fault schedule sees it, Go or Java.
type chaosClient interface {
	name() string
	proxies() []*zktest.Proxy
	// currentProxy returns the proxy the client is connected through.
	currentProxy(ctx context.Context) (*zktest.Proxy, error)
	setLinger(on bool) error
	// holdersInside returns how many of its holdings are in a guard, untold.
	holdersInside() (int, error)
	// partitioned returns, once the client has been black-holed at t0, a
	// function that waits (until deadline) for its loss signal and returns
	// the delay; ok is false if none came.
	partitioned(t0 time.Time) func(deadline time.Time) (delay time.Duration, ok bool, detail string)
	// waitConnected waits until the client is connected again after since.
	waitConnected(ctx context.Context, since time.Time) error
	// statesSince lists the client's connection states since t, for logs.
	statesSince(t time.Time) string
	// createOpcode is the opcode of the client's creates: go-zookeeper
	// sends create, ZooKeeper's Java client (as Curator calls it) create2.
	createOpcode() int32
}

func connectString(proxies []*zktest.Proxy) string {
	addrs := make([]string, len(proxies))
	for i, p := range proxies {
		addrs[i] = p.Addr()
	}
	return strings.Join(addrs, ",")
}

func proxyAt(proxies []*zktest.Proxy, addr string) *zktest.Proxy {
	for _, p := range proxies {
		if p.Addr() == addr {
			return p
		}
	}
	return nil
}

// goSlot is one Go client position: its proxies and its current client,
// which the close-go-client fault replaces by a new one (a new session).
type goSlot struct {
	slotName string
	run      *chaosRun
	prox     []*zktest.Proxy
	lastDial atomic.Value // string: the address it dialled last
	linger   atomic.Bool

	mu        sync.Mutex
	gen       int
	client    *framework.Client
	mutex     *recipes.InterProcessMutex
	rw        *recipes.InterProcessReadWriteLock
	sem       *recipes.InterProcessSemaphoreV2
	acquiring map[*goContender]context.CancelFunc
	active    map[*goHolding]struct{}
	states    []stateAt
}

type stateAt struct {
	s  state.ConnectionState
	at time.Time
}

func (s *goSlot) name() string             { return s.slotName }
func (s *goSlot) proxies() []*zktest.Proxy { return s.prox }

func (s *goSlot) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	s.lastDial.Store(addr)
	return net.DialTimeout(network, addr, timeout)
}

// open makes a new client and its locks and makes them current. The client
// connects in the background.
func (s *goSlot) open() error {
	c, err := framework.New(connectString(s.prox),
		retry.NewExponentialBackoff(20*time.Millisecond, 10, retry.WithMaxSleep(time.Second)),
		framework.WithSessionTimeout(chaosSessionTimeout),
		framework.WithConnectionTimeout(chaosSessionTimeout),
		framework.WithDialer(s.dial),
		framework.WithListener(state.ListenerFunc(func(st state.ConnectionState) {
			s.mu.Lock()
			s.states = append(s.states, stateAt{st, time.Now()})
			s.mu.Unlock()
		})))
	if err != nil {
		return err
	}
	mutex, err1 := recipes.NewInterProcessMutex(c, chaosBase+"/mutex")
	rw, err2 := recipes.NewInterProcessReadWriteLock(c, chaosBase+"/rw")
	sem, err3 := recipes.NewInterProcessSemaphoreV2(c, chaosBase+"/sem", chaosLeases)
	if err := errors.Join(err1, err2, err3); err != nil {
		c.Close()
		return err
	}
	s.mu.Lock()
	s.gen++
	s.client, s.mutex, s.rw, s.sem = c, mutex, rw, sem
	s.mu.Unlock()
	return nil
}

// replace opens a new client and closes the old one while its contenders
// wait on it.
func (s *goSlot) replace() error {
	s.mu.Lock()
	old := s.client
	s.mu.Unlock()
	if err := s.open(); err != nil {
		return err
	}
	return old.Close()
}

func (s *goSlot) current() *framework.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// owner returns a new owner of lock on the current client, and the
// client's generation.
func (s *goSlot) owner(lock chaosLock) (owner, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch lock.name {
	case "mutex":
		return s.mutex.NewHandle(), s.gen
	case "write":
		return s.rw.NewHandle().WriteLock(), s.gen
	case "read":
		return s.rw.NewHandle().ReadLock(), s.gen
	}
	return &leaseOwner{s: s.sem, qty: 1}, s.gen
}

func (s *goSlot) generation() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gen
}

// setAcquiring records the cancel function of c's acquire under way, or
// (nil) that it is over.
func (s *goSlot) setAcquiring(c *goContender, cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cancel == nil {
		delete(s.acquiring, c)
	} else {
		s.acquiring[c] = cancel
	}
}

// cancelAcquires cancels every acquire under way and returns how many.
func (s *goSlot) cancelAcquires() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, cancel := range s.acquiring {
		cancel()
	}
	return len(s.acquiring)
}

func (s *goSlot) setActive(h *goHolding, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		s.active[h] = struct{}{}
	} else {
		delete(s.active, h)
	}
}

func (s *goSlot) insideNow() []*goHolding {
	s.mu.Lock()
	defer s.mu.Unlock()
	var in []*goHolding
	for h := range s.active {
		if h.inside() {
			in = append(in, h)
		}
	}
	return in
}

func (s *goSlot) setLinger(on bool) error { s.linger.Store(on); return nil }

func (s *goSlot) holdersInside() (int, error) { return len(s.insideNow()), nil }

func (s *goSlot) currentProxy(ctx context.Context) (*zktest.Proxy, error) {
	if err := s.current().BlockUntilConnected(ctx); err != nil {
		return nil, err
	}
	addr, _ := s.lastDial.Load().(string)
	if p := proxyAt(s.prox, addr); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%s: last dialled %q, none of its proxies", s.slotName, addr)
}

func (s *goSlot) createOpcode() int32 { return zktest.OpCreate }

func (s *goSlot) statesSince(t time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.states {
		if !st.at.Before(t) {
			out = append(out, fmt.Sprintf("%s at +%v", st.s, st.at.Sub(t).Round(time.Millisecond)))
		}
	}
	return strings.Join(out, ", ")
}

func (s *goSlot) waitConnected(ctx context.Context, _ time.Time) error {
	return s.current().BlockUntilConnected(ctx)
}

// partitioned: every holding inside at t0 must be told (Done()) by the
// deadline, or have finished before being told. With none inside, the
// client's own SUSPENDED or LOST counts.
func (s *goSlot) partitioned(t0 time.Time) func(time.Time) (time.Duration, bool, string) {
	inside := s.insideNow()
	return func(deadline time.Time) (time.Duration, bool, string) {
		var worst time.Duration
		for _, h := range inside {
			select {
			case <-h.done:
			case <-time.After(time.Until(deadline)):
			}
			told, ended := h.outcome()
			switch {
			case !told.IsZero():
				worst = max(worst, told.Sub(t0))
			case ended.IsZero():
				return 0, false, fmt.Sprintf("holding %s was not told by %v", h.id, deadline.Sub(t0))
			}
		}
		if len(inside) > 0 {
			return worst, true, fmt.Sprintf("%d holdings told", len(inside))
		}
		for {
			s.mu.Lock()
			states := s.states
			s.mu.Unlock()
			for _, st := range states {
				if st.at.After(t0) && (st.s == state.Suspended || st.s == state.Lost) {
					return st.at.Sub(t0), true, "client " + st.s.String()
				}
			}
			if time.Now().After(deadline) {
				return 0, false, "no SUSPENDED or LOST"
			}
			time.Sleep(10 * time.Millisecond) // polling the recorded states, until the deadline
		}
	}
}

// goContender takes one lock again and again through one owner at a time.
type goContender struct {
	slot  *goSlot
	label string
	lock  chaosLock
	rng   *rand.Rand
	n     int
}

func (c *goContender) loop(ctx context.Context) {
	r := c.slot.run
	var o owner
	gen := -1
	for ctx.Err() == nil {
		if g := c.slot.generation(); o == nil || g != gen {
			o, gen = c.slot.owner(c.lock)
		}
		timeout := chaosAcquireMin + time.Duration(c.rng.Int64N(int64(chaosAcquireMax-chaosAcquireMin)))
		actx, cancel := context.WithTimeout(ctx, timeout)
		c.slot.setAcquiring(c, cancel)
		err := o.Acquire(actx)
		c.slot.setAcquiring(c, nil)
		cause := actx.Err()
		cancel()
		if err != nil {
			r.acquireFailed(err, cause, gen != c.slot.generation())
			pause(ctx, 20*time.Millisecond) // pacing after a failure
			continue
		}
		tokenErr := c.hold(ctx, o, gen)
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := o.Release(rctx); err != nil {
			r.goReleaseErrs.Add(1)
		}
		rcancel()
		if tokenErr != nil {
			pause(ctx, 20*time.Millisecond) // pacing after a failure, as after a failed acquire
		}
	}
}

// fencingToken is a Go owner's lazily read fencing token (mutex and
// read-write handles; the semaphore's leaseOwner has none, and needs none:
// only mutex and write holders write to a resource).
type fencingToken interface {
	FencingToken(ctx context.Context) (int64, error)
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// hold is one holding: told (by Done()) as soon as the lock can no longer
// be trusted; otherwise it enters the guard and writes its token. A lock
// with a resource reads its token first, before the guard (as the Java
// contender): if that fails with ErrLockLost, the holding is told (it
// neither enters nor writes); any other failure is counted, and returned, as
// a failed acquire (gen is the client generation it acquired in). The
// caller releases either way.
func (c *goContender) hold(ctx context.Context, o owner, gen int) error {
	r := c.slot.run
	c.n++
	h := &goHolding{id: c.label + "." + strconv.Itoa(c.n), kind: c.lock.kind, max: c.lock.max,
		guard: r.guards[c.lock.guard], done: make(chan struct{})}
	lost := o.Done()
	// told reports whether the holding has been told: the first to see
	// Done() closed for a loss (not for the release after the holding),
	// the holder or the watcher below, records it.
	told := func() bool {
		select {
		case <-lost:
			if !errors.Is(o.Err(), recipes.ErrLockLost) {
				return false
			}
			if at := time.Now(); h.tell(at) {
				r.goTold(h.id, at)
			}
			return true
		default:
			return false
		}
	}
	c.slot.setActive(h, true)
	defer c.slot.setActive(h, false)
	go func() {
		select {
		case <-lost:
			told()
		case <-h.done:
		}
	}()
	defer h.finish()
	var token int64
	if f, ok := o.(fencingToken); ok && c.lock.resource != "" {
		tctx, cancel := context.WithTimeout(ctx, chaosAcquireMax)
		t, err := f.FencingToken(tctx)
		cause := tctx.Err()
		cancel()
		switch {
		case errors.Is(err, recipes.ErrLockLost):
			// As a holder told by Done(): told now, so it never enters the
			// guard or writes (the watcher above may have told it first).
			r.goAcquired.Add(1)
			if at := time.Now(); h.tell(at) {
				r.goTold(h.id, at)
			}
			return nil
		case err != nil:
			r.acquireFailed(fmt.Errorf("fencing token: %w", err), cause, gen != c.slot.generation())
			return err
		}
		token = t
	}
	r.goAcquired.Add(1)
	if told() {
		return nil
	}
	entered, err := h.enter()
	if err != nil {
		r.t.Errorf("guard: %v", err)
	}
	if !entered {
		return nil
	}
	// write writes the token, if the lock has a resource, and reports
	// whether to go on holding.
	write := func() bool {
		if told() {
			return false // write no more
		}
		if c.lock.resource == "" {
			return true
		}
		ok, err := r.resource.write(c.lock.resource, h.id, token)
		if err != nil {
			r.t.Errorf("write: %v", err)
			return false
		}
		if !ok {
			r.goFenced.Add(1)
		}
		return ok
	}
	for i := 0; i < chaosWrites; i++ {
		if !write() {
			return nil
		}
		time.Sleep(chaosHold / chaosWrites) // time inside the critical section
	}
	// While the fault schedule partitions this client, hold on (writing)
	// until told, so that a holder is inside when the partition starts.
	start := time.Now()
	for c.slot.linger.Load() && time.Since(start) < chaosLingerMax && ctx.Err() == nil {
		if !write() {
			return nil
		}
		select {
		case <-lost:
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// javaClient is one Curator client in a CuratorPeer JVM, with its loops.
type javaClient struct {
	clientName string
	p          *peer
	prox       []*zktest.Proxy
	labels     []string
	calls      []*call
}

func (j *javaClient) name() string             { return j.clientName }
func (j *javaClient) proxies() []*zktest.Proxy { return j.prox }

// startJavaClient opens the client in p and makes its locks.
func startJavaClient(t testing.TB, p *peer, name string, prox []*zktest.Proxy) *javaClient {
	t.Helper()
	j := &javaClient{clientName: name, p: p, prox: prox}
	ms := strconv.FormatInt(chaosSessionTimeout.Milliseconds(), 10)
	// tracker=false: Curator would otherwise learn the members' own
	// addresses from /zookeeper/config and reconnect around the proxies.
	p.client(t, name, connectString(prox), "session="+ms, "connection="+ms, "maxsleep=1000", "stamp=true", "tracker=false")
	p.do(t, "-", "mutex", name+"-mutex", name, chaosBase+"/mutex")
	p.do(t, "-", "rwlock", name+"-rw", name, chaosBase+"/rw")
	p.do(t, "-", "semaphore", name+"-sem", name, chaosBase+"/sem", strconv.Itoa(chaosLeases))
	return j
}

// start starts the client's chaos loops.
func (j *javaClient) start(r *chaosRun) {
	for _, cs := range chaosContenders {
		ref := map[string]string{"mutex": "-mutex", "write": "-rw.write", "read": "-rw.read", "sem": "-sem"}[cs.lock.name]
		for i := 0; i < cs.n; i++ {
			label := fmt.Sprintf("%s-%s-%d", j.clientName, cs.lock.name, i)
			args := []string{j.clientName + ref, "label=" + label, "guard=" + r.guards[cs.lock.guard].dir,
				"told=" + r.toldPath, "kind=" + string(cs.lock.kind), "max=" + strconv.Itoa(cs.lock.max),
				"hold=" + strconv.FormatInt(chaosHold.Milliseconds(), 10), "writes=" + strconv.Itoa(chaosWrites),
				"acquire=1000", "linger=" + strconv.FormatInt(chaosLingerMax.Milliseconds(), 10)}
			if cs.lock.resource != "" {
				args = append(args, "resource="+r.resource.url(cs.lock.resource))
			}
			j.labels = append(j.labels, label)
			j.calls = append(j.calls, j.p.send("w-"+label, "chaos", args...))
		}
	}
}

// stop asks every loop to stop and waits for their reports.
func (j *javaClient) stop(ctx context.Context) (map[string]int64, error) {
	for _, l := range j.labels {
		if _, err := j.p.send("-", "chaos-stop", l).wait(ctx); err != nil && !strings.Contains(err.Error(), "no chaos loop") {
			return nil, err
		}
	}
	total := map[string]int64{}
	var errs []error
	for _, c := range j.calls {
		reply, err := c.wait(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, kv := range strings.Fields(reply) {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("chaos loop reply %q", reply))
				break
			}
			total[k] += n
		}
	}
	return total, errors.Join(errs...)
}

// ask runs a quick request on the peer's pool, with a deadline.
func (j *javaClient) ask(verb string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return j.p.send("-", verb, args...).wait(ctx)
}

func (j *javaClient) setLinger(on bool) error {
	_, err := j.ask("linger", j.clientName, map[bool]string{true: "on", false: "off"}[on])
	return err
}

func (j *javaClient) holdersInside() (int, error) {
	r, err := j.ask("inside", j.clientName)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(r)
}

func (j *javaClient) currentProxy(ctx context.Context) (*zktest.Proxy, error) {
	for {
		r, err := j.ask("remote", j.clientName)
		if err != nil {
			return nil, err
		}
		if p := proxyAt(j.prox, r); p != nil {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s is connected to %q, none of its proxies: %w", j.clientName, r, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling until connected
		}
	}
}

// states returns the client's "state" events since t (by the µs the Java
// listener stamped them with).
func (j *javaClient) states(since time.Time) []stateEvent {
	var out []stateEvent
	for _, ev := range j.p.eventList() {
		f := strings.Fields(ev)
		if len(f) != 4 || f[0] != "state" || f[1] != j.clientName {
			continue
		}
		us, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || us < since.UnixMicro() {
			continue
		}
		out = append(out, stateEvent{state: f[2], at: time.UnixMicro(us)})
	}
	return out
}

type stateEvent struct {
	state string
	at    time.Time
}

// waitState polls the events until one of states has come since t.
func (j *javaClient) waitState(ctx context.Context, since time.Time, states ...string) (stateEvent, error) {
	for {
		for _, ev := range j.states(since) {
			for _, s := range states {
				if ev.state == s {
					return ev, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return stateEvent{}, fmt.Errorf("%s: no %v since %v: %w", j.clientName, states, since.Format("15:04:05.000"), ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling the peer's events
		}
	}
}

// partitioned: the Java client's loss signal is its listener hearing
// SUSPENDED or LOST (which tells its holdings in the same call).
func (j *javaClient) partitioned(t0 time.Time) func(time.Time) (time.Duration, bool, string) {
	return func(deadline time.Time) (time.Duration, bool, string) {
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		defer cancel()
		ev, err := j.waitState(ctx, t0, "SUSPENDED", "LOST")
		if err != nil {
			return 0, false, err.Error()
		}
		return ev.at.Sub(t0), true, "client " + ev.state
	}
}

func (j *javaClient) createOpcode() int32 { return zktest.OpCreate2 }

func (j *javaClient) statesSince(t time.Time) string {
	var out []string
	for _, ev := range j.states(t) {
		out = append(out, fmt.Sprintf("%s at +%v", ev.state, ev.at.Sub(t).Round(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}

func (j *javaClient) waitConnected(ctx context.Context, since time.Time) error {
	_, err := j.waitState(ctx, since, "CONNECTED", "RECONNECTED")
	return err
}

// connectedNow reports whether the client's last state event says connected.
func (j *javaClient) connectedNow() bool {
	evs := j.states(time.Time{})
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1].state
	return last == "CONNECTED" || last == "RECONNECTED"
}
