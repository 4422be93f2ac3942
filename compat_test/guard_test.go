package compat_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// guard is a critical-section detector that works across processes and
// languages: every holder of a lock, Go or Java, enters it while it holds
// the lock, and it records every overlap the lock should have prevented. It
// lives in the test: a Go holder calls it, a Java holder reaches it over HTTP
// (GET <url>/enter?kind=&max=&label= answers the marker's number, GET
// <url>/leave?m=<number> leaves; see CuratorPeer.java's guard-enter). The
// rule, which the chaos suite's referee applies too: an exclusive holder (a
// writer, a mutex holder, a leader) meets every other holder inside, a
// shared one (a reader) the exclusive ones, a counted one (a semaphore
// lease) more than max counted ones in all. An entry that meets one it must
// not is a conflict. Every entry is logged, in order.
type guard struct {
	url string // "" for a guard only Go holders reach

	mu        sync.Mutex
	next      int
	inside    map[int]guardMarker
	entries   []string
	conflicts []guardConflict
}

// guardKind is how a holder enters a guard.
type guardKind string

const (
	exclusive guardKind = "excl"
	shared    guardKind = "shared"
	counted   guardKind = "count"
)

type guardMarker struct {
	label string
	kind  guardKind
}

// guardConflict is an entry that met holders it must not.
type guardConflict struct {
	label  string
	kind   guardKind
	max    int
	at     time.Time
	others []string // sorted
}

func newGuard(t testing.TB) *guard {
	g := &guard{}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.url = srv.URL
	return g
}

// enter enters the guard as label, and returns its marker's number.
func (g *guard) enter(kind guardKind, max int, label string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	var others []string
	for _, m := range g.inside {
		if kind == exclusive || kind == shared && m.kind == exclusive || kind == counted && m.kind == counted {
			others = append(others, m.label)
		}
	}
	if len(others) > 0 && (kind != counted || len(others)+1 > max) {
		slices.Sort(others)
		g.conflicts = append(g.conflicts, guardConflict{label: label, kind: kind, max: max, at: time.Now(), others: others})
	}
	if g.inside == nil {
		g.inside = map[int]guardMarker{}
	}
	g.next++
	g.inside[g.next] = guardMarker{label, kind}
	g.entries = append(g.entries, label)
	return g.next
}

// leave takes marker m out of the guard.
func (g *guard) leave(m int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inside, m)
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	switch r.URL.Path {
	case "/enter":
		max, _ := strconv.Atoi(q.Get("max"))
		fmt.Fprint(w, g.enter(guardKind(q.Get("kind")), max, q.Get("label")))
	case "/leave":
		m, _ := strconv.Atoi(q.Get("m"))
		g.leave(m)
	default:
		http.NotFound(w, r)
	}
}

// insideNow returns the labels of the holders inside.
func (g *guard) insideNow() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, m := range g.inside {
		out = append(out, m.label)
	}
	return out
}

// conflictsNow returns the conflicts so far.
func (g *guard) conflictsNow() []guardConflict {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.conflicts)
}

// violations returns every overlap recorded, by either language.
func (g *guard) violations() []string {
	var out []string
	for _, c := range g.conflictsNow() {
		out = append(out, fmt.Sprintf("%s entered (%s, at most %d) while %s were inside", c.label, c.kind, c.max, strings.Join(c.others, ",")))
	}
	return out
}

// log returns the labels of every entry, in order.
func (g *guard) log() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.entries)
}

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
	l1 := goEnter([]*guard{g}, exclusive, 1, 1, "w1")
	l2 := goEnter([]*guard{g}, shared, 0, 1, "r1")
	goEnter([]*guard{g}, exclusive, 1, 1, "w2")()
	l2()
	l1()
	want := []string{"r1 entered (shared, at most 0) while w1 were inside", "w2 entered (excl, at most 1) while r1,w1 were inside"}
	if v := g.violations(); !slices.Equal(v, want) {
		t.Fatalf("violations %q, want %q", v, want)
	}
	g = newGuard(t)
	r1 := goEnter([]*guard{g}, shared, 0, 1, "r1")
	goEnter([]*guard{g}, shared, 0, 1, "r2")()
	c1 := goEnter([]*guard{g}, counted, 2, 1, "c1")
	goEnter([]*guard{g}, counted, 2, 1, "c2")()
	r1()
	c1()
	g.checkClean(t)
	// A holder of two leases is two holders to a counted guard.
	l1 = goEnter([]*guard{g}, counted, 2, 2, "c2x")
	goEnter([]*guard{g}, counted, 2, 1, "c1")()
	l1()
	if v := g.violations(); len(v) != 1 {
		t.Fatalf("violations %q, want 1", v)
	}
	if got := strings.Join(g.log(), " "); got != "r1 r2 c1 c2 c2x c2x c1" {
		t.Fatalf("log %q", got)
	}
}

// guardURLs joins the guards' URLs for the peer, each qty times (see
// goEnter).
func guardURLs(guards []*guard, qty int) string {
	var urls []string
	for _, g := range guards {
		for range qty {
			urls = append(urls, g.url)
		}
	}
	return strings.Join(urls, ",")
}

// goEnter enters every guard as a Go holder label, each qty times (a holder
// of qty of a semaphore's leases counts as qty holders), and returns how to
// leave them all.
func goEnter(guards []*guard, kind guardKind, max, qty int, label string) (leave func()) {
	var leaves []func()
	for _, g := range guards {
		for range qty {
			m := g.enter(kind, max, label)
			leaves = append(leaves, func() { g.leave(m) })
		}
	}
	return func() {
		for _, l := range leaves {
			l()
		}
	}
}

// javaEnter has the peer enter every guard as a Java holder, on a pool
// thread, and returns how to leave them. Holders of a lock enter through
// javaHold instead, on their own worker.
func javaEnter(t testing.TB, p *peer, guards []*guard, kind guardKind, max int, label string) (leave func()) {
	t.Helper()
	token := p.do(t, "-", "guard-enter", guardURLs(guards, 1), "kind="+string(kind), "max="+strconv.Itoa(max), "label="+label)
	return func() {
		t.Helper()
		p.do(t, "-", "guard-leave", token)
	}
}

// checkLog fails the test unless every guard's log (the entries, in order)
// is want.
func checkLog(t testing.TB, guards []*guard, want ...string) {
	t.Helper()
	for _, g := range guards {
		if got := g.log(); !slices.Equal(got, want) {
			t.Fatalf("guard %s entered in the order %q, want %q", g.url, got, want)
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
// round, for writers and for a reader meeting a writer; a Java holder of two
// leases is two holders to a counted guard.
func TestGuardSeesCrossLanguageOverlap(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "guard")
	g := newGuards(t, 1)
	leaveGo := goEnter(g, exclusive, 1, 1, "go-w")
	javaEnter(t, p, g, exclusive, 1, "java-w")() // sees go-w
	leaveGo()
	leaveJava := javaEnter(t, p, g, exclusive, 1, "java-w2")
	goEnter(g, shared, 1, 1, "go-r")() // sees java-w2
	leaveJava()
	leaveJava = javaEnter(t, p, g, shared, 1, "java-r")
	goEnter(g, exclusive, 1, 1, "go-w2")() // sees java-r
	leaveJava()
	leaveGo = goEnter(g, counted, 1, 1, "go-c")
	javaEnter(t, p, g, counted, 1, "java-c")() // sees go-c
	leaveGo()
	token := p.do(t, "-", "guard-enter", guardURLs(g, 2), "kind=count", "max=2", "label=java-c2")
	goEnter(g, counted, 2, 1, "go-c2")() // sees java-c2 twice
	p.do(t, "-", "guard-leave", token)
	javaEnter(t, p, g, shared, 1, "java-r2")()
	goEnter(g, exclusive, 1, 1, "go-w3")()
	javaEnter(t, p, g, exclusive, 1, "java-w3")()
	want := []string{
		"java-w entered (excl, at most 1) while go-w were inside",
		"go-r entered (shared, at most 1) while java-w2 were inside",
		"go-w2 entered (excl, at most 1) while java-r were inside",
		"java-c entered (count, at most 1) while go-c were inside",
		"go-c2 entered (count, at most 2) while java-c2,java-c2 were inside",
	}
	if got := g[0].violations(); !slices.Equal(got, want) {
		t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
