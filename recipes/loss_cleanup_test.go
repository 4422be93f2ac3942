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

// exclusiveKind is an owner type with a rival: made on another client at
// the same path, the rival cannot hold while the owner does.
type exclusiveKind struct {
	name         string
	owner, rival func(t *testing.T, c *framework.Client, path string) recipes.Locker
}

func exclusiveKinds() []exclusiveKind {
	mutex := func(t *testing.T, c *framework.Client, p string) recipes.Locker {
		return mustMutex(t, c, p).NewHandle()
	}
	writer := func(t *testing.T, c *framework.Client, p string) recipes.Locker {
		return mustRW(t, c, p).NewHandle().WriteLock()
	}
	semMutex := func(t *testing.T, c *framework.Client, p string) recipes.Locker {
		return must(recipes.NewInterProcessSemaphoreMutex(c, p)).get(t)
	}
	lease := func(t *testing.T, c *framework.Client, p string) recipes.Locker {
		return &leaseOwner{sem: mustSemaphore(t, c, p, 1)}
	}
	multi := func(t *testing.T, c *framework.Client, p string) recipes.Locker {
		return must(recipes.NewInterProcessMultiLock(c, []string{p + "/a", p + "/b"})).get(t)
	}
	return []exclusiveKind{
		{"mutex", mutex, mutex},
		{"write lock", writer, writer},
		{"read lock", func(t *testing.T, c *framework.Client, p string) recipes.Locker {
			return mustRW(t, c, p).NewHandle().ReadLock()
		}, writer},
		{"semaphore mutex", semMutex, semMutex},
		{"lease", lease, lease},
		{"multi-lock", multi, multi},
	}
}

// A blip (the connection drops and comes back in the same session) ends
// every owner type's grant, under the default error policy, and its owner
// never releases it: the library deletes the node itself, so the lock is
// not wedged — but not before the servers themselves could have expired the
// session (the loss's ExpiryBound: the session timeout after the last
// renewal the client is sure of), so the holder told of the loss keeps
// that margin to stop. A rival on another client then holds. The owner's Release, late,
// still says the lock was lost, and leaves it clean: it acquires again.
func TestLostGrantLeavesNothingBehind(t *testing.T) {
	for _, k := range exclusiveKinds() {
		t.Run(k.name, func(t *testing.T) {
			ctx, base := testutil.Begin(t, server.Addr())
			proxy := zktest.NewProxy(t, server.Addr())
			rec := testutil.NewStateRecorder()
			c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(lossTimeout), framework.WithListener(rec))
			o, rival := k.owner(t, c, base), k.rival(t, newClient(t, ""), base)
			if err := o.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			session := c.SessionID()
			proxy.DropConnections()
			waitClosed(ctx, t, o.Done(), "Done after SUSPENDED")
			toldAt := time.Now()
			var se *framework.StateError
			if err := o.Err(); !errors.As(err, &se) || se.State != state.Suspended || se.ExpiryBound.IsZero() {
				t.Fatalf("Err after the blip = %v, want SUSPENDED with an expiry bound", err)
			}
			reconnected(ctx, t, rec, c, session)
			if err := rival.Acquire(ctx); err != nil {
				t.Fatalf("the rival could not take the lock its lost owner never released: %v", err)
			}
			heldAt := time.Now()
			if heldAt.Before(se.ExpiryBound) {
				t.Fatalf("the rival held %v after the owner was told, %v before the servers could have expired its session",
					heldAt.Sub(toldAt), se.ExpiryBound.Sub(heldAt))
			}
			t.Logf("told %v, rival held %v after", toldAt.Format("15:04:05.000"), heldAt.Sub(toldAt))
			if err := rival.Release(ctx); err != nil {
				t.Fatal(err)
			}
			releaseLost(ctx, t, o)
		})
	}
}

// lossTimeout is the session timeout of the loss tests: long enough that a
// client whose connection drops reconnects in the same session.
const lossTimeout = 2 * time.Second

// reconnected waits for RECONNECTED and fails the test unless c is still in
// session: the loss tests want a blip, not an expiry.
func reconnected(ctx context.Context, t *testing.T, rec *testutil.StateRecorder, c *framework.Client, session int64) {
	t.Helper()
	rec.WaitFor(ctx, t, state.Reconnected)
	if c.SessionID() != session {
		t.Fatalf("session %x, was %x: the test wants the session kept (a blip)", c.SessionID(), session)
	}
}

// Under state.SessionErrorPolicy a holder cut off from the servers (a black
// hole: it hears nothing, and the servers nothing from it) is told it lost
// the lock before the servers could expire its session, and so before a
// rival on another client can hold: Curator's rule (LOST at SUSPENDED + the
// session timeout) tells it up to ⅔ of the timeout after a rival holds.
func TestSessionPolicyHolderToldBeforeARivalHolds(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(4*time.Second),
		framework.WithErrorPolicy(state.SessionErrorPolicy{}))
	h := mustMutex(t, c, base).NewHandle()
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	told, stop := make(chan time.Time, 1), make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Add(1)
	go func() { // ends with the test, told or not
		defer watcher.Done()
		select {
		case <-h.Done():
			told <- time.Now()
		case <-stop:
		}
	}()
	t.Cleanup(func() {
		close(stop)
		testutil.Wait(t, &watcher, "the Done watcher")
	})
	rival := mustMutex(t, newClient(t, ""), base).NewHandle()
	proxy.BlackHole()
	if err := rival.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	heldAt := time.Now()
	toldAt := testutil.Recv(t, told, "the holder's loss notice")
	if !toldAt.Before(heldAt) {
		t.Fatalf("the holder was told %v after a rival held", toldAt.Sub(heldAt))
	}
	bound := proxy.LastReply().Add(c.SessionTimeout())
	if !toldAt.Before(bound) {
		t.Fatalf("the holder was told %v after its last contact + the session timeout", toldAt.Sub(bound))
	}
	t.Logf("told %v before the rival held, %v before last contact + T", heldAt.Sub(toldAt), bound.Sub(toldAt))
	if err := rival.Release(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.Restore()
	testutil.ErrorIs(t, h.Release(ctx), recipes.ErrLockLost)
}
