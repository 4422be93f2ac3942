package compat_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/dialtrack"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// This file holds the chaos suite's Go clients in the test's own process:
// each behind proxies of its own and replaceable by a fault (a new client, a
// new session), with its contender loops as goroutines, so that faults can
// also close a client or cancel acquires under way.

// goSlot is one Go client position: its proxies and its current client,
// which the close-go-client fault replaces by a new one (a new session).
type goSlot struct {
	slotName string
	run      *chaosRun
	log      *zap.Logger // its clients' log, shown if the test fails
	prox     []*zktest.Proxy
	dials    dialtrack.Tracker // which member it is connected to
	linger   atomic.Bool

	mu        sync.Mutex
	gen       int
	client    *framework.Client
	mutex     *recipes.InterProcessMutex
	rw        *recipes.InterProcessReadWriteLock
	sem       *recipes.InterProcessSemaphoreV2
	acquiring map[*goContender]context.CancelFunc
	active    map[*goHolding]struct{}
	heard     []stateAt
}

type stateAt struct {
	s  state.ConnectionState
	at time.Time
}

func (s *goSlot) name() string             { return s.slotName }
func (s *goSlot) proxies() []*zktest.Proxy { return s.prox }
func (s *goSlot) process() *peer           { return nil }

// newSlotLog returns a logger (Info and up) writing to a file in the
// test's directory, whose last lines the test shows if it fails.
func newSlotLog(t testing.TB, name string) *zap.Logger {
	path := filepath.Join(t.TempDir(), name+".log")
	cfg := zap.NewDevelopmentConfig()
	cfg.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{path}, []string{path}
	cfg.DisableStacktrace = true
	l, err := cfg.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.Sync()
		if t.Failed() {
			lines, err := readLines(path)
			if err != nil {
				t.Logf("Go client %s log: %v", name, err)
			}
			t.Logf("Go client %s log (%s), last lines:\n%s", name, path, strings.Join(lines[max(0, len(lines)-80):], "\n"))
		}
	})
	return l
}

// open makes a new client and its locks and makes them current. The client
// connects in the background.
func (s *goSlot) open() error {
	c, err := framework.New(connectString(s.prox),
		retry.NewExponentialBackoff(20*time.Millisecond, 10, retry.WithMaxSleep(time.Second)),
		framework.WithSessionTimeout(chaosSessionTimeout),
		framework.WithConnectionTimeout(chaosSessionTimeout),
		framework.WithDialer(s.dials.Dial),
		framework.WithLogger(s.log),
		framework.WithListener(state.ListenerFunc(func(st state.ConnectionState) {
			s.mu.Lock()
			s.heard = append(s.heard, stateAt{st, time.Now()})
			s.mu.Unlock()
		})))
	if err != nil {
		return err
	}
	fam := familyOf(s.slotName)
	mutex, err1 := recipes.NewInterProcessMutex(c, chaosMutex.path(fam))
	rw, err2 := recipes.NewInterProcessReadWriteLock(c, chaosWrite.path(fam))
	sem, err3 := recipes.NewInterProcessSemaphoreV2(c, chaosSem.path(fam), chaosLeases)
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

// clientNow returns the current client and its generation.
func (s *goSlot) clientNow() (*framework.Client, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client, s.gen
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

func (s *goSlot) holdings(context.Context) ([]heldNow, error) {
	var out []heldNow
	for _, h := range s.insideNow() {
		out = append(out, heldNow{id: h.id, token: h.tokenNow()})
	}
	return out, nil
}

func (s *goSlot) sessionID(context.Context) (int64, error) { return s.current().SessionID(), nil }

func (s *goSlot) currentProxy(ctx context.Context) (*zktest.Proxy, error) {
	if err := s.current().BlockUntilConnected(ctx); err != nil {
		return nil, err
	}
	addr := s.dials.Current()
	if p := proxyAt(s.prox, addr); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("%s: last dialled %q, none of its proxies", s.slotName, addr)
}

func (s *goSlot) createOpcode() int32 { return zktest.OpCreate }

func (s *goSlot) curator() bool { return false }

func (s *goSlot) states(since time.Time) []stateEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []stateEvent
	for _, st := range s.heard {
		if !st.at.Before(since) {
			out = append(out, stateEvent{state: st.s.String(), at: st.at})
		}
	}
	return out
}

func (s *goSlot) waitConnected(ctx context.Context, _ time.Time) error {
	return s.current().BlockUntilConnected(ctx)
}

// partitioned: every holding inside at t0 must be told (Done()) by the
// deadline, or have finished before being told. With none inside, the
// client's own SUSPENDED or LOST counts (see awaitLossState).
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
		return awaitLossState(s, t0, deadline)
	}
}

// goContender takes one lock again and again through one owner at a time.
type goContender struct {
	slot  *goSlot
	label string
	lock  chaosLock
	rng   *rand.Rand
	n     int
	sel   *recipes.LeaderSelector // a selector candidate's current selector
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

// count counts a holding: an acquisition, or a term of leadership.
func (c *goContender) count() {
	if c.lock.isElection() {
		c.slot.run.goTerms.Add(1)
	} else {
		c.slot.run.goAcquired.Add(1)
	}
}

// elect is an election candidate's loop, until ctx ends: a LeaderLatch
// made on the current client, started, awaited, led for a holding and
// closed, again and again; or a LeaderSelector per client, auto-requeued,
// whose every turn is a holding.
func (c *goContender) elect(ctx context.Context) {
	r := c.slot.run
	for ctx.Err() == nil {
		client, gen := c.slot.clientNow()
		if c.lock == chaosSelector {
			c.selectorTurns(ctx, client, gen)
			continue
		}
		l, err := recipes.NewLeaderLatch(client, c.lock.path(familyOf(c.slot.name())), recipes.WithParticipantID(c.label))
		if err != nil {
			r.t.Errorf("chaos: %v", err)
			return
		}
		if err := l.Start(); err != nil {
			r.acquireFailed(err, nil, gen != c.slot.generation())
			pause(ctx, 20*time.Millisecond) // pacing after a failure
			continue
		}
		// Waiting in the queue until it leads; when the fault schedule
		// closes its client, Await says so (framework.ErrClosed), and the
		// candidate stands again on the new one.
		for ctx.Err() == nil {
			actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			err := l.Await(actx)
			cause := actx.Err()
			cancel()
			if err == nil {
				if c.hold(ctx, l, gen) != nil {
					pause(ctx, 20*time.Millisecond) // pacing after a failure
				}
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				r.acquireFailed(err, cause, gen != c.slot.generation())
				pause(ctx, 20*time.Millisecond) // pacing after a failure
				break
			}
		}
		if err := l.Close(); err != nil && !errors.Is(err, framework.ErrClosed) {
			r.goReleaseErrs.Add(1)
		}
	}
}

// selectorTurns runs a selector on client until ctx ends or the slot has a
// new client.
func (c *goContender) selectorTurns(ctx context.Context, client *framework.Client, gen int) {
	r := c.slot.run
	busy := make(chan struct{}, 1) // held while a turn runs
	sel, err := recipes.NewLeaderSelector(client, c.lock.path(familyOf(c.slot.name())), func(tctx context.Context) error {
		busy <- struct{}{}
		defer func() { <-busy }()
		if c.hold(ctx, selectorTerm{tctx}, gen) != nil {
			pause(tctx, 20*time.Millisecond) // pacing after a failure
		}
		return nil
	}, recipes.WithParticipantID(c.label), recipes.WithAutoRequeue())
	if err != nil {
		r.t.Errorf("chaos: %v", err)
		return
	}
	c.sel = sel
	if err := sel.Start(); err != nil {
		r.t.Errorf("chaos: %v", err)
		return
	}
	for ctx.Err() == nil && c.slot.generation() == gen {
		pause(ctx, 50*time.Millisecond) // the selector leads on its own goroutine
	}
	if err := sel.Close(); err != nil {
		r.goReleaseErrs.Add(1)
	}
	busy <- struct{}{} // Close does not wait for a turn under way: this does
}

// selectorTerm is a selector's turn as a term: its context ends when the
// turn does.
type selectorTerm struct{ ctx context.Context }

func (t selectorTerm) Done() <-chan struct{} { return t.ctx.Done() }
func (t selectorTerm) Err() error            { return context.Cause(t.ctx) }

// fencingToken is a Go owner's lazily read fencing token (mutex and
// read-write handles; the semaphore's leaseOwner has none, and needs none:
// only mutex and write holders write to a resource).
type fencingToken interface {
	FencingToken(ctx context.Context) (int64, error)
}

// term is what a holding holds: an acquisition (an owner's), or a term of
// leadership; Done closes, and Err says why, when it ends.
type term interface {
	Done() <-chan struct{}
	Err() error
}

// hold is one holding of what o holds: told (by Done()) as soon as it can
// no longer be trusted; otherwise it enters the guard and writes its token.
// A lock with a resource reads its token first, before the guard (as the
// Java contender): if that fails with ErrLockLost, the holding is told (it
// neither enters nor writes); any other failure is counted, and returned, as
// a failed acquire (gen is the client generation it acquired in). The
// caller releases (or leaves office) either way.
func (c *goContender) hold(ctx context.Context, o term, gen int) error {
	r := c.slot.run
	c.n++
	h := &goHolding{id: c.label + "." + strconv.Itoa(c.n), kind: c.lock.kind, max: c.lock.max,
		guard: r.guards[c.lock.guardOf(familyOf(c.slot.name()))], done: make(chan struct{})}
	resource := c.lock.resourceOf(familyOf(c.slot.name()))
	lost := o.Done()
	// told reports whether the holding has been told: the first to see
	// Done() closed (a loss, or the end of a term: the release comes after
	// the holding), the holder or the watcher below, records it.
	told := func() bool {
		select {
		case <-lost:
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
	f, ok := o.(fencingToken)
	if _, isTurn := o.(selectorTerm); isTurn {
		f, ok = c.sel, true
	}
	if ok && resource != "" {
		tctx, cancel := context.WithTimeout(ctx, chaosAcquireMax)
		t, err := f.FencingToken(tctx)
		cause := tctx.Err()
		cancel()
		switch {
		case errors.Is(err, recipes.ErrLockLost), errors.Is(err, recipes.ErrNotLeader):
			// As a holder told by Done(): told now, so it never enters the
			// guard or writes (the watcher above may have told it first).
			c.count()
			if at := time.Now(); h.tell(at) {
				r.goTold(h.id, at)
			}
			return nil
		case err != nil:
			r.acquireFailed(fmt.Errorf("fencing token: %w", err), cause, gen != c.slot.generation())
			return err
		}
		token = t
		h.setToken(t)
	}
	c.count()
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
	r.resource.seen(h.id, time.Now())
	// write writes the token, if the lock has a resource, and reports
	// whether to go on holding.
	write := func() bool {
		if told() {
			return false // write no more
		}
		if resource == "" {
			return true
		}
		ok, err := r.resource.write(resource, h.id, token)
		if err != nil {
			r.t.Errorf("write: %v", err)
			return false
		}
		if !ok {
			r.goFenced.Add(1)
		}
		return ok
	}
	hold := chaosHold
	if c.lock.isElection() {
		hold = chaosTermHold
	}
	for i := 0; i < chaosWrites; i++ {
		if !write() {
			return nil
		}
		time.Sleep(hold / chaosWrites) // time inside the critical section
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
