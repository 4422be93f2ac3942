package main

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"
)

// This file holds where a waiter's heap goes, for scenario 6: one more
// queue of each Go implementation, unmeasured, formed while every
// allocation is sampled (runtime.MemProfileRate 1); what the heap profile
// gained from before the queue formed until all wait is then split by what
// allocated it (heapUses) and divided by the waiters.

// heapProfiled is how many waiters the profiled queue has: enough that
// what is not per waiter weighs little.
const heapProfiled = 1000

// heapUse is one use of a waiter's heap: the frames (substrings of
// function names) that make an allocation that use's, looked for from the
// allocating frame outwards; the first frame that matches any use decides.
type heapUse struct {
	label  string
	frames []string
}

var heapUses = []heapUse{
	{"goroutine descriptor", []string{"runtime.malg"}},
	{"blocked channel operations (sudogs, one per case of a blocked select)", []string{"runtime.acquireSudog"}},
	{"go-zookeeper's watch (its channel and registration)", []string{"zk.(*Conn).addWatcher"}},
	{"the client's shared watch on the node waited for (struct, map entry; a channel while it is set)", []string{"acquire.(*clientShared).watchOf", "acquire.(*clientShared).adoptWatch", "acquire.(*Watch)"}},
	{"the shared watch's key: the watched node's path", []string{"acquire.(*waits).arm"}},
	{"the grant and its context (derived from the client's trust)", []string{"acquire.newGrant", "acquire.(*Grant)", "acquire.(*endState)"}},
	{"the handle", []string{"recipes.(*InterProcessMutex).NewHandle"}},
	{"what go-zookeeper decoded (node paths and names, listings)", []string{"zk.decodePacket"}},
	{"go-zookeeper's requests", []string{"zk.(*Conn).queueRequest", "zk.(*Conn).request"}},
	{"the floor's lock (its node's path, its predecessor's)", []string{"rawlock."}},
	{"the bench's owner and queue", []string{"main."}},
}

// heapShare is what one use takes of a waiter's heap.
type heapShare struct {
	Label string
	Bytes float64 // per waiter
}

// waiterHeap forms an unmeasured queue of heapProfiled waiters of im behind
// a holder, with every allocation sampled, and returns what the heap
// profile gained meanwhile per waiter, by use, the largest first.
func (e *env) waiterHeap(ctx context.Context, im goImpl) ([]heapShare, error) {
	sess, err := im.connect(ctx, e.servers)
	if err != nil {
		return nil, err
	}
	defer sess.close()
	mk, holder, watch0, err := e.holdFor(ctx, sess, e.path("6", im.key+"-heap"))
	if err != nil {
		return nil, err
	}
	restore := profileHeap()
	defer restore()
	before := heapProfile()
	q := newQueue(ctx)
	defer q.close()
	if err := e.form(q, mk, heapProfiled, watch0); err != nil {
		return nil, err
	}
	after := heapProfile()
	restore()
	if _, err := q.drain(holder, 10*time.Minute); err != nil {
		return nil, err
	}
	byUse := map[string]float64{}
	for stack, bytes := range after {
		byUse[useOf(stack)] += float64(bytes-before[stack]) / heapProfiled
	}
	var out []heapShare
	for label, b := range byUse {
		out = append(out, heapShare{label, b})
	}
	slices.SortFunc(out, func(a, b heapShare) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return out, nil
}

// heapProfile returns the bytes in use by allocating stack, as of a
// garbage collection now.
func heapProfile() map[[32]uintptr]int64 {
	settleHeapProfile()
	var recs []runtime.MemProfileRecord
	n, ok := runtime.MemProfile(nil, true)
	for !ok {
		recs = make([]runtime.MemProfileRecord, n+50)
		n, ok = runtime.MemProfile(recs, true)
	}
	out := map[[32]uintptr]int64{}
	for _, r := range recs[:n] {
		out[r.Stack0] += r.InUseBytes()
	}
	return out
}

// settleHeapProfile collects garbage until the heap profile shows the heap
// as of now: the runtime publishes a collection's state only after two
// more.
func settleHeapProfile() {
	for range 3 {
		runtime.GC()
	}
}

// useOf is the label of the use an allocation of stack is for, "other"
// when none matches.
func useOf(stack [32]uintptr) string {
	pcs := stack[:]
	if i := slices.Index(pcs, 0); i >= 0 {
		pcs = pcs[:i]
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		for _, u := range heapUses {
			if slices.ContainsFunc(u.frames, func(s string) bool { return strings.Contains(f.Function, s) }) {
				return u.label
			}
		}
		if !more {
			return "other"
		}
	}
}

// fmtHeapShares is an implementation's waiter's heap by use, for a note.
func fmtHeapShares(name string, shares []heapShare) string {
	var total float64
	var parts []string
	for _, s := range shares {
		total += s.Bytes
		if s.Bytes >= 8 {
			parts = append(parts, fmt.Sprintf("%s %s", s.Label, fmtValue(unitBytes, s.Bytes)))
		}
	}
	return fmt.Sprintf("%s, %s of objects per waiter: %s", name, fmtValue(unitBytes, total), strings.Join(parts, "; "))
}
