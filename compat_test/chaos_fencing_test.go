package compat_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// This file holds what the chaos suite judges by: the fenced resource that
// exclusive holders write to, the chaos guard that sees overlapping holders,
// the record of each Go holding, and the checks made after the run.

// fencedResource is the resource the chaos suite's exclusive holders write
// to, over HTTP on 127.0.0.1 (Java calls it with HttpURLConnection): GET
// /write?r=<resource>&h=<holding>&t=<token>. Each resource (one per exclusive
// lock) refuses a token lower than the highest it has accepted (409) and
// records every write, accepted or not.
type fencedResource struct {
	srv    *httptest.Server
	client *http.Client

	mu       sync.Mutex
	highest  map[string]int64
	accepted []fencedWrite
	rejected []fencedWrite
}

type fencedWrite struct {
	resource, holder string
	token            int64
	highest          int64 // of a rejected write: the highest token accepted before it
}

func newFencedResource(t testing.TB) *fencedResource {
	r := &fencedResource{highest: map[string]int64{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	r.client = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	t.Cleanup(func() {
		r.srv.Close()
		tr.CloseIdleConnections()
	})
	return r
}

// url is where holders of resource write, without the holder and token.
func (r *fencedResource) url(resource string) string {
	return r.srv.URL + "/write?r=" + resource
}

func (r *fencedResource) serve(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	res, holder := q.Get("r"), q.Get("h")
	token, err := strconv.ParseInt(q.Get("t"), 10, 64)
	if res == "" || holder == "" || err != nil {
		http.Error(w, "want r, h and t", http.StatusBadRequest)
		return
	}
	wr := fencedWrite{resource: res, holder: holder, token: token}
	r.mu.Lock()
	if token < r.highest[res] {
		wr.highest = r.highest[res]
		r.rejected = append(r.rejected, wr)
		r.mu.Unlock()
		http.Error(w, fmt.Sprintf("stale token %d < %d", token, wr.highest), http.StatusConflict)
		return
	}
	r.highest[res] = token
	r.accepted = append(r.accepted, wr)
	r.mu.Unlock()
	io.WriteString(w, "ok")
}

// write is a Go holder's write: true if accepted, false if fenced.
func (r *fencedResource) write(resource, holder string, token int64) (bool, error) {
	resp, err := r.client.Get(r.url(resource) + "&h=" + holder + "&t=" + strconv.FormatInt(token, 10))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusConflict:
		return false, nil
	}
	return false, fmt.Errorf("resource answered %s", resp.Status)
}

// audit checks the writes after the run, independently of the online rule:
// in the order accepted, no token is lower than one accepted before it on the
// same resource, and no token was used by two holdings (a token is the czxid
// of one lock node). Every rejected write must come from a holding that was
// told it lost its lock. It returns the violations and the number of
// rejected (fenced) writes.
func (r *fencedResource) audit(told map[string]int64) (violations []string, accepted, fenced int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	highest := map[string]int64{}
	owner := map[string]map[int64]string{}
	for i, w := range r.accepted {
		if w.token < highest[w.resource] {
			violations = append(violations, fmt.Sprintf("resource %s accepted write %d from %s with stale token %d < %d",
				w.resource, i, w.holder, w.token, highest[w.resource]))
		}
		highest[w.resource] = max(highest[w.resource], w.token)
		if owner[w.resource] == nil {
			owner[w.resource] = map[int64]string{}
		}
		if o, ok := owner[w.resource][w.token]; ok && o != w.holder {
			violations = append(violations, fmt.Sprintf("resource %s: token %d used by %s and %s", w.resource, w.token, o, w.holder))
		}
		owner[w.resource][w.token] = w.holder
	}
	for _, w := range r.rejected {
		if _, ok := told[w.holder]; !ok {
			violations = append(violations, fmt.Sprintf("resource %s fenced %s (token %d < %d), which was never told it lost the lock",
				w.resource, w.holder, w.token, w.highest))
		}
	}
	return violations, len(r.accepted), len(r.rejected)
}

// chaosGuard is the guard of guard_test.go with named markers, so that an
// overlap can be judged after the run against the times the holders were
// told (the same rule in internal/curatorpeer/CuratorPeer.java): a holding
// creates <dir>/inside/<kind>~<holding>, then lists <dir>/inside. An excl
// holding conflicts with every other marker, a shared one with excl markers,
// a count one when there are more than max count markers. Markers are
// created before the check and removed only on leaving, so of two holdings
// that overlap, the later one to enter sees the other. A conflict appends
// "<holding> <µs> <kind> <max> <other>,<other>..." to <dir>/conflicts.
type chaosGuard struct {
	name, dir string
}

func newChaosGuard(t testing.TB, name string) *chaosGuard {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(filepath.Join(dir, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &chaosGuard{name: name, dir: dir}
}

// enter enters as holding id and returns its marker.
func (g *chaosGuard) enter(kind guardKind, max int, id string) (marker string, err error) {
	inside := filepath.Join(g.dir, "inside")
	marker = filepath.Join(inside, string(kind)+"~"+id)
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(inside)
	if err != nil {
		return marker, err
	}
	var others []string
	for _, e := range entries {
		k, holder, ok := strings.Cut(e.Name(), "~")
		if !ok || holder == id {
			continue
		}
		if kind == exclusive || (kind == shared && k == string(exclusive)) || (kind == counted && k == string(counted)) {
			others = append(others, holder)
		}
	}
	at := time.Now().UnixMicro()
	if overlap := len(others) > 0; overlap && (kind != counted || len(others)+1 > max) {
		err = appendLine(filepath.Join(g.dir, "conflicts"),
			fmt.Sprintf("%s %d %s %d %s", id, at, kind, max, strings.Join(others, ",")))
	}
	return marker, err
}

// guardConflict is one line of a chaos guard's conflicts.
type guardConflict struct {
	holder string
	at     int64 // µs
	kind   guardKind
	max    int
	others []string
}

func (g *chaosGuard) conflicts() ([]guardConflict, error) {
	lines, err := readLines(filepath.Join(g.dir, "conflicts"))
	if err != nil {
		return nil, fmt.Errorf("guard %s: %w", g.name, err)
	}
	var out []guardConflict
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) != 5 {
			return nil, fmt.Errorf("guard %s: bad conflict line %q", g.name, line)
		}
		at, err1 := strconv.ParseInt(f[1], 10, 64)
		max, err2 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("guard %s: bad conflict line %q: %w", g.name, line, err)
		}
		out = append(out, guardConflict{holder: f[0], at: at, kind: guardKind(f[2]), max: max, others: strings.Split(f[4], ",")})
	}
	return out, nil
}

// judge returns the conflicts that are violations: an overlap is excused
// only if a holding in it had been told it lost its lock by the time the
// overlap was seen (told maps holdings to the µs they were told).
func (c guardConflict) judge(told map[string]int64) (string, bool) {
	untold := func(id string) bool {
		at, ok := told[id]
		return !ok || at > c.at
	}
	n := 0
	for _, o := range c.others {
		if untold(o) {
			n++
		}
	}
	var bad bool
	if c.kind == counted {
		if untold(c.holder) {
			n++
		}
		bad = n > c.max
	} else {
		bad = untold(c.holder) && n > 0
	}
	return fmt.Sprintf("%s entered (%s, at most %d) while %s were inside, %d of them untold",
		c.holder, c.kind, c.max, strings.Join(c.others, ","), n), bad
}

// readTold reads Java's told file: "<holding> <µs> <state>" lines.
func readTold(path string, into map[string]int64) error {
	lines, err := readLines(path)
	if err != nil {
		return err
	}
	for _, line := range lines {
		f := strings.Fields(line)
		if len(f) < 2 {
			return fmt.Errorf("bad told line %q", line)
		}
		at, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return fmt.Errorf("bad told line %q: %w", line, err)
		}
		into[f[0]] = at
	}
	return nil
}

// goHolding is one acquisition by a Go contender, from acquire to release.
type goHolding struct {
	id    string
	kind  guardKind
	max   int
	guard *chaosGuard
	done  chan struct{} // closed by finish

	mu     sync.Mutex
	marker string    // while inside the guard
	told   time.Time // when told the lock was lost; zero if not
	ended  time.Time // when it finished
}

// enter enters the guard unless already told; it reports whether it did.
func (h *goHolding) enter() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.told.IsZero() {
		return false, nil
	}
	m, err := h.guard.enter(h.kind, h.max, h.id)
	h.marker = m
	return true, err
}

// tell records that the holding was told it lost its lock, and leaves the
// guard at once. It reports whether this was news.
func (h *goHolding) tell(at time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.told.IsZero() || !h.ended.IsZero() {
		return false
	}
	h.told = at
	h.leaveLocked()
	return true
}

func (h *goHolding) leaveLocked() {
	if h.marker != "" {
		os.Remove(h.marker)
		h.marker = ""
	}
}

// finish leaves the guard; the holding is over.
func (h *goHolding) finish() {
	h.mu.Lock()
	h.leaveLocked()
	h.ended = time.Now()
	h.mu.Unlock()
	close(h.done)
}

// inside reports whether the holding is in the guard (entered, not told).
func (h *goHolding) inside() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.marker != ""
}

// outcome is when the holding was told, or else when it ended (zero if it
// has done neither).
func (h *goHolding) outcome() (told, ended time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.told, h.ended
}

// judgeGuards returns every unexcused overlap in the guards, and how many
// overlaps there were in all.
func judgeGuards(guards []*chaosGuard, told map[string]int64) (violations []string, overlaps int, err error) {
	for _, g := range guards {
		cs, err := g.conflicts()
		if err != nil {
			return nil, 0, err
		}
		overlaps += len(cs)
		for _, c := range cs {
			if what, bad := c.judge(told); bad {
				violations = append(violations, "guard "+g.name+": "+what)
			}
		}
	}
	slices.Sort(violations)
	return violations, overlaps, nil
}

// The chaos suite's checks see what they must, in both languages: a Java
// holding that holds on inside sees a Go holding enter, and the other way
// round; each overlap is a violation unless a holding in it had been told;
// the audit finds stale accepted tokens, shared tokens and fenced holders
// that were never told.
func TestChaosChecksSeeViolations(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "chaos-checks")
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	p.client(t, "jc", server.Addr())
	p.do(t, "-", "mutex", "m", "jc", base)
	g := newChaosGuard(t, "g")
	toldPath := filepath.Join(t.TempDir(), "told")
	ctx := testutil.Context(t)

	p.do(t, "-", "linger", "jc", "on")
	loop := p.send("w1", "chaos", "m", "label=jx", "guard="+g.dir, "told="+toldPath, "kind=excl", "linger=60000")
	for p.do(t, "-", "inside", "jc") != "1" {
		if ctx.Err() != nil {
			t.Fatal("Java's holding did not enter the guard")
		}
		pause(ctx, 10*time.Millisecond) // polling until Java's holding is inside
	}
	h := &goHolding{id: "gx.1", kind: exclusive, max: 1, guard: g, done: make(chan struct{})}
	if _, err := h.enter(); err != nil { // sees jx.1
		t.Fatal(err)
	}
	p.do(t, "-", "linger", "jc", "off") // jx.1 ends; jx.2 enters and sees gx.1
	for len(mustLines(t, filepath.Join(g.dir, "conflicts"))) < 2 {
		pause(ctx, 10*time.Millisecond) // polling until Java has seen the Go holding
		if ctx.Err() != nil {
			t.Fatal("Java did not see the Go holding")
		}
	}
	p.do(t, "-", "chaos-stop", "jx")
	loop.must(t)
	h.finish()

	v, n, err := judgeGuards([]*chaosGuard{g}, map[string]int64{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != n || n < 2 || !strings.Contains(v[0], "gx.1 entered (excl, at most 1) while jx.1") ||
		!strings.Contains(v[len(v)-1], "jx.") || !strings.Contains(v[len(v)-1], "while gx.1") {
		t.Fatalf("%d overlaps, violations:\n%s", n, strings.Join(v, "\n"))
	}
	// Told before the overlaps, the Go holding excuses them all.
	if v, _, _ := judgeGuards([]*chaosGuard{g}, map[string]int64{"gx.1": 0}); len(v) != 0 {
		t.Fatalf("violations with gx.1 told:\n%s", strings.Join(v, "\n"))
	}
	// Told after them, it excuses none.
	if v, _, _ := judgeGuards([]*chaosGuard{g}, map[string]int64{"gx.1": time.Now().UnixMicro()}); len(v) != n {
		t.Fatalf("%d violations with gx.1 told late, want %d", len(v), n)
	}

	r := &fencedResource{
		accepted: []fencedWrite{{"a", "h1", 5, 0}, {"a", "h2", 7, 0}, {"a", "h1", 5, 0}, {"a", "h3", 7, 0}, {"b", "h4", 1, 0}},
		rejected: []fencedWrite{{"a", "h1", 5, 7}, {"a", "h5", 6, 7}},
	}
	v, accepted, fenced := r.audit(map[string]int64{"h1": 1})
	want := []string{
		"resource a accepted write 2 from h1 with stale token 5 < 7",
		"resource a: token 7 used by h2 and h3",
		"resource a fenced h5 (token 6 < 7), which was never told it lost the lock",
	}
	if !slices.Equal(v, want) || accepted != 5 || fenced != 2 {
		t.Fatalf("audit: %d accepted, %d fenced, violations\n%s\nwant\n%s", accepted, fenced, strings.Join(v, "\n"), strings.Join(want, "\n"))
	}
}
