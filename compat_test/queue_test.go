package compat_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
)

// queued is one contender of a queue-order run.
type queued struct {
	label string
	r     recipe // its recipe (a read-write lock's half, or the lock's only one)
	java  bool
}

// runQueue enqueues the contenders one by one behind a Go holder (waiting
// each time until the contender's node is in the queue, so that the queue
// order is the order of the list), then lets the holder go. Each contender,
// once granted, enters the guards, which logs its label, and releases. It
// returns the guard's log: the order the lock was granted in.
func runQueue(t *testing.T, p *peer, gc *framework.Client, base string, holder recipe, cs []queued) []string {
	t.Helper()
	ctx := testutil.Context(t)
	guards := newGuards(t, holder.guardPaths)

	// The holder takes all it can but one unit (a semaphore's other
	// leases), then the gate: the last unit. The queue passes through the
	// gate one contender at a time.
	// Both enter the guards while they hold: a contender granted before the
	// gate opens is an overlap.
	var rest owner
	leaveRest := func() {}
	if holder.full() > 1 {
		rest = holder.goOwner(t, gc, base, holder.full()-1)
		must(t, rest.Acquire(ctx))
		leaveRest = goEnter(guards, holder.kind, holder.max, holder.full()-1, "rest")
	}
	gate := holder.goOwner(t, gc, base, 1)
	must(t, gate.Acquire(ctx))
	leaveGate := goEnter(guards, holder.kind, holder.max, 1, "gate")

	type result struct {
		label string
		err   error
	}
	results := make(chan result, len(cs))
	qp := holder.queuePath(base)
	for i, c := range cs {
		if c.java {
			lock := c.r.javaLock(t, p, c.label+"-"+t.Name(), "jc", base)
			call := javaLoop(p, "q-"+c.label, lock, guards, c.r.kind, c.r.max, 1, c.label)
			go func() {
				_, err := call.Wait(ctx)
				results <- result{c.label, err}
			}()
		} else {
			o := c.r.goOwner(t, gc, base, 1)
			go func() {
				results <- result{c.label, goLoop(ctx, o, guards, c.r.kind, c.r.max, 1, c.label)}
			}()
		}
		waitChildren(t, gc, qp, holder.heldNodes+i+1)
	}
	leaveGate()
	must(t, gate.Release(ctx))
	for range cs {
		select {
		case r := <-results:
			if r.err != nil {
				t.Errorf("%s: %v", r.label, r.err)
			}
		case <-ctx.Done():
			t.Fatalf("the queue did not drain within %v", testutil.Timeout)
		}
	}
	if rest != nil {
		leaveRest()
		must(t, rest.Release(context.WithoutCancel(ctx)))
	}
	checkGuards(t, guards)
	log := guards[0].log()
	head := append(slices.Repeat([]string{"rest"}, holder.full()-1), "gate")
	if len(log) < len(head) || !slices.Equal(log[:len(head)], head) {
		t.Fatalf("guard log %q does not start with the holder's entries %q", log, head)
	}
	return log[len(head):]
}

// alternate returns n contenders of recipe r, Go and Java in turn.
func alternate(r recipe, n int) []queued {
	cs := make([]queued, n)
	for i := range cs {
		lang := "go"
		if i%2 == 1 {
			lang = "java"
		}
		cs[i] = queued{label: fmt.Sprintf("%s%d", lang, i), r: r, java: lang == "java"}
	}
	return cs
}

// Contenders enqueued alternately from Go and Java are granted the lock in
// the order they queued (their nodes' sequence order), whichever language
// releases it.
func TestQueueOrder(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "queue")
	p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	for _, r := range allRecipes() {
		if r.name == "read" {
			continue // readers share: see read-write below
		}
		t.Run(r.name, func(t *testing.T) {
			base := serverPath(t)
			cs := alternate(r, 6)
			var want []string
			for _, c := range cs {
				want = append(want, c.label)
			}
			if got := runQueue(t, p, gc, base, r, cs); !slices.Equal(got, want) {
				t.Fatalf("granted in order %v, want the queue order %v", got, want)
			}
		})
	}
	rw := readWriteQueue()
	t.Run("read-write", func(t *testing.T) {
		base := serverPath(t)
		got := runQueue(t, p, gc, base, rw.holder, rw.queue)
		// Readers between two writers are granted together, in any
		// order among themselves; writers one by one, in queue order.
		var groups [][]string
		for i, c := range rw.queue {
			if i == 0 || c.r.kind == exclusive || rw.queue[i-1].r.kind == exclusive {
				groups = append(groups, nil)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], c.label)
		}
		rest := got
		for _, g := range groups {
			if len(rest) < len(g) {
				t.Fatalf("granted in order %v, want groups %v", got, groups)
			}
			head := slices.Clone(rest[:len(g)])
			slices.Sort(head)
			want := slices.Clone(g)
			slices.Sort(want)
			if !slices.Equal(head, want) {
				t.Fatalf("granted in order %v, want groups %v", got, groups)
			}
			rest = rest[len(g):]
		}
		t.Logf("granted %s", strings.Join(got, " "))
	})
}

// rwQueue is a queue of readers and writers behind a writer.
type rwQueue struct {
	holder recipe
	queue  []queued
}

// readWriteQueue is a mixed queue of readers and writers of both languages
// behind a Go writer.
func readWriteQueue() *rwQueue {
	read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
	q := func(label string, r recipe, java bool) queued { return queued{label: label, r: r, java: java} }
	return &rwQueue{
		holder: write,
		queue: []queued{
			q("go-w1", write, false), q("java-r1", read, true), q("go-r2", read, false),
			q("java-w3", write, true), q("go-r4", read, false), q("java-r5", read, true),
			q("go-w6", write, false), q("java-w7", write, true),
		},
	}
}
