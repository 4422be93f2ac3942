package recipes_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// The ownership contract (docs/guarantees.md), held by every owner type:
// what Done, Err, IsHeld, Acquire, Release and FencingToken say at each edge
// of an acquisition's life.

// ownerKind is one type of owner, made on a client at a path.
type ownerKind struct {
	name      string
	make      func(t *testing.T, c *framework.Client, path string) recipes.Locker
	reentrant bool // Acquire again while held counts up
}

func ownerKinds() []ownerKind {
	return []ownerKind{
		{"mutex", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return mustMutex(t, c, p).NewHandle()
		}, true},
		{"read lock", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return mustRW(t, c, p).NewHandle().ReadLock()
		}, true},
		{"write lock", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return mustRW(t, c, p).NewHandle().WriteLock()
		}, true},
		{"semaphore mutex", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return must(recipes.NewInterProcessSemaphoreMutex(c, p)).get(t)
		}, false},
		{"lease", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return &leaseOwner{sem: mustSemaphore(t, c, p, 2)}
		}, false},
		{"multi-lock", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return must(recipes.NewInterProcessMultiLock(c, []string{p + "/a", p + "/b"})).get(t)
		}, true},
	}
}

// leaseOwner shows a Lease as a Locker: Acquire takes one lease, Release
// closes it; Done and Err are the last lease's.
type leaseOwner struct {
	sem *recipes.InterProcessSemaphoreV2
	mu  sync.Mutex
	l   *recipes.Lease
}

func (o *leaseOwner) Acquire(ctx context.Context) error {
	l, err := o.sem.Acquire(ctx)
	if err == nil {
		o.mu.Lock()
		o.l = l
		o.mu.Unlock()
	}
	return err
}

func (o *leaseOwner) lease() *recipes.Lease {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.l
}

func (o *leaseOwner) Release(ctx context.Context) error {
	if l := o.lease(); l != nil {
		return l.Close(ctx)
	}
	return recipes.ErrNotHeld
}

func (o *leaseOwner) Done() <-chan struct{} {
	if l := o.lease(); l != nil {
		return l.Done()
	}
	return closed
}

func (o *leaseOwner) Err() error {
	if l := o.lease(); l != nil {
		return l.Err()
	}
	return recipes.ErrNotHeld
}

func (o *leaseOwner) FencingToken(ctx context.Context) (int64, error) {
	if l := o.lease(); l != nil {
		return l.FencingToken(ctx)
	}
	return 0, recipes.ErrNotHeld
}

// ownershipCycles is how many acquisitions each owner type makes with a
// goroutine waiting on its signal.
const ownershipCycles = 1000

// A goroutine waiting on an acquisition's Done returns when the acquisition
// is released, every time: 1000 acquire/release cycles of each owner type,
// each with a goroutine parked on Done, then one more held while the client
// closes. Err is nil while held and wraps ErrNotHeld after a release, and
// ErrLockLost with framework.ErrClosed after Close; no goroutine is left
// (CheckLeaks, through Begin).
func TestEveryOwnerSignalEndsAtRelease(t *testing.T) {
	for _, k := range ownerKinds() {
		t.Run(k.name, func(t *testing.T) {
			ctx, base := testutil.Begin(t, server.Addr())
			c := newClient(t, "")
			o := k.make(t, c, base)
			park := func() <-chan struct{} {
				done, returned := o.Done(), make(chan struct{})
				go func() {
					select {
					case <-done:
						close(returned)
					case <-ctx.Done(): // the test has failed, or is failing
					}
				}()
				return returned
			}
			for i := 0; i < ownershipCycles; i++ {
				if err := o.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
				if err := o.Err(); err != nil {
					t.Fatalf("cycle %d: Err while held = %v", i, err)
				}
				returned := park()
				if err := o.Release(ctx); err != nil {
					t.Fatal(err)
				}
				select {
				case <-returned:
				case <-ctx.Done():
					t.Fatalf("cycle %d: the goroutine waiting on Done did not return after the release", i)
				}
				if err := o.Err(); !errors.Is(err, recipes.ErrNotHeld) {
					t.Fatalf("cycle %d: Err after release = %v, want ErrNotHeld", i, err)
				}
			}
			if err := o.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			returned := park()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-returned:
			case <-ctx.Done():
				t.Fatal("the goroutine waiting on Done did not return after Close")
			}
			if err := o.Err(); !errors.Is(err, recipes.ErrLockLost) || !errors.Is(err, framework.ErrClosed) {
				t.Fatalf("Err after Close = %v, want ErrLockLost and ErrClosed", err)
			}
		})
	}
}

// Once an acquisition is lost (here SUSPENDED, under the default error
// policy: the connection drops and comes back in the same session, so the
// node is still there), every owner type says so: Done closed, Err wrapping
// ErrLockLost and the state, Acquire failing with it and counting nothing
// (or, for the semaphore mutex, TryAcquire finding the value taken),
// FencingToken failing; and Release still deletes the node, and says the
// lock was lost.
func TestEveryOwnerToldOfLoss(t *testing.T) {
	for _, k := range ownerKinds() {
		t.Run(k.name, func(t *testing.T) {
			ctx, base := testutil.Begin(t, server.Addr())
			proxy := zktest.NewProxy(t, server.Addr())
			c := newClient(t, proxy.Addr())
			o := k.make(t, c, base)
			if err := o.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			nodes := ephemerals(t, base)
			session := c.SessionID()
			proxy.DropConnections()
			waitClosed(ctx, t, o.Done(), "Done after SUSPENDED")
			err := o.Err()
			var se *framework.StateError
			if !errors.Is(err, recipes.ErrLockLost) || !errors.As(err, &se) || se.State != state.Suspended {
				t.Fatalf("Err after SUSPENDED = %v, want ErrLockLost for SUSPENDED", err)
			}
			if err := c.BlockUntilConnected(ctx); err != nil {
				t.Fatal(err)
			}
			if c.SessionID() != session || ephemerals(t, base) != nodes {
				t.Fatalf("session %x (was %x), %d nodes (were %d): the test wants the node kept", c.SessionID(), session, ephemerals(t, base), nodes)
			}
			if k.reentrant {
				testutil.ErrorIs(t, o.Acquire(ctx), recipes.ErrLockLost, "acquire")
			}
			if sm, ok := o.(*recipes.InterProcessSemaphoreMutex); ok {
				testutil.ErrorIs(t, sm.TryAcquire(ctx), recipes.ErrLocked, "this value")
			}
			if f, ok := o.(interface {
				FencingToken(context.Context) (int64, error)
			}); ok {
				if _, err := f.FencingToken(ctx); !errors.Is(err, recipes.ErrLockLost) {
					t.Fatalf("FencingToken after the loss = %v, want ErrLockLost", err)
				}
			}
			if err := o.Err(); !errors.Is(err, recipes.ErrLockLost) {
				t.Fatalf("Err after the calls = %v: a failed Acquire changed it", err)
			}
			releaseLost(ctx, t, o)
			noEphemeralsLeft(t, base, "the lost lock's node deleted after its release")
		})
	}
}

// releaseLost releases o, whose one hold was lost: the release says so,
// and leaves o clean: one Release frees it (nothing was counted since), and
// it acquires (and releases) again.
func releaseLost(ctx context.Context, t *testing.T, o recipes.Locker) {
	t.Helper()
	testutil.ErrorIs(t, o.Release(ctx), recipes.ErrLockLost, "lost")
	if err := o.Err(); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("Err after releasing a lost lock = %v, want ErrLockLost until the next acquisition", err)
	}
	if err := o.Acquire(ctx); err != nil {
		t.Fatalf("Acquire after releasing a lost lock = %v", err)
	}
	if err := o.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A handle that held through a session expiry (the server ended the
// session, so the tree is empty): IsHeld and IsAcquiredInThisProcess say
// false, a reentrant Acquire fails with ErrLockLost and counts nothing, a
// nested WithLock does not run its function, and each Release says the lock
// was lost, down to the holds made before the loss.
func TestReentrantAcquireAfterExpiry(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), framework.WithListener(rec))
	m := mustMutex(t, c, base)
	h := m.NewHandle()
	for range 2 {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := proxy.ExpireSession(c.SessionID()); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(ctx, t, state.Lost)
	rec.WaitFor(ctx, t, state.Reconnected)
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("tree after the expiry: %v", kids)
	}
	if h.IsHeld() || m.IsAcquiredInThisProcess() {
		t.Fatal("reported held after the session expired")
	}
	testutil.ErrorIs(t, h.Acquire(ctx), recipes.ErrLockLost, "acquire")
	ran := false
	testutil.ErrorIs(t, recipes.WithLock(ctx, h, func(context.Context) error { ran = true; return nil }), recipes.ErrLockLost)
	if ran {
		t.Fatal("a nested WithLock ran its function under a lost lock")
	}
	for i := range 2 { // the two holds made before the loss; none since
		testutil.ErrorIs(t, h.Release(ctx), recipes.ErrLockLost, "release")
		if i == 0 && h.LockPath() == "" {
			t.Fatal("the handle was freed with a hold left")
		}
	}
	testutil.ErrorIs(t, h.Release(ctx), recipes.ErrNotHeld, "release")
	if err := h.Acquire(ctx); err != nil {
		t.Fatalf("Acquire in the new session: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A second call on one handle honours its own context, whatever the first
// is doing: while an Acquire with no deadline waits in the queue, TryAcquire
// says ErrLocked at once, an Acquire with a deadline gives up at it, and a
// Release says the handle holds nothing. When the first Acquire is granted,
// the handle holds once.
func TestSecondCallOnAHandleHonoursItsContext(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	m := mustMutex(t, c, base)
	holder, h := m.NewHandle(), m.NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- h.Acquire(ctx) }()
	waitForChildren(t, c, base, 2)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	testutil.ErrorIs(t, h.TryAcquire(short), recipes.ErrLocked, "under way")
	testutil.ErrorIs(t, h.Acquire(short), context.DeadlineExceeded, "acquire")
	testutil.ErrorIs(t, h.Release(short), recipes.ErrNotHeld, "release")
	if kids := children(t, base); len(kids) != 2 {
		t.Fatalf("the refused calls changed the queue: %v", kids)
	}

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, first, "the first Acquire"); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.ErrorIs(t, h.Release(ctx), recipes.ErrNotHeld, "release") // held once: the refused calls counted nothing
}

// A semaphore mutex shared by goroutines holds one acquisition at a time:
// G1 holds and its session expires; in the new session, G2's TryAcquire on
// the same value finds it taken (by G1's lost acquisition, not released
// yet), and G2's Acquire waits. G1's release gives up only its own
// acquisition: G2 then holds, and no one else can take the lock.
func TestSemaphoreMutexSharedThroughAnExpiry(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c, other := newClient(t, proxy.Addr(), framework.WithListener(rec)), newClient(t, "")
	sm := must(recipes.NewInterProcessSemaphoreMutex(c, base)).get(t)
	if err := sm.Acquire(ctx); err != nil { // G1
		t.Fatal(err)
	}
	g1Done := sm.Done()
	if err := proxy.ExpireSession(c.SessionID()); err != nil {
		t.Fatal(err)
	}
	waitClosed(ctx, t, g1Done, "G1's Done after the expiry")
	rec.WaitFor(ctx, t, state.Reconnected)
	testutil.ErrorIs(t, sm.Err(), recipes.ErrLockLost)
	// G2, in the new session, where the lock is free: the value is not.
	testutil.ErrorIs(t, sm.TryAcquire(ctx), recipes.ErrLocked, "this value")
	g2 := make(chan error, 1)
	go func() { g2 <- sm.Acquire(ctx) }()
	testutil.ErrorIs(t, sm.Release(ctx), recipes.ErrLockLost, "lost") // G1 gives up its own, lost acquisition
	if err := testutil.Recv(t, g2, "G2's Acquire"); err != nil {
		t.Fatal(err)
	}
	if err := sm.Err(); err != nil {
		t.Fatalf("G2's Err = %v", err)
	}
	select {
	case <-sm.Done():
		t.Fatal("G2's Done is closed while it holds")
	default:
	}
	contender := must(recipes.NewInterProcessSemaphoreMutex(other, base)).get(t)
	testutil.ErrorIs(t, contender.TryAcquire(ctx), recipes.ErrLocked)
	if err := sm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := contender.TryAcquire(ctx); err != nil {
		t.Fatalf("after G2's release: %v", err)
	}
	if err := contender.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// CURATOR-604, end to end: a waiter's node belongs to a session its client
// has given up (the local timer posted LOST while the server still keeps
// that session), and is first in line when the waiter lists again in the
// new session. The grant must not be reported for that node: it goes with
// the old session, and then someone else may hold the lock. The waiter
// queues again in its new session instead.
func TestGrantRefusesANodeOfAnEarlierSession(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), framework.WithListener(rec), framework.WithSessionTimeout(20*time.Second),
		framework.WithSimulatedSessionExpirationPercent(10)) // LOST 2 s after SUSPENDED
	other := newClient(t, "")
	holder := mustMutex(t, other, base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	h := mustMutex(t, c, base).NewHandle()
	res := make(chan error, 1)
	go func() { res <- h.Acquire(ctx) }()
	waitForChildren(t, other, base, 2)

	old := c.SessionID()
	release := proxy.HoldSession(old) // the server keeps the old session; the client cannot reach it
	defer release()
	rec.WaitFor(ctx, t, state.Suspended)
	if err := holder.Release(ctx); err != nil { // the waiter's node, of the old session, is first now
		t.Fatal(err)
	}
	if s := c.State(); s != state.Suspended {
		t.Fatalf("state %v when the holder released; the test wants the release before LOST", s)
	}
	if err := testutil.Recv(t, res, "the waiter's Acquire"); err != nil {
		t.Fatal(err)
	}
	ok, stat, err := rawConn(t).Exists(h.LockPath())
	if err != nil || !ok || stat.EphemeralOwner != c.SessionID() || c.SessionID() == old {
		t.Fatalf("granted node %s: exists %v, owner %x (%v); client session %x, old %x",
			h.LockPath(), ok, stat.EphemeralOwner, err, c.SessionID(), old)
	}
	if err := rec.Equal(state.Connected, state.Suspended, state.Lost, state.Reconnected); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// LOST from the local timer ends the session: a holder cut off from the
// server longer than the session timeout while the server keeps its
// session (as when the ensemble has no quorum) is told, and when it can
// reach a server again its old session is closed there, so its lock node
// goes at once and another contender takes the lock, though the holder
// never released (Curator users are told that after LOST there is nothing
// to release).
func TestTimerLostFreesTheLockWhenTheServerAnswers(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	const timeout = 20 * time.Second
	c := newClient(t, proxy.Addr(), framework.WithListener(rec), framework.WithSessionTimeout(timeout),
		framework.WithSimulatedSessionExpirationPercent(5))
	h := mustMutex(t, c, base).NewHandle()
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	node := h.LockPath()
	release := proxy.HoldSession(c.SessionID())
	defer release()
	waitClosed(ctx, t, h.Done(), "Done when cut off")
	rec.WaitFor(ctx, t, state.Lost)
	lostAt := time.Now()
	rec.WaitFor(ctx, t, state.Reconnected)

	other := newClient(t, "")
	contender := mustMutex(t, other, base).NewHandle()
	testutil.ErrorIs(t, contender.TryAcquire(ctx), recipes.ErrLocked) // the old session keeps its node meanwhile
	release()
	if err := proxy.WaitRequests(ctx, zktest.OpCloseSession, 1); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, rawConn(t), node)
	if d := time.Since(lostAt); d >= timeout {
		t.Fatalf("the lock node outlived LOST by %v, longer than the server's own expiry (%v)", d, timeout)
	}
	if err := contender.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := contender.Release(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.ErrorIs(t, h.Release(ctx), recipes.ErrLockLost, "lost")
}

// A shared count's listener may close the count: Close returns, and the
// count's goroutine ends (CheckLeaks).
func TestSharedCountClosedFromItsListener(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	count := must(recipes.NewSharedCount(c, base+"/count", 1)).get(t)
	closed := make(chan error, 1)
	count.AddListener(func(n int) {
		if n == 2 {
			closed <- count.Close()
		}
	})
	if err := count.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := count.SetCount(ctx, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close called from the count's listener did not return")
	}
}

// A multi-lock says it is lost as soon as one of its locks does, not a
// moment later when its watcher runs.
func TestMultiLockLostWithItsLock(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	h := mustMutex(t, c, base).NewHandle()
	ml := must(recipes.NewInterProcessMultiLockWithLocks(h)).get(t)
	for round := 0; round < 5; round++ {
		if err := ml.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		proxy.DropConnections()
		waitClosed(ctx, t, h.Done(), "the handle's Done")
		if ml.IsHeld() || !errors.Is(ml.Err(), recipes.ErrLockLost) {
			t.Fatalf("round %d: the handle is lost (%v), the multi-lock says held %v, %v", round, h.Err(), ml.IsHeld(), ml.Err())
		}
		testutil.ErrorIs(t, ml.Release(ctx), recipes.ErrLockLost)
		if err := c.BlockUntilConnected(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A shared count keeps following its node when the client gives its
// session up (the timer's LOST while the server keeps the session): the
// watch set in the old session fires when the client leaves it, and the
// count reads the node again in the new one, though the old session is
// still cut off.
func TestSharedCountFollowsIntoANewSession(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), framework.WithListener(rec), framework.WithSessionTimeout(20*time.Second),
		framework.WithSimulatedSessionExpirationPercent(5))
	other := newClient(t, "")
	count := must(recipes.NewSharedCount(c, base+"/count", 1)).get(t)
	heard := make(chan int, 10)
	count.AddListener(func(n int) { heard <- n })
	if err := count.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer count.Close()
	release := proxy.HoldSession(c.SessionID())
	defer release()
	rec.WaitFor(ctx, t, state.Lost)
	rec.WaitFor(ctx, t, state.Reconnected)
	setter := must(recipes.NewSharedCount(other, base+"/count", 1)).get(t)
	if err := setter.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer setter.Close()
	if err := setter.SetCount(ctx, 7); err != nil {
		t.Fatal(err)
	}
	for n := 0; n != 7; {
		select {
		case n = <-heard:
		case <-ctx.Done():
			t.Fatalf("the count did not follow into the new session: %d", count.Count())
		}
	}
}

// closed is the Done channel of an owner that holds nothing.
var closed = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
