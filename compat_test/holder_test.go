package compat_test

import (
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// holder is a contender of either language for a lock that enters the
// guards from where it holds the lock, the moment it is granted, and leaves
// them just before it releases: an overlap is then seen whenever it
// happens, not only while the test looks.
type holder interface {
	// granted waits (bounded) until the lock is granted and the guards
	// entered, and fails the test on an error or a refusal.
	granted(t testing.TB)
	// notYet fails the test if the acquire has returned already: a cheap
	// early failure; the guards record the overlap in any case.
	notYet(t testing.TB, what string)
	// waiting waits until the contender has looked at the queue and chosen
	// to wait: the server shows its session watching a node below base
	// other than skip (see waitWatching). Whoever holds the lock must hold
	// on until then, or a wrong grant could come after the holder left and
	// be no overlap. A contender granted instead fails the test, with the
	// overlap its guards recorded.
	waiting(t testing.TB, base, skip string)
	// try reports whether a third contender for the same lock, of the
	// same language, gets it without waiting (a Go one releases it again).
	try(t testing.TB) bool
	// leave leaves the guards, keeping the lock.
	leave(t testing.TB)
	// release leaves the guards, unless left already, and releases the
	// lock.
	release(t testing.TB)
	// entries are the guard's log entries of the holding: its label, once
	// per lease it holds (a counted guard counts each).
	entries() []string
}

// queued waits until w, a contender for r's lock at base (as the server
// names it; conn looks), has its node in the queue behind the holder's
// and has chosen to wait (recipe.waiting).
func queued(t testing.TB, conn *zk.Conn, r recipe, base string, w holder) {
	t.Helper()
	testutil.WaitChildren(t, conn, r.queuePath(base), r.heldNodes+1)
	r.waiting(t, w, base)
}

// passed ends the hand-offs of a lock from holder from, gone, to the
// waiters to, in turn: each is granted the lock and releases it; the guards
// saw no overlap, and they logged from's entries, then each waiter's.
func passed(t testing.TB, guards []*guard, from holder, to ...holder) {
	t.Helper()
	log := from.entries()
	for _, h := range to {
		h.granted(t)
		h.release(t)
		log = append(log, h.entries()...)
	}
	checkGuards(t, guards)
	checkLog(t, guards, log...)
}

// javaHolder is a Java contender: the guard-enter request is queued on the
// worker that acquires, behind the acquire, so it runs the moment the
// acquire returns, whenever that is; and it leaves the guards, on the same
// worker, just before it releases.
type javaHolder struct {
	p            *peer
	sid          int64
	worker, lock string
	qty          int
	label        string
	guards       []*guard
	acq, enter   *call
	token        string
	left         bool
}

// javaHold sends the acquire of lock (qty leases) on worker of p, whose
// client's session is sid, and, behind it, the guards' entry as label. The
// acquire must wait (no timeout, or one that the test expects to be met): a
// timed acquire that returns false would enter the guards all the same.
func javaHold(p *peer, sid int64, worker, lock string, qty int, guards []*guard, kind guardKind, max int, label string, opts ...string) *javaHolder {
	return &javaHolder{p: p, sid: sid, worker: worker, lock: lock, qty: qty, label: label, guards: guards,
		acq: javaAcquire(p, worker, lock, qty, opts...),
		enter: p.send(worker, "guard-enter", guardURLs(guards, qty), "kind="+string(kind),
			"max="+strconv.Itoa(max), "label="+label)}
}

func (h *javaHolder) granted(t testing.TB) {
	t.Helper()
	ok := acquired(t, h.acq.must(t))
	h.token = h.enter.must(t)
	if !ok {
		h.leave(t)
		t.Fatalf("Java's acquire of %s on %s returned false", h.lock, h.worker)
	}
}

func (h *javaHolder) notYet(t testing.TB, what string) {
	t.Helper()
	if h.acq.Answered() {
		r, err := h.acq.Result()
		t.Fatalf("%s returned (%q, %v) while the lock was held elsewhere", what, r, err)
	}
}

func (h *javaHolder) waiting(t testing.TB, base, skip string) {
	t.Helper()
	if waitWatching(t, h.sid, below(base, skip), h.acq.Done()) {
		return
	}
	ctx := testutil.Context(t)
	r, err := h.acq.Wait(ctx)
	if _, eerr := h.enter.Wait(ctx); eerr == nil {
		checkGuards(t, h.guards)
	}
	t.Fatalf("Java's acquire of %s returned (%q, %v) while the lock was held elsewhere", h.lock, r, err)
}

func (h *javaHolder) try(t testing.TB) bool {
	t.Helper()
	return acquired(t, javaAcquire(h.p, h.worker+"-try", h.lock, 1, "timeout=0").must(t))
}

func (h *javaHolder) leave(t testing.TB) {
	t.Helper()
	if !h.left {
		h.left = true
		h.p.do(t, h.worker, "guard-leave", h.token)
	}
}

// release leaves the guards and releases the lock, both on the holder's
// worker, one right after the other.
func (h *javaHolder) release(t testing.TB) {
	t.Helper()
	var leave *call
	if !h.left {
		h.left = true
		leave = h.p.send(h.worker, "guard-leave", h.token)
	}
	rel := h.p.send(h.worker, "release", h.lock)
	if leave != nil {
		leave.must(t)
	}
	rel.must(t)
}

func (h *javaHolder) entries() []string { return slices.Repeat([]string{h.label}, h.qty) }

// goHolder is a Go contender: o.Acquire runs on a goroutine of its own,
// which enters the guards the moment it returns.
type goHolder struct {
	s      side
	r      recipe
	base   string
	qty    int
	guards []*guard
	label  string
	o      owner
	done   chan struct{} // closed when Acquire has returned and the guards are entered
	err    error
	// revoked has the result of the release by the revocation listener of
	// a revocable holder.
	revoked chan error

	mu          sync.Mutex
	leaveGuards func() // nil before the entry and after the leave
}

func (h *goHolder) granted(t testing.TB) {
	t.Helper()
	select {
	case <-h.done:
	case <-testutil.Context(t).Done():
		t.Fatalf("%s: Acquire did not return within %v", h.label, testutil.Timeout)
	}
	if h.err != nil {
		t.Fatalf("%s: %v", h.label, h.err)
	}
}

func (h *goHolder) notYet(t testing.TB, what string) {
	t.Helper()
	select {
	case <-h.done:
		t.Fatalf("%s returned (%v) while the lock was held elsewhere", what, h.err)
	default:
	}
}

func (h *goHolder) waiting(t testing.TB, base, skip string) {
	t.Helper()
	if waitWatching(t, h.s.session(), below(base, skip), h.done) {
		return
	}
	checkGuards(t, h.guards)
	t.Fatalf("%s: Acquire returned (%v) while the lock was held elsewhere", h.label, h.err)
}

func (h *goHolder) try(t testing.TB) bool {
	t.Helper()
	ctx, o := testutil.Context(t), h.r.goOwner(t, h.s.gc, h.base, 1)
	err := o.TryAcquire(ctx)
	if err == nil {
		testutil.Must(t, o.Release(ctx))
		return true
	}
	if !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire = %v, want nil or ErrLocked", err)
	}
	return false
}

func (h *goHolder) leave(testing.TB) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.leaveGuards != nil {
		h.leaveGuards()
		h.leaveGuards = nil
	}
}

func (h *goHolder) release(t testing.TB) {
	t.Helper()
	h.leave(t)
	testutil.Must(t, h.o.Release(testutil.Context(t)))
}

func (h *goHolder) entries() []string { return slices.Repeat([]string{h.label}, h.qty) }
