package compat_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// guard is a critical-section detector that works across processes and
// languages: a directory on the local file system that every holder of a
// lock, Go or Java, enters while it holds the lock. The rule (the same in
// internal/curatorpeer/CuratorPeer.java):
//
//   - exclusive (a writer, a mutex holder): create the directory held, then
//     check that readers is empty;
//   - shared (a reader): create a file in readers, then check that held is
//     absent;
//   - counted (a semaphore lease holder): create a file in holders, then
//     check that there are at most max.
//
// Markers are created before the check and removed only on leaving, so of
// two holders that overlap, at least one sees the other (the later one to
// create its marker). Every entry appends its label to log; every overlap
// the lock should have prevented appends a line to violations.
type guard struct {
	dir string
}

// guardKind is how a holder enters a guard.
type guardKind string

const (
	exclusive guardKind = "excl"
	shared    guardKind = "shared"
	counted   guardKind = "count"
)

var markerSeq atomic.Int64

func newGuard(t testing.TB) *guard {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"readers", "holders"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return &guard{dir: dir}
}

// enter enters the guard as label; leave undoes it, and says whether a
// marker could not be removed (it would be seen as an overlap by the next
// holder). An error means the guard could not do its job: a violation that
// could not be recorded, or a marker that could not be made or checked.
func (g *guard) enter(kind guardKind, max int, label string) (leave func() error, err error) {
	held := filepath.Join(g.dir, "held")
	var undo []string
	leave = func() error {
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, os.Remove(undo[i]))
		}
		undo = nil
		return errors.Join(errs...)
	}
	switch kind {
	case exclusive:
		if err := os.Mkdir(held, 0o755); errors.Is(err, fs.ErrExist) {
			if err := g.violation(label + ": entered an exclusive section someone holds"); err != nil {
				return leave, err
			}
		} else if err != nil {
			return leave, err
		} else {
			undo = append(undo, held)
		}
		readers, err := os.ReadDir(filepath.Join(g.dir, "readers"))
		if err != nil {
			return leave, err
		}
		if len(readers) > 0 {
			if err := g.violation(label + ": entered an exclusive section with readers inside"); err != nil {
				return leave, err
			}
		}
	case shared:
		m := filepath.Join(g.dir, "readers", fmt.Sprintf("%s-go-%d", label, markerSeq.Add(1)))
		if err := os.WriteFile(m, nil, 0o644); err != nil {
			return leave, err
		}
		undo = append(undo, m)
		if _, err := os.Stat(held); err == nil {
			if err := g.violation(label + ": entered a shared section a writer holds"); err != nil {
				return leave, err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return leave, err
		}
	case counted:
		m := filepath.Join(g.dir, "holders", fmt.Sprintf("%s-go-%d", label, markerSeq.Add(1)))
		if err := os.WriteFile(m, nil, 0o644); err != nil {
			return leave, err
		}
		undo = append(undo, m)
		holders, err := os.ReadDir(filepath.Join(g.dir, "holders"))
		if err != nil {
			return leave, err
		}
		if len(holders) > max {
			if err := g.violation(fmt.Sprintf("%s: %d holders inside, at most %d allowed", label, len(holders), max)); err != nil {
				return leave, err
			}
		}
	default:
		return leave, fmt.Errorf("unknown guard kind %q", kind)
	}
	return leave, appendLine(filepath.Join(g.dir, "log"), label)
}

// violation records an overlap; an error means it could not be recorded.
func (g *guard) violation(what string) error {
	return appendLine(filepath.Join(g.dir, "violations"), "go "+what)
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readLines returns the lines of the file at path; a file that does not
// exist has none.
func readLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\n"), nil
}

// mustLines is readLines failing the test on an error.
func mustLines(t testing.TB, path string) []string {
	t.Helper()
	lines, err := readLines(path)
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// violations returns every overlap recorded, by either language.
func (g *guard) violations(t testing.TB) []string {
	t.Helper()
	return mustLines(t, filepath.Join(g.dir, "violations"))
}

// log returns the labels of every entry, in order.
func (g *guard) log(t testing.TB) []string {
	t.Helper()
	return mustLines(t, filepath.Join(g.dir, "log"))
}

// checkClean fails the test if any violation was recorded.
func (g *guard) checkClean(t testing.TB) {
	t.Helper()
	if v := g.violations(t); len(v) > 0 {
		t.Fatalf("%d critical-section violations:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// Sanity check of the guard itself: overlaps are seen, whoever comes second.
func TestGuardSeesOverlap(t *testing.T) {
	g := newGuard(t)
	l1 := mustEnter(t, g, exclusive, 1, "w1")
	l2 := mustEnter(t, g, shared, 0, "r1")
	l3 := mustEnter(t, g, exclusive, 1, "w2")
	l2()
	l3()
	l1()
	if v := g.violations(t); len(v) != 3 { // r1 sees w1; w2 sees w1 and r1
		t.Fatalf("violations %q, want 3", v)
	}
	g = newGuard(t)
	r1 := mustEnter(t, g, shared, 0, "r1")
	r2 := mustEnter(t, g, shared, 0, "r2")
	c1 := mustEnter(t, g, counted, 2, "c1")
	c2 := mustEnter(t, g, counted, 2, "c2")
	r1()
	r2()
	c1()
	c2()
	g.checkClean(t)
	c1 = mustEnter(t, g, counted, 1, "c1")
	c2 = mustEnter(t, g, counted, 1, "c2")
	c1()
	c2()
	if v := g.violations(t); len(v) != 1 {
		t.Fatalf("violations %q, want 1", v)
	}
	if got := strings.Join(g.log(t), " "); got != "r1 r2 c1 c2 c1 c2" {
		t.Fatalf("log %q", got)
	}
	// A holder of two leases is two holders to a counted guard.
	g = newGuard(t)
	l1 = goEnter(t, []*guard{g}, counted, 2, 2, "c2x")
	mustEnter(t, g, counted, 2, "c1")()
	l1()
	if v := g.violations(t); len(v) != 1 {
		t.Fatalf("violations %q, want 1", v)
	}
	// A violation that cannot be recorded is an error, not a pass.
	g = newGuard(t)
	l1 = mustEnter(t, g, exclusive, 1, "w1")
	if err := os.Mkdir(filepath.Join(g.dir, "violations"), 0o755); err != nil {
		t.Fatal(err)
	}
	if leave, err := g.enter(exclusive, 1, "w2"); err == nil {
		t.Fatal("an overlap that could not be recorded went unreported")
	} else if lerr := leave(); lerr != nil {
		t.Fatal(lerr)
	}
	l1()
	if _, err := readLines(filepath.Join(g.dir, "violations")); err == nil {
		t.Fatal("reading a violations file that cannot be read is no error")
	}
}

// mustEnter enters g, failing the test on an error, and returns how to
// leave it (failing the test on an error too).
func mustEnter(t testing.TB, g *guard, kind guardKind, max int, label string) (leave func()) {
	t.Helper()
	return goEnter(t, []*guard{g}, kind, max, 1, label)
}

// guardDirs joins the guards' directories for the peer, each qty times
// (see enterAll).
func guardDirs(guards []*guard, qty int) string {
	var dirs []string
	for _, g := range guards {
		for range qty {
			dirs = append(dirs, g.dir)
		}
	}
	return strings.Join(dirs, ",")
}

// enterAll enters every guard as label, each qty times: a holder of qty of
// a semaphore's leases counts as qty holders. It returns how to leave them
// all; on an error it has left those it entered.
func enterAll(guards []*guard, kind guardKind, max, qty int, label string) (leave func() error, err error) {
	var leaves []func() error
	leave = func() error {
		var errs []error
		for i := len(leaves) - 1; i >= 0; i-- {
			errs = append(errs, leaves[i]())
		}
		leaves = nil
		return errors.Join(errs...)
	}
	for _, g := range guards {
		for range qty {
			l, err := g.enter(kind, max, label)
			leaves = append(leaves, l)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("%s entering guard %s: %w", label, g.dir, err), leave())
			}
		}
	}
	return leave, nil
}

// goEnter enters every guard (qty times, see enterAll) as a Go holder,
// from the goroutine that holds the lock, and returns how to leave them. It
// and leave fail the test on an error, so call both from the test's own
// goroutine.
func goEnter(t testing.TB, guards []*guard, kind guardKind, max, qty int, label string) (leave func()) {
	t.Helper()
	l, err := enterAll(guards, kind, max, qty, label)
	if err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := l(); err != nil {
			t.Fatalf("%s leaving the guards: %v", label, err)
		}
	}
}

// javaEnter has the peer enter every guard as a Java holder, on a pool
// thread, and returns how to leave them. Holders of a lock enter through
// javaHold instead, on their own worker.
func javaEnter(t testing.TB, p *peer, guards []*guard, kind guardKind, max int, label string) (leave func()) {
	t.Helper()
	token := guardToken(t, p.do(t, "-", "guard-enter", guardDirs(guards, 1), "kind="+string(kind), "max="+strconv.Itoa(max), "label="+label))
	return func() {
		t.Helper()
		p.do(t, "-", "guard-leave", token)
	}
}

// guardToken returns the token of a reply to guard-enter ("<token>
// violations=<n>"); the violations themselves are in the guards' files.
func guardToken(t testing.TB, reply string) string {
	t.Helper()
	token, v, _ := strings.Cut(reply, " ")
	if token == "" || !strings.HasPrefix(v, "violations=") {
		t.Fatalf("guard-enter replied %q", reply)
	}
	return token
}

// javaHolder is a Java contender for a lock that enters the guards from the
// worker thread that acquires it: the guard-enter request is queued on that
// worker behind the acquire, so it runs the moment the acquire returns,
// whenever that is; and it leaves them, on the same worker, just before it
// releases. An overlap is then seen whenever it happens, not only while the
// test looks.
type javaHolder struct {
	p            *peer
	worker, lock string
	guards       []*guard
	acq, enter   *call
	token        string
	left         bool
}

// javaHold sends the acquire of lock (qty leases) on worker and, behind it,
// the guards' entry as label. The acquire must wait (no timeout, or one
// that the test expects to be met): a timed acquire that returns false
// would enter the guards all the same.
func javaHold(p *peer, worker, lock string, qty int, guards []*guard, kind guardKind, max int, label string, opts ...string) *javaHolder {
	return &javaHolder{p: p, worker: worker, lock: lock, guards: guards,
		acq: javaAcquire(p, worker, lock, qty, opts...),
		enter: p.send(worker, "guard-enter", guardDirs(guards, qty), "kind="+string(kind),
			"max="+strconv.Itoa(max), "label="+label)}
}

// granted waits for the acquire and the entry behind it, and fails the test
// unless the lock was acquired.
func (h *javaHolder) granted(t testing.TB) {
	t.Helper()
	ok := acquired(t, h.acq.must(t))
	h.token = guardToken(t, h.enter.must(t))
	if !ok {
		h.leave(t)
		t.Fatalf("Java's acquire of %s on %s returned false", h.lock, h.worker)
	}
}

// notYet fails the test if the acquire has returned already: a cheap early
// failure; the guards record the overlap in any case.
func (h *javaHolder) notYet(t testing.TB, what string) {
	t.Helper()
	if h.acq.answered() {
		t.Fatalf("%s returned (%q, %v) while the lock was held elsewhere", what, h.acq.reply, h.acq.err)
	}
}

// waiting waits until the contender has looked at the queue and chosen to
// wait: the server shows its client's session watching a node below base
// other than skip (see waitWatching). Whoever holds the lock must hold on
// until then, or a wrong grant could come after the holder left and be no
// overlap. A contender granted instead fails the test, with the overlap its
// guards recorded.
func (h *javaHolder) waiting(t testing.TB, session int64, base, skip string) {
	t.Helper()
	if waitWatching(t, session, below(base, skip), h.acq.c.Done()) {
		return
	}
	ctx := testutil.Context(t)
	r, err := h.acq.wait(ctx)
	if _, eerr := h.enter.wait(ctx); eerr == nil {
		checkGuards(t, h.guards)
	}
	t.Fatalf("Java's acquire of %s returned (%q, %v) while the lock was held elsewhere", h.lock, r, err)
}

// leave leaves the guards, on the holder's worker, keeping the lock.
func (h *javaHolder) leave(t testing.TB) {
	t.Helper()
	if !h.left {
		h.left = true
		h.p.do(t, h.worker, "guard-leave", h.token)
	}
}

// release leaves the guards, unless left already, and releases the lock:
// both on the holder's worker, one right after the other.
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

// goWaiter is a Go contender that waits for a lock on a goroutine of its
// own, which enters the guards the moment Acquire returns.
type goWaiter struct {
	label  string
	guards []*guard
	done   chan struct{} // closed when Acquire has returned and the guards are entered
	err    error
	leave  func() error
}

// goWait starts o.Acquire on a goroutine that, once it returns, enters the
// guards as label (a holder of qty leases, see enterAll).
func goWait(ctx context.Context, o owner, guards []*guard, kind guardKind, max, qty int, label string) *goWaiter {
	w := &goWaiter{label: label, guards: guards, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		if w.err = o.Acquire(ctx); w.err == nil {
			w.leave, w.err = enterAll(guards, kind, max, qty, label)
		}
	}()
	return w
}

// notYet fails the test if Acquire has returned already: a cheap early
// failure; the guards record the overlap in any case.
func (w *goWaiter) notYet(t testing.TB, what string) {
	t.Helper()
	select {
	case <-w.done:
		t.Fatalf("%s returned (%v) while the lock was held elsewhere", what, w.err)
	default:
	}
}

// waiting is javaHolder.waiting for a Go contender on a client whose
// session is session.
func (w *goWaiter) waiting(t testing.TB, session int64, base, skip string) {
	t.Helper()
	if waitWatching(t, session, below(base, skip), w.done) {
		return
	}
	checkGuards(t, w.guards)
	t.Fatalf("%s: Acquire returned (%v) while the lock was held elsewhere", w.label, w.err)
}

// granted waits (bounded) until the lock is acquired and the guards entered,
// failing the test on an error, and returns how to leave the guards (call
// it before releasing).
func (w *goWaiter) granted(t testing.TB) (leave func()) {
	t.Helper()
	select {
	case <-w.done:
	case <-testutil.Context(t).Done():
		t.Fatalf("%s: Acquire did not return within %v", w.label, testutil.Timeout)
	}
	if w.err != nil {
		t.Fatalf("%s: %v", w.label, w.err)
	}
	return func() {
		t.Helper()
		if err := w.leave(); err != nil {
			t.Fatalf("%s leaving the guards: %v", w.label, err)
		}
	}
}

// checkLog fails the test unless every guard's log (the entries, in order)
// is want.
func checkLog(t testing.TB, guards []*guard, want ...string) {
	t.Helper()
	for _, g := range guards {
		if got := g.log(t); !slices.Equal(got, want) {
			t.Fatalf("guard %s entered in the order %q, want %q", g.dir, got, want)
		}
	}
}

func newGuards(t testing.TB, n int) []*guard {
	gs := make([]*guard, n)
	for i := range gs {
		gs[i] = newGuard(t)
	}
	return gs
}

func checkGuards(t testing.TB, guards []*guard) {
	t.Helper()
	for _, g := range guards {
		g.checkClean(t)
	}
}

// The guard works across languages: with no lock at all, a Java holder
// entering while a Go holder is inside is a violation, and the other way
// round, for writers and for a reader meeting a writer.
func TestGuardSeesCrossLanguageOverlap(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "guard")
	g := newGuards(t, 1)
	leaveGo := goEnter(t, g, exclusive, 1, 1, "go-w")
	javaEnter(t, p, g, exclusive, 1, "java-w")() // sees go-w
	leaveGo()
	leaveJava := javaEnter(t, p, g, exclusive, 1, "java-w2")
	goEnter(t, g, shared, 1, 1, "go-r")() // sees java-w2
	leaveJava()
	leaveJava = javaEnter(t, p, g, shared, 1, "java-r")
	goEnter(t, g, exclusive, 1, 1, "go-w2")() // sees java-r
	leaveJava()
	leaveGo = goEnter(t, g, counted, 1, 1, "go-c")
	javaEnter(t, p, g, counted, 1, "java-c")() // sees go-c
	leaveGo()
	want := []string{
		"java java-w: entered an exclusive section someone holds",
		"go go-r: entered a shared section a writer holds",
		"go go-w2: entered an exclusive section with readers inside",
		"java java-c: 2 holders inside, at most 1 allowed",
	}
	if got := g[0].violations(t); !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g = newGuards(t, 1)
	javaEnter(t, p, g, shared, 1, "java-r")()
	goEnter(t, g, exclusive, 1, 1, "go-w")()
	javaEnter(t, p, g, exclusive, 1, "java-w")()
	checkGuards(t, g)

	// A Java holder of two leases is two holders to a counted guard.
	g = newGuards(t, 1)
	token := guardToken(t, p.do(t, "-", "guard-enter", guardDirs(g, 2), "kind=count", "max=2", "label=java-c2"))
	goEnter(t, g, counted, 2, 1, "go-c")() // sees java-c2 twice
	p.do(t, "-", "guard-leave", token)
	want = []string{"go go-c: 3 holders inside, at most 2 allowed"}
	if got := g[0].violations(t); !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
