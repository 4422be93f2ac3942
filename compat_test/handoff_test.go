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
	for _, r := range blockingRecipes() {
		cs = append(cs, handoffCase{name: r.name, holder: r, waiter: r})
	}
	read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
	return append(cs, handoffCase{name: "write-then-read", holder: write, waiter: read},
		handoffCase{name: "read-then-write", holder: read, waiter: write})
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
	java, golang := sides(t, "handoff")
	raw := testutil.Connect(t, server.Addr())
	for _, hc := range handoffCases() {
		for _, d := range []struct {
			name     string
			from, to side
		}{{"java-to-go", java, golang}, {"go-to-java", golang, java}} {
			t.Run(hc.name+"/"+d.name, func(t *testing.T) {
				base := serverPath(t)
				guards := newGuards(t, hc.holder.guardPaths)
				holder := d.from.contend(t, hc.holder, base, hc.holder.max, guards, d.from.lang()+"-holder")
				holder.granted(t)
				waiter := d.to.contend(t, hc.waiter, base, 1, guards, d.to.lang()+"-waiter")
				queued(t, raw, hc.waiter, base, waiter)
				if waiter.try(t) {
					t.Fatal("a zero-timeout attempt of the waiter's language succeeded while the holder held the lock")
				}
				waiter.notYet(t, "the waiter's acquire")
				holder.release(t)
				passed(t, guards, holder, waiter)
			})
		}
	}
}
