package compat_test

import (
	"context"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Revocation both ways. Go writes __REVOKE__ to a Java holder's node
// (recipes.Revoke) and Curator's revocation listener runs, releases, and the
// waiting Go contender acquires; Curator's Revoker.attemptRevoke revokes a Go
// holder, the Go listener runs and releases, and the waiting Java contender
// acquires. A revocable holder's node is empty in both languages.
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
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			jl := hc.holder.javaLock(t, p, "jr-"+t.Name(), "jc", base)
			p.do(t, "-", "revocable", jl, "release-on=r1")
			if !acquired(t, javaAcquire(p, "r1", jl, 1).must(t)) {
				t.Fatal("Java did not acquire a free lock")
			}
			nodes := ownedBy(t, gc, base, jsid)
			if len(nodes) != 1 {
				t.Fatalf("Java's nodes under %s: %v, want 1", base, nodes)
			}
			if data, _, err := gc.GetData(ctx, nodes[0]); err != nil || len(data) != 0 {
				t.Fatalf("Java's revocable node has data %q (%v), want none", data, err)
			}
			o := hc.waiter.goOwner(t, gc, base, 1)
			got := asyncAcquire(ctx, o)
			waitChildren(t, gc, base, 2)
			notYet(t, got, "Go's Acquire")

			must(t, recipes.Revoke(ctx, gc, nodes[0]))
			p.mustEvent(t, "revoked "+jl)
			p.mustEvent(t, "released "+jl)
			must(t, <-got)
			must(t, o.Release(ctx))
		})
		t.Run(hc.name+"/java-revokes-go", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			h, ok := hc.holder.goOwner(t, gc, base, 1).(*recipes.Handle)
			if !ok {
				t.Fatalf("the Go %s owner is not a *recipes.Handle", hc.holder.name)
			}
			revoked := make(chan error, 1)
			h.MakeRevocable(func() { revoked <- h.Release(context.Background()) })
			must(t, h.Acquire(ctx))
			if data, _, err := gc.GetData(ctx, h.LockPath()); err != nil || len(data) != 0 {
				t.Fatalf("Go's revocable node has data %q (%v), want none", data, err)
			}
			jw := hc.waiter.javaLock(t, p, "jw-"+t.Name(), "jc", base)
			got := javaAcquire(p, "r2", jw, 1)
			waitChildren(t, gc, base, 2)
			if got.answered() {
				t.Fatalf("Java acquired (%q) while Go held the lock", got.reply)
			}

			p.do(t, "-", "revoke", "jc", h.LockPath())
			select {
			case err := <-revoked:
				must(t, err)
			case <-ctx.Done():
				t.Fatal("the Go revocation listener did not run")
			}
			if !acquired(t, got.must(t)) {
				t.Fatal("Java's untimed acquire returned false")
			}
			p.do(t, "r2", "release", jw)
		})
	}
}
