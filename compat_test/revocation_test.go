package compat_test

import (
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
	java, golang := sides(t, "revocation")
	gc, raw := golang.gc, testutil.Connect(t, server.Addr())
	for _, hc := range handoffCases() {
		if !hc.holder.revocable {
			continue // Curator's semaphores and multi-lock are not Revocable
		}
		t.Run(hc.name+"/go-revokes-java", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, hc.holder.guardPaths)
			holder := java.contendRevocable(t, hc.holder, base, guards, "java-holder").(*javaHolder)
			holder.granted(t)
			nodes := ownedBy(t, gc, base, java.sid)
			if len(nodes) != 1 {
				t.Fatalf("Java's nodes under %s: %v, want 1", base, nodes)
			}
			if data, _, err := gc.GetData(ctx, nodes[0]); err != nil || len(data) != 0 {
				t.Fatalf("Java's revocable node has data %q (%v), want none", data, err)
			}
			waiter := golang.contend(t, hc.waiter, base, 1, guards, "go-waiter")
			queued(t, raw, hc.waiter, base, waiter)

			// Curator's revocation listener releases on the holder's worker
			// by itself: the holder leaves the guards just before it is asked to.
			holder.leave(t)
			testutil.Must(t, recipes.Revoke(ctx, gc, nodes[0]))
			java.p.mustEvent(t, "revoked "+holder.lock)
			java.p.mustEvent(t, "released "+holder.lock)
			passed(t, guards, holder, waiter)
		})
		t.Run(hc.name+"/java-revokes-go", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, hc.holder.guardPaths)
			holder := golang.contendRevocable(t, hc.holder, base, guards, "go-holder").(*goHolder)
			holder.granted(t)
			node := holder.o.(*recipes.Handle).LockPath()
			if data, _, err := gc.GetData(ctx, node); err != nil || len(data) != 0 {
				t.Fatalf("Go's revocable node has data %q (%v), want none", data, err)
			}
			waiter := java.contend(t, hc.waiter, base, 1, guards, "java-waiter")
			queued(t, raw, hc.waiter, base, waiter)

			// The Go holder's revocation listener leaves the guards and releases.
			java.p.do(t, "-", "revoke", java.jc, node)
			testutil.Must(t, testutil.Recv(t, holder.revoked, "the Go revocation listener's release"))
			passed(t, guards, holder, waiter)
		})
	}
}
