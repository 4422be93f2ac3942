package compat_test

import (
	"context"
	"sync"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Revocation both ways. Go writes __REVOKE__ to a Java holder's node
// (recipes.Revoke) and Curator's revocation listener runs, releases, and the
// waiting Go contender acquires; Curator's Revoker.attemptRevoke revokes a Go
// holder, the Go listener runs and releases, and the waiting Java contender
// acquires, and not before the holder was revoked (each contender enters
// the guards the moment it is granted; the holder leaves them when it is
// revoked). A revocable holder's node is empty in both languages.
func TestRevocation(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "revocation")
	jsid := p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	for _, hc := range handoffCases() {
		if !hc.holder.revocable {
			continue // Curator's semaphores and multi-lock are not Revocable
		}
		t.Run(hc.name+"/go-revokes-java", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, hc.holder.guardPaths)
			jl := hc.holder.javaLock(t, p, "jr-"+t.Name(), "jc", base)
			p.do(t, "-", "revocable", jl, "release-on=r1")
			holder := javaHold(p, "r1", jl, 1, guards, hc.holder.kind, hc.holder.max, "java-holder")
			holder.granted(t)
			nodes := ownedBy(t, gc, base, jsid)
			if len(nodes) != 1 {
				t.Fatalf("Java's nodes under %s: %v, want 1", base, nodes)
			}
			if data, _, err := gc.GetData(ctx, nodes[0]); err != nil || len(data) != 0 {
				t.Fatalf("Java's revocable node has data %q (%v), want none", data, err)
			}
			o := hc.waiter.goOwner(t, gc, base, 1)
			waiter := goWait(ctx, o, guards, hc.waiter.kind, hc.waiter.max, 1, "go-waiter")
			waitChildren(t, gc, base, 2)
			waiter.waiting(t, gc.SessionID(), base, base)

			// Curator's revocation listener releases on r1 by itself: the
			// holder leaves the guards just before it is asked to.
			holder.leave(t)
			must(t, recipes.Revoke(ctx, gc, nodes[0]))
			p.mustEvent(t, "revoked "+jl)
			p.mustEvent(t, "released "+jl)
			leave := waiter.granted(t)
			leave()
			must(t, o.Release(ctx))
			checkGuards(t, guards)
			checkLog(t, guards, "java-holder", "go-waiter")
		})
		t.Run(hc.name+"/java-revokes-go", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, hc.holder.guardPaths)
			h, ok := hc.holder.goOwner(t, gc, base, 1).(*recipes.Handle)
			if !ok {
				t.Fatalf("the Go %s owner is not a *recipes.Handle", hc.holder.name)
			}
			// The revocation listener leaves the guards and releases.
			var mu sync.Mutex
			var leave func()
			revoked := make(chan error, 1)
			h.MakeRevocable(func() {
				mu.Lock()
				if leave != nil {
					leave()
				}
				mu.Unlock()
				revoked <- h.Release(context.Background())
			})
			must(t, h.Acquire(ctx))
			mu.Lock()
			leave = goEnter(guards, hc.holder.kind, hc.holder.max, 1, "go-holder")
			mu.Unlock()
			if data, _, err := gc.GetData(ctx, h.LockPath()); err != nil || len(data) != 0 {
				t.Fatalf("Go's revocable node has data %q (%v), want none", data, err)
			}
			jl := hc.waiter.javaLock(t, p, "jw-"+t.Name(), "jc", base)
			waiter := javaHold(p, "r2", jl, 1, guards, hc.waiter.kind, hc.waiter.max, "java-waiter")
			waitChildren(t, gc, base, 2)
			waiter.waiting(t, jsid, base, "")

			p.do(t, "-", "revoke", "jc", h.LockPath())
			select {
			case err := <-revoked:
				must(t, err)
			case <-ctx.Done():
				t.Fatal("the Go revocation listener did not run")
			}
			waiter.granted(t)
			waiter.release(t)
			checkGuards(t, guards)
			checkLog(t, guards, "go-holder", "java-waiter")
		})
	}
}
