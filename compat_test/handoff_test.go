package compat_test

import (
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// handoffCase is a holder recipe and a waiter recipe on one base path: the
// same recipe, or the two halves of a read-write lock.
type handoffCase struct {
	name           string
	holder, waiter recipe
}

func handoffCases() []handoffCase {
	var cs []handoffCase
	for _, r := range allRecipes() {
		if r.name == "read" {
			continue // readers do not wait for readers: see the read-write cases
		}
		cs = append(cs, handoffCase{name: r.name, holder: r, waiter: r})
	}
	return append(cs, readWriteHandoffCases()...)
}

// Java holds → a Go contender queues and waits → Java releases → Go
// acquires; and the same with the languages swapped. While the holder holds,
// the waiter's node is in the queue and a zero-timeout attempt by a third
// contender fails; the guard sees no overlap.
func TestHandOff(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "handoff")
	p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	for _, hc := range handoffCases() {
		t.Run(hc.name+"/java-to-go", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			guards := newGuards(t, hc.holder.guardPaths)
			jHold := hc.holder.javaLock(t, p, "jh-"+t.Name(), "jc", base)
			if !acquired(t, javaAcquire(p, "h1", jHold, hc.holder.full()).must(t)) {
				t.Fatal("Java did not acquire a free lock")
			}
			leaveJava := javaEnter(t, p, guards, hc.holder.kind, hc.holder.max, "java-holder")

			o := hc.waiter.goOwner(t, gc, base, 1)
			got := asyncAcquire(ctx, o)
			waitChildren(t, gc, hc.waiter.queuePath(base), hc.holder.heldNodes+1)
			notYet(t, got, "Go's Acquire")
			if try := hc.waiter.goOwner(t, gc, base, 1); tryAcquire(t, try) {
				t.Fatal("a Go try-acquire succeeded while Java held the lock")
			}
			notYet(t, got, "Go's Acquire")

			leaveJava()
			p.do(t, "h1", "release", jHold)
			must(t, <-got)
			leaveGo := goEnter(t, guards, hc.waiter.kind, hc.waiter.max, "go-waiter")
			leaveGo()
			must(t, o.Release(ctx))
			checkGuards(t, guards)
		})
		t.Run(hc.name+"/go-to-java", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			guards := newGuards(t, hc.holder.guardPaths)
			o := hc.holder.goOwner(t, gc, base, hc.holder.full())
			must(t, o.Acquire(ctx))
			leaveGo := goEnter(t, guards, hc.holder.kind, hc.holder.max, "go-holder")

			jWait := hc.waiter.javaLock(t, p, "jw-"+t.Name(), "jc", base)
			got := javaAcquire(p, "h2", jWait, 1)
			waitChildren(t, gc, hc.waiter.queuePath(base), hc.holder.heldNodes+1)
			if got.answered() {
				t.Fatalf("Java's acquire returned (%q) while Go held the lock", got.reply)
			}
			if acquired(t, javaAcquire(p, "h3", jWait, 1, "timeout=0").must(t)) {
				t.Fatal("a Java zero-timeout acquire succeeded while Go held the lock")
			}
			if got.answered() {
				t.Fatalf("Java's acquire returned (%q) while Go held the lock", got.reply)
			}

			leaveGo()
			must(t, o.Release(ctx))
			if !acquired(t, got.must(t)) {
				t.Fatal("Java's untimed acquire returned false")
			}
			javaEnter(t, p, guards, hc.waiter.kind, hc.waiter.max, "java-waiter")()
			p.do(t, "h2", "release", jWait)
			checkGuards(t, guards)
		})
	}
}

// readWriteHandoffCases are the hand-offs between the read-write lock's
// halves (write to write is a recipe of its own).
func readWriteHandoffCases() []handoffCase {
	read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
	return []handoffCase{
		{name: "write-then-read", holder: write, waiter: read},
		{name: "read-then-write", holder: read, waiter: write},
	}
}
