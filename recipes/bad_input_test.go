package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

func errOf[T any](_ T, err error) error { return err }

// recipeCtor is one of the package's constructors (or Revoke, which also
// takes a client and a path), as a function of both.
type recipeCtor struct {
	name string
	make func(c *framework.Client, path string) error
}

// recipeCtors returns every constructor; count is the SharedCount the
// semaphore with a count is made with.
func recipeCtors(ctx context.Context, count *recipes.SharedCount) []recipeCtor {
	return []recipeCtor{
		{"mutex", func(c *framework.Client, p string) error { return errOf(recipes.NewInterProcessMutex(c, p)) }},
		{"read-write lock", func(c *framework.Client, p string) error { return errOf(recipes.NewInterProcessReadWriteLock(c, p)) }},
		{"semaphore", func(c *framework.Client, p string) error { return errOf(recipes.NewInterProcessSemaphoreV2(c, p, 2)) }},
		{"semaphore with a count", func(c *framework.Client, p string) error {
			return errOf(recipes.NewInterProcessSemaphoreV2WithCount(c, p, count))
		}},
		{"semaphore mutex", func(c *framework.Client, p string) error { return errOf(recipes.NewInterProcessSemaphoreMutex(c, p)) }},
		{"multi-lock", func(c *framework.Client, p string) error {
			return errOf(recipes.NewInterProcessMultiLock(c, []string{p}))
		}},
		{"shared count", func(c *framework.Client, p string) error { return errOf(recipes.NewSharedCount(c, p, 1)) }},
		{"shared value", func(c *framework.Client, p string) error { return errOf(recipes.NewSharedValue(c, p, nil)) }},
		{"revoke", func(c *framework.Client, p string) error { return recipes.Revoke(ctx, c, p) }},
	}
}

// Every constructor refuses a nil client, a closed client and every bad
// path (the root included), naming the problem, and makes nothing.
func TestConstructorsRefuseBadArguments(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	nothingCreated := testutil.NothingCreated(t, server.Addr(), base)
	good, closed := newClient(t, ""), newClient(t, "")
	closed.Close()
	count := must(recipes.NewSharedCount(good, base+"/count", 1)).get(t) // not started: makes nothing
	bad := append(testutil.BadPaths(base), testutil.BadPath{Path: "/", Problem: "must not be the root"})
	for _, ctor := range recipeCtors(ctx, count) {
		t.Run(ctor.name, func(t *testing.T) {
			testutil.ErrorIs(t, ctor.make(nil, base+"/x"), framework.ErrInvalidArgument, "nil client")
			testutil.ErrorIs(t, ctor.make(closed, base+"/x"), framework.ErrClosed, "client is closed")
			for _, b := range bad {
				testutil.ErrorIs(t, ctor.make(good, b.Path), zk.ErrInvalidPath, b.Problem)
				testutil.ErrorIs(t, ctor.make(good, b.Path), framework.ErrInvalidArgument, b.Problem)
			}
		})
	}
	nothingCreated()
}

// Zero or negative limits and quantities, counts out of range, multi-locks
// of nothing or of locks that would wait for each other: each an error
// wrapping framework.ErrInvalidArgument that says what is wrong, and nothing made.
func TestBadCountsAndLockLists(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	nothingCreated := testutil.NothingCreated(t, server.Addr(), base)
	c := newClient(t, "")
	sem := mustSemaphore(t, c, base+"/sem", 2)
	sm, sm2 := must(recipes.NewInterProcessSemaphoreMutex(c, base+"/sm")).get(t), must(recipes.NewInterProcessSemaphoreMutex(c, base+"/sm")).get(t)
	m := mustMutex(t, c, base+"/m")
	rw := mustRW(t, c, base+"/rw")
	inner := must(recipes.NewInterProcessMultiLockWithLocks(sm)).get(t)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"maxLeases 0", errOf(recipes.NewInterProcessSemaphoreV2(c, base+"/s", 0)), "maxLeases 0"},
		{"maxLeases -1", errOf(recipes.NewInterProcessSemaphoreV2(c, base+"/s", -1)), "maxLeases -1"},
		{"nil count", errOf(recipes.NewInterProcessSemaphoreV2WithCount(c, base+"/s", nil)), "nil or zero SharedCount"},
		{"count seed too large", errOf(recipes.NewSharedCount(c, base+"/s", 1<<40)), "int32 range"},
		{"AcquireN 0", errOf(sem.AcquireN(ctx, 0)), "qty 0"},
		{"AcquireN -1", errOf(sem.AcquireN(ctx, -1)), "qty -1"},
		{"TryAcquireN 0", errOf(sem.TryAcquireN(ctx, 0)), "qty 0"},
		{"TryAcquireN -2", errOf(sem.TryAcquireN(ctx, -2)), "qty -2"},
		{"AcquireN more than maxLeases", errOf(sem.AcquireN(ctx, 3)), "qty 3 is more than the 2 leases"},
		{"TryAcquireN more than maxLeases", errOf(sem.TryAcquireN(ctx, 5)), "qty 5 is more than the 2 leases"},
		{"multi-lock of a path inside another", errOf(recipes.NewInterProcessMultiLock(c, []string{base + "/x", base + "/x/-sub"})), "is inside lock"},
		{"multi-lock of a lock inside a semaphore", errOf(recipes.NewInterProcessMultiLockWithLocks(sm, mustMutex(t, c, base+"/sm/locks").NewHandle())), "is inside lock"},
		{"multi-lock of nil paths", errOf(recipes.NewInterProcessMultiLock(c, nil)), "at least one path"},
		{"multi-lock of no paths", errOf(recipes.NewInterProcessMultiLock(c, []string{})), "at least one path"},
		{"multi-lock of a path twice", errOf(recipes.NewInterProcessMultiLock(c, []string{base + "/a", base + "/b", base + "/a"})), "given twice"},
		{"multi-lock of no lockers", errOf(recipes.NewInterProcessMultiLockWithLocks()), "at least one lock"},
		{"nil locker", errOf(recipes.NewInterProcessMultiLockWithLocks(m.NewHandle(), nil)), "lock 1: nil locker"},
		{"nil handle", errOf(recipes.NewInterProcessMultiLockWithLocks((*recipes.Handle)(nil))), "nil handle"},
		{"zero handle", errOf(recipes.NewInterProcessMultiLockWithLocks(&recipes.Handle{})), "not from NewHandle"},
		{"nil semaphore mutex", errOf(recipes.NewInterProcessMultiLockWithLocks((*recipes.InterProcessSemaphoreMutex)(nil))), "nil semaphore mutex"},
		{"zero semaphore mutex", errOf(recipes.NewInterProcessMultiLockWithLocks(&recipes.InterProcessSemaphoreMutex{})), "nil semaphore mutex"},
		{"nil multi-lock", errOf(recipes.NewInterProcessMultiLockWithLocks((*recipes.InterProcessMultiLock)(nil))), "nil or zero multi-lock"},
		{"semaphore mutex twice", errOf(recipes.NewInterProcessMultiLockWithLocks(sm, sm)), "wait for each other"},
		{"two semaphore mutexes on one path", errOf(recipes.NewInterProcessMultiLockWithLocks(sm, sm2)), "wait for each other"},
		{"two handles of one mutex", errOf(recipes.NewInterProcessMultiLockWithLocks(m.NewHandle(), m.NewHandle())), "wait for each other"},
		{"two mutexes on one path", errOf(recipes.NewInterProcessMultiLockWithLocks(m.NewHandle(), mustMutex(t, c, base+"/m").NewHandle())), "wait for each other"},
		{"two owners' write locks", errOf(recipes.NewInterProcessMultiLockWithLocks(rw.NewHandle().WriteLock(), rw.NewHandle().WriteLock())), "wait for each other"},
		{"two owners' read locks", errOf(recipes.NewInterProcessMultiLockWithLocks(rw.NewHandle().ReadLock(), rw.NewHandle().ReadLock())), "wait for each other"},
		{"a lock inside a multi-lock again", errOf(recipes.NewInterProcessMultiLockWithLocks(inner, sm)), "wait for each other"},
	} {
		testutil.ErrorIs(t, tc.err, framework.ErrInvalidArgument, tc.want)
	}
	nothingCreated()
}

// One handle twice, or both halves of one read-write owner, may be one
// multi-lock: taken, they count up (or downgrade), and release in full.
func TestMultiLockOfOneOwnerTwice(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	h := mustMutex(t, c, base+"/m").NewHandle()
	o := mustRW(t, c, base+"/rw").NewHandle()
	for _, locks := range [][]recipes.Locker{{h, h}, {o.WriteLock(), o.ReadLock()}} {
		ml := must(recipes.NewInterProcessMultiLockWithLocks(locks...)).get(t)
		if err := ml.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := ml.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if n := ephemerals(t, base); n != 0 {
			t.Fatalf("%d lock nodes left after release", n)
		}
	}
}

// ephemerals counts the ephemeral nodes at and below path.
// noEphemeralsLeft waits until no ephemeral node is left at or below path:
// for a delete the library makes in the background (after a loss).
func noEphemeralsLeft(t *testing.T, path, what string) {
	t.Helper()
	testutil.Until(t, what, func() (bool, string) {
		n := ephemerals(t, path)
		return n == 0, fmt.Sprintf("%d lock nodes left", n)
	})
}

func ephemerals(t *testing.T, path string) int {
	t.Helper()
	_, st, err := rawConn(t).Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if st.EphemeralOwner != 0 {
		n++
	}
	for _, k := range children(t, path) {
		n += ephemerals(t, path+"/"+k)
	}
	return n
}

// Releasing what was never taken, releasing twice, and releasing through
// another handle of the same lock are errors wrapping ErrNotHeld; the last
// leaves the holder's nodes alone.
func TestReleaseWhatIsNotHeld(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	for _, tc := range []struct {
		name string
		pair func(path string) (holder, other recipes.Locker)
	}{
		{"mutex", func(p string) (recipes.Locker, recipes.Locker) {
			m := mustMutex(t, c, p)
			return m.NewHandle(), m.NewHandle()
		}},
		{"read lock", func(p string) (recipes.Locker, recipes.Locker) {
			rw := mustRW(t, c, p)
			return rw.NewHandle().ReadLock(), rw.NewHandle().ReadLock()
		}},
		{"write lock", func(p string) (recipes.Locker, recipes.Locker) {
			rw := mustRW(t, c, p)
			return rw.NewHandle().WriteLock(), rw.NewHandle().WriteLock()
		}},
		{"semaphore mutex", func(p string) (recipes.Locker, recipes.Locker) {
			return must(recipes.NewInterProcessSemaphoreMutex(c, p)).get(t), must(recipes.NewInterProcessSemaphoreMutex(c, p)).get(t)
		}},
		{"multi-lock", func(p string) (recipes.Locker, recipes.Locker) {
			paths := []string{p + "/a", p + "/b"}
			return must(recipes.NewInterProcessMultiLock(c, paths)).get(t), must(recipes.NewInterProcessMultiLock(c, paths)).get(t)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := base + "/" + tc.name
			holder, other := tc.pair(path)
			testutil.ErrorIs(t, holder.Release(ctx), recipes.ErrNotHeld, "release")
			if err := holder.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			held := ephemerals(t, path)
			testutil.ErrorIs(t, other.Release(ctx), recipes.ErrNotHeld, "release")
			if n := ephemerals(t, path); n != held || n == 0 {
				t.Fatalf("%d lock nodes after another handle's release, %d before", n, held)
			}
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			testutil.ErrorIs(t, holder.Release(ctx), recipes.ErrNotHeld, "release")
			if n := ephemerals(t, path); n != 0 {
				t.Fatalf("%d lock nodes left after release", n)
			}
		})
	}

	l := must(mustSemaphore(t, c, base+"/sem", 1).Acquire(ctx)).get(t)
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.ErrorIs(t, l.Close(ctx), recipes.ErrNotHeld, "close lease", l.Path())
}

// lockOp is one way of taking a lock.
type lockOp struct {
	name string
	do   func(ctx context.Context) error
}

// lockOps returns every way of taking a lock at path, on recipes made now
// with client c.
func lockOps(t *testing.T, c *framework.Client, path string) []lockOp {
	m, rw, sem := mustMutex(t, c, path), mustRW(t, c, path), mustSemaphore(t, c, path, 2)
	sm := must(recipes.NewInterProcessSemaphoreMutex(c, path)).get(t)
	ml := must(recipes.NewInterProcessMultiLock(c, []string{path + "/a", path + "/b"})).get(t)
	return []lockOp{
		{"mutex Acquire", m.NewHandle().Acquire},
		{"mutex TryAcquire", m.NewHandle().TryAcquire},
		{"read lock Acquire", rw.NewHandle().ReadLock().Acquire},
		{"write lock TryAcquire", rw.NewHandle().WriteLock().TryAcquire},
		{"semaphore Acquire", func(ctx context.Context) error { return errOf(sem.Acquire(ctx)) }},
		{"semaphore AcquireN", func(ctx context.Context) error { return errOf(sem.AcquireN(ctx, 2)) }},
		{"semaphore TryAcquire", func(ctx context.Context) error { return errOf(sem.TryAcquire(ctx)) }},
		{"semaphore mutex Acquire", sm.Acquire},
		{"multi-lock Acquire", ml.Acquire},
		{"multi-lock TryAcquire", ml.TryAcquire},
		{"WithLock", func(ctx context.Context) error {
			return recipes.WithLock(ctx, m.NewHandle(), func(context.Context) error {
				t.Error("WithLock ran its function")
				return nil
			})
		}},
	}
}

// made is what a constructor returned: must(NewX(...)).get(t) is the value,
// or the test fails with the error.
type made[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) made[T] { return made[T]{v, err} }

func (m made[T]) get(t testing.TB) T {
	t.Helper()
	if m.err != nil {
		t.Fatal(m.err)
	}
	return m.v
}

// Every call that takes a context refuses a nil one with an error wrapping
// framework.ErrInvalidArgument, never a panic, and creates nothing.
func TestNilContext(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	nothingCreated := testutil.NothingCreated(t, server.Addr(), base)
	c := newClient(t, "")
	var nilCtx context.Context
	for _, op := range lockOps(t, c, base+"/lock") {
		t.Run(op.name, func(t *testing.T) { testutil.ErrorIs(t, op.do(nilCtx), framework.ErrInvalidArgument, "nil context") })
	}
	h := mustMutex(t, c, base+"/m").NewHandle()
	sem := mustSemaphore(t, c, base+"/sem", 1)
	count := must(recipes.NewSharedCount(c, base+"/count", 1)).get(t)
	for name, err := range map[string]error{
		"release":            h.Release(nilCtx),
		"fencing token":      errOf(h.FencingToken(nilCtx)),
		"semaphore mutex":    must(recipes.NewInterProcessSemaphoreMutex(c, base+"/sm")).get(t).Release(nilCtx),
		"multi-lock release": must(recipes.NewInterProcessMultiLock(c, []string{base + "/a"})).get(t).Release(nilCtx),
		"participants":       errOf(sem.ParticipantNodes(nilCtx)),
		"shared count Start": count.Start(nilCtx),
		"revoke":             recipes.Revoke(nilCtx, c, base+"/m"),
		"with lock":          recipes.WithLock(nilCtx, h, func(context.Context) error { return nil }),
	} {
		t.Run(name, func(t *testing.T) { testutil.ErrorIs(t, err, framework.ErrInvalidArgument, "nil context") })
	}
	nothingCreated()
	l := must(sem.Acquire(ctx)).get(t)
	testutil.ErrorIs(t, l.Close(nilCtx), framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, errOf(l.FencingToken(nilCtx)), framework.ErrInvalidArgument, "nil context")
	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// An acquisition with a context that has already ended fails with the
// context's error and creates no node.
func TestAcquireWithCancelledContext(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	nothingCreated := testutil.NothingCreated(t, server.Addr(), base)
	c := newClient(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range lockOps(t, c, base+"/lock") {
		t.Run(op.name, func(t *testing.T) { testutil.ErrorIs(t, op.do(ctx), context.Canceled, "acquire") })
	}
	nothingCreated()
}

// Once its client is closed, a recipe's operations fail with
// framework.ErrClosed; what was held counts as released, and the session's
// nodes are gone.
func TestUseAfterClose(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	held := mustMutex(t, c, base+"/held").NewHandle()
	if err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	node := held.LockPath()
	lease := must(mustSemaphore(t, c, base+"/sem", 1).Acquire(ctx)).get(t)
	ops := lockOps(t, c, base+"/lock") // made before Close: the constructors refuse a closed client
	m, rw, sem := mustMutex(t, c, base+"/m"), mustRW(t, c, base+"/rw"), mustSemaphore(t, c, base+"/s", 1)
	count := must(recipes.NewSharedCount(c, base+"/count", 1)).get(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			testutil.ErrorIs(t, op.do(ctx), framework.ErrClosed, "acquire", "client is closed")
		})
	}
	for name, err := range map[string]error{
		"mutex participants":      errOf(m.ParticipantNodes(ctx)),
		"read-write participants": errOf(rw.ParticipantNodes(ctx)),
		"semaphore participants":  errOf(sem.ParticipantNodes(ctx)),
		"lease data":              errOf(lease.Data(ctx)),
		"shared count Start":      count.Start(ctx),
		"revoke":                  recipes.Revoke(ctx, c, node),
		"release":                 held.Release(ctx),
		"lease close":             lease.Close(ctx),
	} {
		if !errors.Is(err, framework.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if held.IsHeld() {
		t.Error("the handle still holds after its release")
	}
	assertClosed(t, held.Done(), "Lost of the released handle")
	if n := ephemerals(t, base); n != 0 {
		t.Errorf("%d lock nodes left after Close", n)
	}
}

// Lock and lease data too large for the server is refused when acquiring,
// with a clear error, without a node left behind or the connection
// disturbed (the server would drop it); the client goes on working.
func TestOversizedLockData(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	states := testutil.NewStateRecorder()
	c := newClient(t, "", framework.WithListener(states))
	states.WaitFor(ctx, t, state.Connected)
	big := make([]byte, framework.DefaultJuteMaxBuffer)
	for name, acquire := range map[string]func() error{
		"mutex": func() error { return mustMutex(t, c, base+"/m", recipes.WithLockData(big)).NewHandle().Acquire(ctx) },
		"read lock": func() error {
			return mustRW(t, c, base+"/rw", recipes.WithLockData(big)).NewHandle().ReadLock().Acquire(ctx)
		},
		"write lock": func() error {
			return mustRW(t, c, base+"/rw", recipes.WithLockData(big)).NewHandle().WriteLock().Acquire(ctx)
		},
		"semaphore": func() error {
			return errOf(mustSemaphore(t, c, base+"/s", 2, recipes.WithLeaseData(big)).AcquireN(ctx, 2))
		},
		"semaphore mutex": func() error {
			return must(recipes.NewInterProcessSemaphoreMutex(c, base+"/sm", recipes.WithLeaseData(big))).get(t).Acquire(ctx)
		},
	} {
		err := acquire()
		testutil.ErrorIs(t, err, framework.ErrInvalidArgument, "jute.maxbuffer")
		if n := ephemerals(t, base); n != 0 {
			t.Errorf("%s: %d lock nodes left", name, n)
		}
	}
	if err := lockRounds(ctx, mustMutex(t, c, base+"/m").NewHandle(), 1, func(int) error { return nil }); err != nil {
		t.Fatalf("a lock with ordinary data after the refusals: %v", err)
	}
	if err := states.Equal(state.Connected); err != nil {
		t.Fatalf("the connection was disturbed: %v", err)
	}
}
