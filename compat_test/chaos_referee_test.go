package compat_test

import (
	"fmt"
	"io"
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

// This file holds what the chaos suite judges by: the referee that every
// contender, of either language, tells about its holdings, and the checks
// made of what it saw after the run.

// referee is the chaos suite's referee, over HTTP on 127.0.0.1. A holding
// (of a contender labelled <client>-<role>-<i>, numbered <n>: id
// <client>-<role>-<i>.<n>) calls, each answered 200 with a word:
//
//   - GET /enter?h=<id>&b=<µs its wait began>&t=<its fencing token>: it
//     enters its guard (a guard of guard_test.go, one per role's guard and
//     family; see chaosRole), "ok", or "linger" while its client's holders
//     are to hold on, or "told" (it does not enter) if it was told first.
//   - GET /step?h=<id>: one step inside; for a fenced role, a write of its
//     token to the role's resource in its family, which refuses a token
//     lower than the highest it has accepted ("fenced") and records every
//     write.
//   - GET /told?h=<id>&at=<µs>: it was told its lock can no longer be
//     trusted, at at; it leaves the guard.
//   - GET /leave?h=<id>: it leaves the guard.
type referee struct {
	srv *httptest.Server

	mu        sync.Mutex
	holdings  map[string]*holdingRecord
	guards    map[string]*guard
	highest   map[string]int64 // by resource
	writes    []fencedWrite
	pauses    []pauseWindow
	lingering map[string]int         // by client: how many faults want its holders to hold on
	entered   map[string][]time.Time // by contender label: when its holdings entered
}

// holdingRecord is what the referee knows of one holding.
type holdingRecord struct {
	id, client, label string
	role              chaosRole
	guard, resource   string // resource: "" for a role that does not write
	token             int64
	marker            int // in its guard; 0 when not inside
	began, told, left time.Time
}

// fencedWrite is one write to a fenced resource (its holding's).
type fencedWrite struct {
	h              *holdingRecord
	token, highest int64 // highest: accepted before it
	refused        bool
	at             time.Time
}

// pauseWindow is one pause of a contender process: from SIGSTOP to SIGCONT.
type pauseWindow struct {
	client   string
	from, to time.Time
}

func newReferee(t testing.TB) *referee {
	r := &referee{holdings: map[string]*holdingRecord{}, guards: map[string]*guard{},
		highest: map[string]int64{}, lingering: map[string]int{}, entered: map[string][]time.Time{}}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *referee) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	q := req.URL.Query()
	num := func(k string) int64 {
		n, _ := strconv.ParseInt(q.Get(k), 10, 64)
		return n
	}
	var reply string
	switch id := q.Get("h"); {
	case holdingOf(id) == nil:
		http.Error(w, "bad holding "+id, http.StatusBadRequest)
		return
	case req.URL.Path == "/enter":
		reply = r.enter(id, time.UnixMicro(num("b")), num("t"))
	case req.URL.Path == "/step":
		reply = r.step(id)
	case req.URL.Path == "/told":
		reply = r.out(id, time.UnixMicro(num("at")), true)
	case req.URL.Path == "/leave":
		reply = r.out(id, time.Now(), false)
	default:
		http.Error(w, "no such verb", http.StatusBadRequest)
		return
	}
	io.WriteString(w, reply)
}

// holdingOf returns a new record of holding id, or nil if id is not one.
func holdingOf(id string) *holdingRecord {
	label, _, dot := strings.Cut(id, ".")
	client, role, _ := strings.Cut(label, "-")
	role, _, _ = strings.Cut(role, "-")
	i := slices.IndexFunc(chaosRoles, func(ro chaosRole) bool { return string(ro.role) == role })
	if i < 0 || !dot {
		return nil
	}
	ro, fam := chaosRoles[i], familyOf(client)
	h := &holdingRecord{id: id, client: client, label: label, role: ro, guard: ro.guard + "-" + fam}
	if ro.fenced {
		h.resource = role + "-" + fam
	}
	return h
}

// recordLocked returns the record of holding id, made on first use.
func (r *referee) recordLocked(id string) *holdingRecord {
	if r.holdings[id] == nil {
		r.holdings[id] = holdingOf(id)
	}
	return r.holdings[id]
}

// lingerLocked is "linger" if h's client's holders are to hold on, else "ok".
func (r *referee) lingerLocked(h *holdingRecord) string {
	if r.lingering[h.client] > 0 {
		return "linger"
	}
	return "ok"
}

func (r *referee) enter(id string, began time.Time, token int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.recordLocked(id)
	if !h.told.IsZero() {
		return "told"
	}
	h.began, h.token = began, token
	g := r.guards[h.guard]
	if g == nil {
		g = &guard{}
		r.guards[h.guard] = g
	}
	h.marker = g.enter(h.role.kind, h.role.max, id)
	r.entered[h.label] = append(r.entered[h.label], time.Now())
	return r.lingerLocked(h)
}

func (r *referee) step(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.recordLocked(id)
	if h.resource == "" {
		return r.lingerLocked(h)
	}
	w := fencedWrite{h: h, token: h.token, highest: r.highest[h.resource], at: time.Now()}
	w.refused = w.token < w.highest
	r.writes = append(r.writes, w)
	if w.refused {
		return "fenced"
	}
	r.highest[h.resource] = w.token
	return r.lingerLocked(h)
}

// out takes holding id out of its guard: told at at, or left.
func (r *referee) out(id string, at time.Time, told bool) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.recordLocked(id)
	switch {
	case told && h.told.IsZero():
		h.told = at
	case !told:
		h.left = at
	}
	if h.marker != 0 {
		r.guards[h.guard].leave(h.marker)
		h.marker = 0
	}
	return "ok"
}

// linger adds by to the faults that want client's holders to hold on.
func (r *referee) linger(client string, by int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lingering[client] += by
}

// insideOf returns client's holdings inside a guard now.
func (r *referee) insideOf(client string) []*holdingRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*holdingRecord
	for _, g := range r.guards {
		for _, id := range g.insideNow() {
			if h := r.holdings[id]; h.client == client {
				out = append(out, h)
			}
		}
	}
	return out
}

// outcome returns when h was told and when it left (zero if it was not, or
// did not).
func (r *referee) outcome(h *holdingRecord) (told, left time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return h.told, h.left
}

// lockHoldings returns how many holdings of client's lock and lease
// contenders (not terms of leadership) entered their guard.
func (r *referee) lockHoldings(client string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, h := range r.holdings {
		if h.client == client && !h.role.election() && !h.began.IsZero() {
			n++
		}
	}
	return n
}

// highestNow returns the highest token resource has accepted so far.
func (r *referee) highestNow(resource string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.highest[resource]
}

// refusedOf returns how many of holding h's writes were refused.
func (r *referee) refusedOf(h *holdingRecord) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, w := range r.writes {
		if w.h == h && w.refused {
			n++
		}
	}
	return n
}

// progress returns how long after since the contenders of labels each had
// a holding enter a guard, at worst, and those that have not.
func (r *referee) progress(labels []string, since time.Time) (worst time.Duration, idle []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range labels {
		if i, _ := slices.BinarySearchFunc(r.entered[l], since, time.Time.Compare); i < len(r.entered[l]) {
			worst = max(worst, r.entered[l][i].Sub(since))
		} else {
			idle = append(idle, l)
		}
	}
	return worst, idle
}

func (r *referee) addPause(p pauseWindow) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pauses = append(r.pauses, p)
}

// excusedLocked reports whether h's part in an overlap seen at at is
// excused: it had been told by then, or it spanned a pause of its process
// (its wait began before the SIGSTOP; the overlap came between the SIGSTOP
// and the notice bound after the SIGCONT), which only fencing guards from.
func (r *referee) excusedLocked(h *holdingRecord, at time.Time) bool {
	return !h.told.IsZero() && !h.told.After(at) || r.pausedLocked(h, at)
}

func (r *referee) pausedLocked(h *holdingRecord, at time.Time) bool {
	for _, p := range r.pauses {
		if p.client == h.client && h.began.Before(p.from) && !at.Before(p.from) && !at.After(p.to.Add(chaosNoticeBound)) {
			return true
		}
	}
	return false
}

// judge returns the overlaps that no excuse covers (see excusedLocked),
// those of locks and those of elections (two leaders) apart, and how many
// overlaps there were in all.
func (r *referee) judge() (locks, leaders []string, overlaps int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.guards {
		for _, c := range g.conflictsNow() {
			overlaps++
			holder, n := r.holdings[c.label], 0
			for _, o := range c.others {
				if !r.excusedLocked(r.holdings[o], c.at) {
					n++
				}
			}
			holderUntold := !r.excusedLocked(holder, c.at)
			bad := holderUntold && n > 0
			if c.kind == counted {
				if holderUntold {
					n++
				}
				bad = n > c.max
			}
			if !bad {
				continue
			}
			v := fmt.Sprintf("guard %s: %s entered (%s, at most %d) at %s while %s were inside, %d of them unexcused",
				holder.guard, c.label, c.kind, c.max, c.at.Format("15:04:05.000000"), strings.Join(c.others, ","), n)
			if holder.role.election() {
				leaders = append(leaders, v)
			} else {
				locks = append(locks, v)
			}
		}
	}
	slices.Sort(locks)
	slices.Sort(leaders)
	return locks, leaders, overlaps
}

// audit checks the writes after the run, independently of the rule the
// resources applied (docs/guarantees.md, the resource's log), and returns
// the violations, the stale writes accepted, and the numbers of writes
// accepted and refused.
func (r *referee) audit() (violations, staleAccepted []string, accepted, refused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	highest := map[string]int64{}
	owner := map[string]*holdingRecord{}
	for i, w := range r.writes {
		if w.refused {
			refused++
			if w.h.told.IsZero() && !r.pausedLocked(w.h, w.at) {
				violations = append(violations, fmt.Sprintf("resource %s refused %s (token %d < %d), which was never told it lost its lock",
					w.h.resource, w.h.id, w.token, w.highest))
			}
			continue
		}
		accepted++
		if w.token < highest[w.h.resource] {
			staleAccepted = append(staleAccepted, fmt.Sprintf("resource %s accepted write %d from %s with stale token %d < %d",
				w.h.resource, i, w.h.id, w.token, highest[w.h.resource]))
		}
		highest[w.h.resource] = max(highest[w.h.resource], w.token)
		key := w.h.resource + " " + strconv.FormatInt(w.token, 10)
		if o := owner[key]; o != nil && o != w.h {
			violations = append(violations, fmt.Sprintf("resource %s: token %d used by %s and %s", w.h.resource, w.token, o.id, w.h.id))
		}
		owner[key] = w.h
	}
	return violations, staleAccepted, accepted, refused
}

// The referee's checks see what they must: overlaps in each kind of guard,
// each a violation unless a holding in it had been told by then or spanned
// a pause; and, in the writes, stale tokens accepted, a token used twice and
// refused holders that were never told.
func TestChaosRefereeSeesViolations(t *testing.T) {
	testutil.CheckLeaks(t)
	r := newReferee(t)
	r.enter("g1-mutex-0.1", time.Now(), 5)
	r.enter("j1-mutex-1.1", time.Now().Add(-time.Hour), 6) // overlaps g1-mutex-0.1
	r.enter("p2-mutex-0.1", time.Now(), 7)                 // another family's lock
	r.enter("p1-read-0.1", time.Now(), 0)
	r.enter("j1-read-0.1", time.Now(), 0) // readers share
	r.enter("g1-write-0.1", time.Now(), 8)
	for i := range 4 { // the fourth lease of three overlaps
		r.enter(fmt.Sprintf("g1-sem-0.%d", i+1), time.Now(), 0)
	}
	r.enter("p1-latch-0.1", time.Now(), 9)
	r.enter("j1-latch-0.1", time.Now(), 10)
	overlapped := time.Now()
	locks, leaders, n := r.judge()
	if n != 4 || len(locks) != 3 || len(leaders) != 1 || !strings.Contains(locks[0], "j1-mutex-1.1 entered (excl, at most 1)") ||
		!strings.Contains(locks[1], "g1-write-0.1 entered") || !strings.Contains(locks[1], "j1-read-0.1,p1-read-0.1") ||
		!strings.Contains(locks[2], "g1-sem-0.4") {
		t.Fatalf("%d overlaps; violations:\n%s\n%s", n, strings.Join(locks, "\n"), strings.Join(leaders, "\n"))
	}
	// Told before an overlap, a holding excuses its part in it; told after,
	// it does not.
	r.out("j1-latch-0.1", overlapped.Add(-time.Hour), true)
	r.out("g1-mutex-0.1", overlapped, true)
	if _, leaders, _ := r.judge(); len(leaders) != 0 {
		t.Fatalf("violations with the latch holder told:\n%s", strings.Join(leaders, "\n"))
	}
	if locks, _, _ := r.judge(); len(locks) != 3 {
		t.Fatalf("violations with g1-mutex-0.1 told late: %d, want 3", len(locks))
	}
	if reply := r.enter("g1-mutex-0.1", time.Now(), 5); reply != "told" {
		t.Fatalf("a told holding entered: %q", reply)
	}
	// A pause of j1 excuses the mutex overlap, from its start to the notice
	// bound after its end, for a holding whose wait began before it; not a
	// pause that began after the overlap, nor one that ended long before,
	// nor one of another client, nor one that began before the wait did.
	for _, p := range []pauseWindow{
		{client: "j1", from: overlapped.Add(time.Second), to: overlapped.Add(time.Minute)},
		{client: "j1", from: overlapped.Add(-2 * time.Hour), to: overlapped},
		{client: "j1", from: overlapped.Add(-time.Hour), to: overlapped.Add(-time.Minute)},
		{client: "p1", from: overlapped.Add(-time.Minute), to: overlapped},
	} {
		r.pauses = []pauseWindow{p}
		if locks, _, _ := r.judge(); len(locks) != 3 {
			t.Fatalf("pause %+v excused an overlap", p)
		}
	}
	r.pauses = []pauseWindow{{client: "j1", from: overlapped.Add(-time.Minute), to: overlapped.Add(-time.Second)}}
	if locks, _, _ := r.judge(); len(locks) != 2 {
		t.Fatalf("the pause of j1 did not excuse its holding's overlap: %d violations", len(locks))
	}

	// A step of a fenced role writes its token: a lower one than accepted
	// is refused; the audit finds what the resource should not have done.
	r.out("j1-mutex-1.1", time.Now(), false)
	r.enter("j1-mutex-1.2", time.Now(), 4)
	if a, b := r.step("j1-mutex-1.2"), r.step("p2-mutex-0.1"); a != "ok" || b != "ok" {
		t.Fatalf("steps: %q, %q", a, b)
	}
	r.enter("j1-mutex-1.3", time.Now(), 3)
	r.linger("j1", 1)
	if a, b := r.step("j1-mutex-1.3"), r.step("j1-read-0.1"); a != "fenced" || b != "linger" {
		t.Fatalf("steps: %q, %q", a, b)
	}
	rec := func(id string) *holdingRecord { return r.holdings[id] }
	r.writes = append(r.writes, fencedWrite{h: rec("g1-mutex-0.1"), token: 3}, fencedWrite{h: rec("p1-latch-0.1"), token: 9},
		fencedWrite{h: rec("j1-latch-0.1"), token: 9})
	v, stale, accepted, refused := r.audit()
	want := []string{
		"resource mutex-1 refused j1-mutex-1.3 (token 3 < 4), which was never told it lost its lock",
		"resource latch-1: token 9 used by p1-latch-0.1 and j1-latch-0.1",
	}
	if !slices.Equal(v, want) || len(stale) != 1 || !strings.Contains(stale[0], "from g1-mutex-0.1 with stale token 3 < 4") ||
		accepted != 5 || refused != 1 {
		t.Fatalf("audit: %d accepted, %d refused, stale %q, violations\n%s", accepted, refused, stale, strings.Join(v, "\n"))
	}
}
