package compat_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// runQueue enqueues the entrants one by one behind a Go holder of holder's
// lock at base, on golang (waiting each time until the entrant's node is in
// the queue, so that the queue order is the order of the list), then lets
// the holder go. Each entrant, once granted, enters the guards, which logs
// its label, and releases. It returns the guard's log: the order the lock
// was granted in.
func runQueue(t *testing.T, golang side, base string, holder recipe, es []entrant) []string {
	t.Helper()
	guards := newGuards(t, holder.guardPaths)
	raw := testutil.Connect(t, server.Addr())

	// The holder takes all it can but one unit (a semaphore's other
	// leases), then the gate: the last unit. The queue passes through the
	// gate one contender at a time.
	// Both enter the guards while they hold: a contender granted before the
	// gate opens is an overlap.
	var head []string
	if holder.max > 1 {
		rest := golang.contend(t, holder, base, holder.max-1, guards, "rest")
		rest.granted(t)
		defer rest.release(t)
		head = rest.entries()
	}
	gate := golang.contend(t, holder, base, 1, guards, "gate")
	gate.granted(t)
	head = append(head, gate.entries()...)

	done := make(chan error, len(es))
	for i, e := range es {
		e.s.loop(t, e.r, base, guards, 1, e.label, done)
		testutil.WaitChildren(t, raw, holder.queuePath(base), holder.heldNodes+i+1)
	}
	gate.release(t)
	for range es {
		if err := testutil.Recv(t, done, "the queue's contenders"); err != nil {
			t.Error(err)
		}
	}
	checkGuards(t, guards)
	log := guards[0].log()
	if len(log) < len(head) || !slices.Equal(log[:len(head)], head) {
		t.Fatalf("guard log %q does not start with the holder's entries %q", log, head)
	}
	return log[len(head):]
}

// Contenders enqueued alternately from Go and Java are granted the lock in
// the order they queued (their nodes' sequence order), whichever language
// releases it.
func TestQueueOrder(t *testing.T) {
	testutil.CheckLeaks(t)
	java, golang := sides(t, "queue")
	for _, r := range blockingRecipes() {
		t.Run(r.name, func(t *testing.T) {
			var es []entrant
			var want []string
			for i, s := range slices.Repeat([]side{golang, java}, 3) {
				es = append(es, entrant{s, r, fmt.Sprintf("%s%d", s.lang(), i)})
				want = append(want, es[i].label)
			}
			if got := runQueue(t, golang, serverPath(t), r, es); !slices.Equal(got, want) {
				t.Fatalf("granted in order %v, want the queue order %v", got, want)
			}
		})
	}
	// A mixed queue of readers and writers of both languages behind a Go
	// writer.
	read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
	queue := []entrant{
		{golang, write, "go-w1"}, {java, read, "java-r1"}, {golang, read, "go-r2"},
		{java, write, "java-w3"}, {golang, read, "go-r4"}, {java, read, "java-r5"},
		{golang, write, "go-w6"}, {java, write, "java-w7"},
	}
	t.Run("read-write", func(t *testing.T) {
		got := runQueue(t, golang, serverPath(t), write, queue)
		// Readers between two writers are granted together, in any
		// order among themselves; writers one by one, in queue order.
		var groups [][]string
		for i, e := range queue {
			if i == 0 || e.r.kind == exclusive || queue[i-1].r.kind == exclusive {
				groups = append(groups, nil)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], e.label)
		}
		rest := got
		for _, g := range groups {
			if len(rest) < len(g) {
				t.Fatalf("granted in order %v, want groups %v", got, groups)
			}
			if !slices.Equal(slices.Sorted(slices.Values(rest[:len(g)])), slices.Sorted(slices.Values(g))) {
				t.Fatalf("granted in order %v, want groups %v", got, groups)
			}
			rest = rest[len(g):]
		}
		t.Logf("granted %s", strings.Join(got, " "))
	})
}
