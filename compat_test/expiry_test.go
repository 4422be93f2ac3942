package compat_test

import (
	"errors"
	"slices"
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
	p := startPeer(t, "expiry")
	jcsid := p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	for _, r := range allRecipes() {
		if r.name == "read" {
			continue // readers do not wait for readers
		}
		t.Run(r.name+"/java-holder-expires", func(t *testing.T) {
			t.Parallel() // most of the time goes on clients reconnecting after the expiry
			ctx := testutil.Context(t)
			base := serverPath(t)
			proxy := zktest.NewProxy(t, server.Addr())
			jx := "jx-" + r.name
			jsid := p.client(t, jx, proxy.Addr())
			defer p.do(t, "-", "close-client", jx)
			guards := newGuards(t, r.guardPaths)
			jl := r.javaLock(t, p, "x-"+r.name, jx, base)
			holder := javaHold(p, "x1-"+r.name, jl, r.full(), guards, r.kind, r.max, "java-holder")
			holder.granted(t)
			o := r.goOwner(t, gc, base, 1)
			waiter := goWait(ctx, o, guards, r.kind, r.max, 1, "go-waiter")
			waitChildren(t, gc, r.queuePath(base), r.heldNodes+1)
			r.waiting(t, waiter, gc.SessionID(), base)

			// The Java holder's hold ends with its session: it leaves the
			// guards just before the server expires it.
			holder.leave(t)
			must(t, proxy.ExpireSession(jsid))
			leave := waiter.granted(t)
			p.mustEvent(t, "state "+jx+" LOST")
			p.mustEvent(t, "state "+jx+" RECONNECTED")
			if sid := p.sessionID(t, jx); sid == jsid {
				t.Fatalf("Java's session is still %x after expiry", sid)
			}
			// Curator does not notice the lock is gone; releasing it deletes
			// nothing and is no error.
			holder.release(t)
			if got := ownedBy(t, gc, r.queuePath(base), jsid); len(got) != 0 {
				t.Fatalf("nodes of the expired session: %v", got)
			}
			leave()
			must(t, o.Release(ctx))
			checkGuards(t, guards)
			checkLog(t, guards, append(slices.Repeat([]string{"java-holder"}, r.full()), "go-waiter")...)
		})
		t.Run(r.name+"/go-holder-expires", func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			base := serverPath(t)
			proxy := zktest.NewProxy(t, server.Addr())
			gx := newClient(t, proxy.Addr())
			guards := newGuards(t, r.guardPaths)
			o := r.goOwner(t, gx, base, r.full())
			must(t, o.Acquire(ctx))
			leave := goEnter(guards, r.kind, r.max, r.full(), "go-holder")
			jl := r.javaLock(t, p, "y-"+r.name, "jc", base)
			waiter := javaHold(p, "y1-"+r.name, jl, 1, guards, r.kind, r.max, "java-waiter")
			waitChildren(t, gc, r.queuePath(base), r.heldNodes+1)
			r.waiting(t, waiter, jcsid, base)

			// The Go holder's hold ends with its session: it leaves the
			// guards just before the server expires it.
			leave()
			must(t, proxy.ExpireSession(gx.SessionID()))
			waiter.granted(t)
			select {
			case <-o.Done():
			case <-ctx.Done():
				t.Fatal("the Go holder was not told its lock is lost")
			}
			if err := o.Err(); !errors.Is(err, recipes.ErrLockLost) {
				t.Fatalf("the Go holder's Err after its session expired = %v, want ErrLockLost", err)
			}
			waiter.release(t)
			// Release after the loss still cleans up, and says the lock was lost.
			if err := o.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
				t.Fatalf("Go release after the session expired = %v, want ErrLockLost", err)
			}
			checkGuards(t, guards)
			checkLog(t, guards, append(slices.Repeat([]string{"go-holder"}, r.full()), "java-waiter")...)
		})
	}
}
