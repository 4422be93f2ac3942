package compat_test

import (
	"testing"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// The server expires the holder's session while a contender of the other
// language waits behind it: the waiter acquires once the server has removed
// the holder's nodes. Java's side: its client (through a fault-injecting
// proxy) hears LOST and then RECONNECTED with a new session, as Curator
// reports it, and its release afterwards is harmless. Go's side: the Go
// holder is told its lock is lost. The subtests run in parallel: each has its
// own proxy, clients and lock names.
func TestSessionExpiry(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "expiry")
	p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	for _, r := range allRecipes() {
		if r.name == "read" {
			continue // readers do not wait for readers
		}
		t.Run(r.name+"/java-holder-expires", func(t *testing.T) {
			t.Parallel() // most of the time goes on clients reconnecting after the expiry
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			proxy := zktest.NewProxy(t, server.Addr())
			jx := "jx-" + r.name
			jsid := p.client(t, jx, proxy.Addr())
			defer p.do(t, "-", "close-client", jx)
			jl := r.javaLock(t, p, "x-"+r.name, jx, base)
			if !acquired(t, javaAcquire(p, "x1-"+r.name, jl, r.full()).must(t)) {
				t.Fatal("Java did not acquire a free lock")
			}
			o := r.goOwner(t, gc, base, 1)
			got := asyncAcquire(ctx, o)
			waitChildren(t, gc, r.queuePath(base), r.heldNodes+1)
			notYet(t, got, "Go's Acquire")

			must(t, proxy.ExpireSession(jsid))
			must(t, <-got)
			p.mustEvent(t, "state "+jx+" LOST")
			p.mustEvent(t, "state "+jx+" RECONNECTED")
			if sid := p.sessionID(t, jx); sid == jsid {
				t.Fatalf("Java's session is still %x after expiry", sid)
			}
			// Curator does not notice the lock is gone; releasing it deletes
			// nothing and is no error.
			p.do(t, "x1-"+r.name, "release", jl)
			if got := ownedBy(t, gc, r.queuePath(base), jsid); len(got) != 0 {
				t.Fatalf("nodes of the expired session: %v", got)
			}
			must(t, o.Release(ctx))
		})
		t.Run(r.name+"/go-holder-expires", func(t *testing.T) {
			t.Parallel()
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			proxy := zktest.NewProxy(t, server.Addr())
			gx := newClient(t, proxy.Addr())
			o := r.goOwner(t, gx, base, r.full())
			must(t, o.Acquire(ctx))
			jl := r.javaLock(t, p, "y-"+r.name, "jc", base)
			got := javaAcquire(p, "y1-"+r.name, jl, 1)
			waitChildren(t, gc, r.queuePath(base), r.heldNodes+1)
			if got.answered() {
				t.Fatalf("Java acquired (%q) while Go held the lock", got.reply)
			}

			must(t, proxy.ExpireSession(gx.SessionID()))
			if !acquired(t, got.must(t)) {
				t.Fatal("Java's untimed acquire returned false")
			}
			select {
			case <-o.Done():
			case <-ctx.Done():
				t.Fatal("the Go holder was not told its lock is lost")
			}
			p.do(t, "y1-"+r.name, "release", jl)
			if err := o.Release(ctx); err != nil {
				t.Logf("Go release after the session expired: %v", err)
			}
		})
	}
}
