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
// exclusive holders write to (and every holder notes its progress at), the
// chaos guard that sees overlapping holders, the record of each Go holding,
// what excuses an overlap, and the checks made after the run.

// fencedResource is the resource the chaos suite's exclusive holders write
// to, over HTTP on 127.0.0.1 (Java calls it with HttpURLConnection): GET
// /write?r=<resource>&h=<holding>&t=<token>. Each resource (one per exclusive
// lock) refuses a token lower than the highest it has accepted (409) and
// records every write, accepted or not. GET /seen?h=<holding> notes that a
// holding is inside: each contender's progress.
type fencedResource struct {
	srv    *httptest.Server
	client *http.Client

	mu       sync.Mutex
	highest  map[string]int64
	accepted []fencedWrite
	rejected []fencedWrite
	progress map[string][]time.Time // by contender label: when its holdings were inside
}

type fencedWrite struct {
	resource, holder string
	token            int64
	highest          int64 // of a rejected write: the highest token accepted before it
	at               time.Time
}

func newFencedResource(t testing.TB) *fencedResource {
	r := &fencedResource{highest: map[string]int64{}, progress: map[string][]time.Time{}}
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

// progressURL is where holders note their progress, without the holding.
func (r *fencedResource) progressURL() string { return r.srv.URL + "/seen" }

// seen notes that holding id is inside at at.
func (r *fencedResource) seen(id string, at time.Time) {
	label := contenderOf(id)
	r.mu.Lock()
	r.progress[label] = append(r.progress[label], at)
	r.mu.Unlock()
}

// firstSeen returns, for each contender, when a holding of it was first
// inside at or after t, or the zero time.
func (r *fencedResource) firstSeen(labels []string, t time.Time) map[string]time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]time.Time{}
	for _, l := range labels {
		seen := r.progress[l]
		if i, _ := slices.BinarySearchFunc(seen, t, time.Time.Compare); i < len(seen) {
			out[l] = seen[i]
		} else {
			out[l] = time.Time{}
		}
	}
	return out
}

// timeline counts the holdings that were inside in each step since start.
func (r *fencedResource) timeline(start time.Time, step time.Duration) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int
	for _, seen := range r.progress {
		for _, at := range seen {
			i := int(at.Sub(start) / step)
			if i < 0 {
				continue
			}
			for len(out) <= i {
				out = append(out, 0)
			}
			out[i]++
		}
	}
	return out
}

// highestNow returns the highest token resource has accepted so far.
func (r *fencedResource) highestNow(resource string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest[resource]
}

// writesOf returns holding id's accepted and rejected writes.
func (r *fencedResource) writesOf(id string) (accepted, rejected []fencedWrite) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.accepted {
		if w.holder == id {
			accepted = append(accepted, w)
		}
	}
	for _, w := range r.rejected {
		if w.holder == id {
			rejected = append(rejected, w)
		}
	}
	return accepted, rejected
}

func (r *fencedResource) serve(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	if req.URL.Path == "/seen" {
		if q.Get("h") == "" {
			http.Error(w, "want h", http.StatusBadRequest)
			return
		}
		r.seen(q.Get("h"), time.Now())
		io.WriteString(w, "ok")
		return
	}
	res, holder := q.Get("r"), q.Get("h")
	token, err := strconv.ParseInt(q.Get("t"), 10, 64)
	if res == "" || holder == "" || err != nil {
		http.Error(w, "want r, h and t", http.StatusBadRequest)
		return
	}
	wr := fencedWrite{resource: res, holder: holder, token: token}
	r.mu.Lock()
	wr.at = time.Now()
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
// same resource (staleAccepted: a stale write accepted), and no token was
// used by two holdings (a token is the czxid of one lock node). Every
// rejected write (a stale write refused) must come from a holding that was
// told it lost its lock, or that spanned a pause of its process (it could
// not be told: only the token protects the resource from it). It returns
// the violations, the stale writes accepted, and the numbers of accepted and
// rejected (fenced) writes.
func (r *fencedResource) audit(ex excuses) (violations, staleAccepted []string, accepted, fenced int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	highest := map[string]int64{}
	owner := map[string]map[int64]string{}
	for i, w := range r.accepted {
		if w.token < highest[w.resource] {
			staleAccepted = append(staleAccepted, fmt.Sprintf("resource %s accepted write %d from %s with stale token %d < %d",
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
		if _, ok := ex.told[w.holder]; !ok && !ex.paused(w.holder, w.at.UnixMicro()) {
			violations = append(violations, fmt.Sprintf("resource %s fenced %s (token %d < %d), which was never told it lost the lock",
				w.resource, w.holder, w.token, w.highest))
		}
	}
	return violations, staleAccepted, len(r.accepted), len(r.rejected)
}

// contenderOf returns the contender label of holding id (<label>.<n>).
func contenderOf(id string) string {
	label, _, _ := strings.Cut(id, ".")
	return label
}

// excuses is what excuses a holding's overlap: it was told it lost its lock
// by then, or it spanned a pause of its process (SIGSTOP for longer than the
// session timeout) and the overlap came after the pause began and before the
// process could be told, once resumed: no lock can exclude a paused holder,
// only fencing protects a resource from it (the fenced resource and
// staleAccepted check that).
type excuses struct {
	told   map[string]int64 // holdings told, in µs
	pauses []pauseWindow
}

// pauseWindow is one pause of a contender process: from SIGSTOP to SIGCONT,
// with the highest number of a holding of each of its contenders that began
// before it (see peerClient.spanBounds).
type pauseWindow struct {
	client   string
	from, to time.Time
	bounds   map[string]int64 // contender label -> highest holding number
}

// spans reports whether holding id of the paused client began before the
// pause.
func (p pauseWindow) spans(id string) bool {
	label, num, ok := strings.Cut(id, ".")
	if client, _, _ := strings.Cut(label, "-"); !ok || client != p.client {
		return false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	return err == nil && n <= p.bounds[label]
}

// paused reports whether holding id spanned a pause that covers the moment
// at (µs): from the SIGSTOP until the loss-notice bound after the SIGCONT.
func (e excuses) paused(id string, at int64) bool {
	for _, p := range e.pauses {
		if p.spans(id) && at >= p.from.UnixMicro() && at <= p.to.Add(chaosNoticeBound).UnixMicro() {
			return true
		}
	}
	return false
}

// excused reports whether holding id's part in an overlap seen at at (µs)
// is excused.
func (e excuses) excused(id string, at int64) bool {
	if t, ok := e.told[id]; ok && t <= at {
		return true
	}
	return e.paused(id, at)
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

// judge returns the conflicts that are violations: an overlap is a
// violation unless excused (see excuses) for enough of the holdings in it.
func (c guardConflict) judge(ex excuses) (string, bool) {
	untold := func(id string) bool { return !ex.excused(id, c.at) }
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
	return fmt.Sprintf("%s entered (%s, at most %d) while %s were inside, %d of them unexcused",
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
	token  int64     // the fencing token it writes with, once read
	told   time.Time // when told the lock was lost; zero if not
	ended  time.Time // when it finished
}

func (h *goHolding) setToken(t int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.token = t
}

func (h *goHolding) tokenNow() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.token
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
func judgeGuards(guards []*chaosGuard, ex excuses) (violations []string, overlaps int, err error) {
	for _, g := range guards {
		cs, err := g.conflicts()
		if err != nil {
			return nil, 0, err
		}
		overlaps += len(cs)
		for _, c := range cs {
			if what, bad := c.judge(ex); bad {
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

	v, n, err := judgeGuards([]*chaosGuard{g}, excuses{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != n || n < 2 || !strings.Contains(v[0], "gx.1 entered (excl, at most 1) while jx.1") ||
		!strings.Contains(v[len(v)-1], "jx.") || !strings.Contains(v[len(v)-1], "while gx.1") {
		t.Fatalf("%d overlaps, violations:\n%s", n, strings.Join(v, "\n"))
	}
	judge := func(ex excuses) []string {
		t.Helper()
		v, _, err := judgeGuards([]*chaosGuard{g}, ex)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// Told before the overlaps, the Go holding excuses them all.
	if v := judge(excuses{told: map[string]int64{"gx.1": 0}}); len(v) != 0 {
		t.Fatalf("violations with gx.1 told:\n%s", strings.Join(v, "\n"))
	}
	// Told after them, it excuses none.
	if v := judge(excuses{told: map[string]int64{"gx.1": time.Now().UnixMicro()}}); len(v) != n {
		t.Fatalf("%d violations with gx.1 told late, want %d", len(v), n)
	}
	// A pause of gx's process that gx.1 spanned excuses them, from its start
	// to the notice bound after its end; not a holding begun after it, nor a
	// pause that began after the overlaps or ended long before, nor one of
	// another process.
	spanned := pauseWindow{client: "gx", from: time.Now().Add(-time.Minute), to: time.Now().Add(-time.Second),
		bounds: map[string]int64{"gx": 1}}
	if v := judge(excuses{pauses: []pauseWindow{spanned}}); len(v) != 0 {
		t.Fatalf("violations with gx.1 paused:\n%s", strings.Join(v, "\n"))
	}
	for _, p := range []pauseWindow{
		{client: "gx", from: time.Now().Add(-time.Minute), to: time.Now().Add(-time.Second), bounds: map[string]int64{"gx": 0}},
		{client: "gx", from: time.Now(), to: time.Now().Add(time.Second), bounds: map[string]int64{"gx": 1}},
		{client: "gx", from: time.Now().Add(-time.Minute), to: time.Now().Add(-time.Minute / 2), bounds: map[string]int64{"gx": 1}},
		{client: "gy", from: time.Now().Add(-time.Minute), to: time.Now(), bounds: map[string]int64{"gy": 10}},
	} {
		if v := judge(excuses{pauses: []pauseWindow{p}}); len(v) == 0 {
			t.Fatalf("pause %+v excused gx.1's overlaps", p)
		}
	}

	now := time.Now()
	write := func(res, holder string, token, highest int64) fencedWrite {
		return fencedWrite{resource: res, holder: holder, token: token, highest: highest, at: now}
	}
	r := &fencedResource{
		accepted: []fencedWrite{write("a", "h1", 5, 0), write("a", "h2", 7, 0), write("a", "h1", 5, 0), write("a", "h3", 7, 0),
			write("b", "h4", 1, 0)},
		rejected: []fencedWrite{write("a", "h1", 5, 7), write("a", "h5", 6, 7), write("a", "p1-m-0.3", 4, 7),
			write("a", "p1-m-0.9", 4, 7)},
	}
	paused := pauseWindow{client: "p1", from: now.Add(-chaosSessionTimeout - time.Second), to: now,
		bounds: map[string]int64{"p1-m-0": 3}}
	v, stale, accepted, fenced := r.audit(excuses{told: map[string]int64{"h1": 1}, pauses: []pauseWindow{paused}})
	if want := []string{"resource a accepted write 2 from h1 with stale token 5 < 7"}; !slices.Equal(stale, want) {
		t.Fatalf("stale writes accepted %q, want %q", stale, want)
	}
	want := []string{
		"resource a: token 7 used by h2 and h3",
		"resource a fenced h5 (token 6 < 7), which was never told it lost the lock",
		"resource a fenced p1-m-0.9 (token 4 < 7), which was never told it lost the lock",
	}
	if !slices.Equal(v, want) || accepted != 5 || fenced != 4 {
		t.Fatalf("audit: %d accepted, %d fenced, violations\n%s\nwant\n%s", accepted, fenced, strings.Join(v, "\n"), strings.Join(want, "\n"))
	}
}
