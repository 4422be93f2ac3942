package compat_test

import (
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

// enter enters the guard as label; leave undoes it.
func (g *guard) enter(kind guardKind, max int, label string) (leave func(), err error) {
	held := filepath.Join(g.dir, "held")
	var undo []string
	leave = func() {
		for i := len(undo) - 1; i >= 0; i-- {
			os.Remove(undo[i])
		}
	}
	switch kind {
	case exclusive:
		if err := os.Mkdir(held, 0o755); errors.Is(err, fs.ErrExist) {
			g.violation(label + ": entered an exclusive section someone holds")
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
			g.violation(label + ": entered an exclusive section with readers inside")
		}
	case shared:
		m := filepath.Join(g.dir, "readers", fmt.Sprintf("%s-go-%d", label, markerSeq.Add(1)))
		if err := os.WriteFile(m, nil, 0o644); err != nil {
			return leave, err
		}
		undo = append(undo, m)
		if _, err := os.Stat(held); err == nil {
			g.violation(label + ": entered a shared section a writer holds")
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
			g.violation(fmt.Sprintf("%s: %d holders inside, at most %d allowed", label, len(holders), max))
		}
	default:
		return leave, fmt.Errorf("unknown guard kind %q", kind)
	}
	return leave, appendLine(filepath.Join(g.dir, "log"), label)
}

func (g *guard) violation(what string) {
	_ = appendLine(filepath.Join(g.dir, "violations"), "go "+what)
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

func readLines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := strings.TrimRight(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// violations returns every overlap recorded, by either language.
func (g *guard) violations() []string { return readLines(filepath.Join(g.dir, "violations")) }

// log returns the labels of every entry, in order.
func (g *guard) log() []string { return readLines(filepath.Join(g.dir, "log")) }

// checkClean fails the test if any violation was recorded.
func (g *guard) checkClean(t testing.TB) {
	t.Helper()
	if v := g.violations(); len(v) > 0 {
		t.Fatalf("%d critical-section violations:\n%s", len(v), strings.Join(v, "\n"))
	}
}

// Sanity check of the guard itself: overlaps are seen, whoever comes second.
func TestGuardSeesOverlap(t *testing.T) {
	g := newGuard(t)
	l1, err := g.enter(exclusive, 1, "w1")
	if err != nil {
		t.Fatal(err)
	}
	l2, _ := g.enter(shared, 0, "r1")
	l3, _ := g.enter(exclusive, 1, "w2")
	l2()
	l3()
	l1()
	if n := len(g.violations()); n != 3 { // r1 sees w1; w2 sees w1 and r1
		t.Fatalf("violations %q, want 3", g.violations())
	}
	g = newGuard(t)
	r1, _ := g.enter(shared, 0, "r1")
	r2, _ := g.enter(shared, 0, "r2")
	c1, _ := g.enter(counted, 2, "c1")
	c2, _ := g.enter(counted, 2, "c2")
	r1()
	r2()
	c1()
	c2()
	g.checkClean(t)
	c1, _ = g.enter(counted, 1, "c1")
	c2, _ = g.enter(counted, 1, "c2")
	c1()
	c2()
	if n := len(g.violations()); n != 1 {
		t.Fatalf("violations %q, want 1", g.violations())
	}
	if got := strings.Join(g.log(), " "); got != "r1 r2 c1 c2 c1 c2" {
		t.Fatalf("log %q", got)
	}
}

// guardDirs joins the guards' directories for the peer.
func guardDirs(guards []*guard) string {
	dirs := make([]string, len(guards))
	for i, g := range guards {
		dirs[i] = g.dir
	}
	return strings.Join(dirs, ",")
}

// goEnter enters every guard as a Go holder and returns how to leave them.
func goEnter(t testing.TB, guards []*guard, kind guardKind, max int, label string) (leave func()) {
	t.Helper()
	var leaves []func()
	leave = func() {
		for i := len(leaves) - 1; i >= 0; i-- {
			leaves[i]()
		}
	}
	for _, g := range guards {
		l, err := g.enter(kind, max, label)
		leaves = append(leaves, l)
		if err != nil {
			leave()
			t.Fatal(err)
		}
	}
	return leave
}

// javaEnter has the peer enter every guard as a Java holder and returns how
// to leave them.
func javaEnter(t testing.TB, p *peer, guards []*guard, kind guardKind, max int, label string) (leave func()) {
	t.Helper()
	r := p.do(t, "-", "guard-enter", guardDirs(guards), "kind="+string(kind), "max="+strconv.Itoa(max), "label="+label)
	token, _, _ := strings.Cut(r, " ")
	return func() { p.do(t, "-", "guard-leave", token) }
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
	leaveGo := goEnter(t, g, exclusive, 1, "go-w")
	javaEnter(t, p, g, exclusive, 1, "java-w")() // sees go-w
	leaveGo()
	leaveJava := javaEnter(t, p, g, exclusive, 1, "java-w2")
	goEnter(t, g, shared, 1, "go-r")() // sees java-w2
	leaveJava()
	leaveJava = javaEnter(t, p, g, shared, 1, "java-r")
	goEnter(t, g, exclusive, 1, "go-w2")() // sees java-r
	leaveJava()
	leaveGo = goEnter(t, g, counted, 1, "go-c")
	javaEnter(t, p, g, counted, 1, "java-c")() // sees go-c
	leaveGo()
	want := []string{
		"java java-w: entered an exclusive section someone holds",
		"go go-r: entered a shared section a writer holds",
		"go go-w2: entered an exclusive section with readers inside",
		"java java-c: 2 holders inside, at most 1 allowed",
	}
	if got := g[0].violations(); !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g = newGuards(t, 1)
	javaEnter(t, p, g, shared, 1, "java-r")()
	goEnter(t, g, exclusive, 1, "go-w")()
	javaEnter(t, p, g, exclusive, 1, "java-w")()
	checkGuards(t, g)
}
