package compat_test

import (
	"testing"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// The server expires the holder's session while a contender of the other
// language waits behind it: the waiter acquires once the server has removed
// the holder's nodes, and not before (each contender enters the guards the
// moment it is granted; the holder leaves them just before its session is
// expired). Java's side: its client (through a fault-injecting proxy) hears
// LOST and then RECONNECTED with a new session, as Curator reports it, and
// its release afterwards is harmless. Go's side: the Go holder is told its
// lock is lost, and its Release says so. The subtests run in parallel: each
// has its own proxy, clients and lock names.
func TestSessionExpiry(t *testing.T) {
	testutil.CheckLeaks(t)
	java, golang := sides(t, "expiry")
	gc, raw := golang.gc, testutil.Connect(t, server.Addr())
	for _, r := range blockingRecipes() {
		t.Run(r.name+"/java-holder-expires", func(t *testing.T) {
			t.Parallel() // most of the time goes on clients reconnecting after the expiry
			base := serverPath(t)
			proxy := zktest.NewProxy(t, server.Addr())
			jx := javaSide(t, java.p, "jx-"+r.name, proxy.Addr())
			defer java.p.do(t, "-", "close-client", jx.jc)
			guards := newGuards(t, r.guardPaths)
			holder := jx.contend(t, r, base, r.max, guards, "java-holder")
			holder.granted(t)
			waiter := golang.contend(t, r, base, 1, guards, "go-waiter")
			queued(t, raw, r, base, waiter)

			// The Java holder's hold ends with its session: it leaves the
			// guards just before the server expires it.
			holder.leave(t)
			testutil.Must(t, proxy.ExpireSession(jx.sid))
			waiter.granted(t)
			java.p.mustEvent(t, "state "+jx.jc+" LOST")
			java.p.mustEvent(t, "state "+jx.jc+" RECONNECTED")
			if sid := java.p.sessionID(t, jx.jc); sid == jx.sid {
				t.Fatalf("Java's session is still %x after expiry", sid)
			}
			// Curator does not notice the lock is gone; releasing it deletes
			// nothing and is no error.
			holder.release(t)
			if got := ownedBy(t, gc, r.queuePath(base), jx.sid); len(got) != 0 {
				t.Fatalf("nodes of the expired session: %v", got)
			}
			passed(t, guards, holder, waiter)
		})
		t.Run(r.name+"/go-holder-expires", func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			base := serverPath(t)
			proxy := zktest.NewProxy(t, server.Addr())
			gx := side{gc: newClient(t, proxy.Addr())}
			guards := newGuards(t, r.guardPaths)
			holder := gx.contend(t, r, base, r.max, guards, "go-holder").(*goHolder)
			holder.granted(t)
			waiter := java.contend(t, r, base, 1, guards, "java-waiter")
			queued(t, raw, r, base, waiter)

			// The Go holder's hold ends with its session: it leaves the
			// guards just before the server expires it.
			holder.leave(t)
			testutil.Must(t, proxy.ExpireSession(gx.session()))
			waiter.granted(t)
			testutil.Recv(t, holder.o.Done(), "the Go holder's notice that its lock is lost")
			testutil.ErrorIs(t, holder.o.Err(), recipes.ErrLockLost)
			// Release after the loss still cleans up, and says the lock was lost.
			testutil.ErrorIs(t, holder.o.Release(ctx), recipes.ErrLockLost)
			passed(t, guards, holder, waiter)
		})
	}
}
