package compat_test

import (
	"slices"
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
// contender fails. Each contender enters the guards from where it holds the
// lock (the Java worker that acquired it, the Go goroutine whose Acquire
// returned), the moment it is granted, and leaves them just before it
// releases: the guards record an overlap whenever it happens, and the log
// shows the lock passed from the holder to the waiter. The holder holds on
// until the server shows the waiter watching (but for a semaphore's, see
// recipe.waiting): it has looked at the queue and chosen to wait.
func TestHandOff(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "handoff")
	jsid := p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	for _, hc := range handoffCases() {
		t.Run(hc.name+"/java-to-go", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, hc.holder.guardPaths)
			jl := hc.holder.javaLock(t, p, "jh-"+t.Name(), "jc", base)
			holder := javaHold(p, "h1", jl, hc.holder.full(), guards, hc.holder.kind, hc.holder.max, "java-holder")
			holder.granted(t)

			o := hc.waiter.goOwner(t, gc, base, 1)
			waiter := goWait(ctx, o, guards, hc.waiter.kind, hc.waiter.max, 1, "go-waiter")
			waitChildren(t, gc, hc.waiter.queuePath(base), hc.holder.heldNodes+1)
			hc.waiter.waiting(t, waiter, gc.SessionID(), base)
			if try := hc.waiter.goOwner(t, gc, base, 1); tryAcquire(t, try) {
				t.Fatal("a Go try-acquire succeeded while Java held the lock")
			}
			waiter.notYet(t, "Go's Acquire")

			holder.release(t)
			leave := waiter.granted(t)
			leave()
			must(t, o.Release(ctx))
			checkGuards(t, guards)
			checkLog(t, guards, append(slices.Repeat([]string{"java-holder"}, hc.holder.full()), "go-waiter")...)
		})
		t.Run(hc.name+"/go-to-java", func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, hc.holder.guardPaths)
			o := hc.holder.goOwner(t, gc, base, hc.holder.full())
			must(t, o.Acquire(ctx))
			leave := goEnter(guards, hc.holder.kind, hc.holder.max, hc.holder.full(), "go-holder")

			jl := hc.waiter.javaLock(t, p, "jw-"+t.Name(), "jc", base)
			waiter := javaHold(p, "h2", jl, 1, guards, hc.waiter.kind, hc.waiter.max, "java-waiter")
			waitChildren(t, gc, hc.waiter.queuePath(base), hc.holder.heldNodes+1)
			hc.waiter.waiting(t, waiter, jsid, base)
			if acquired(t, javaAcquire(p, "h3", jl, 1, "timeout=0").must(t)) {
				t.Fatal("a Java zero-timeout acquire succeeded while Go held the lock")
			}
			waiter.notYet(t, "Java's acquire")

			leave()
			must(t, o.Release(ctx))
			waiter.granted(t)
			waiter.release(t)
			checkGuards(t, guards)
			checkLog(t, guards, append(slices.Repeat([]string{"go-holder"}, hc.holder.full()), "java-waiter")...)
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
