package otelmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/otelmetrics"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// recorder is the example's wiring (serve), with a hook of the test's own
// added after the Metrics: a user's hook beside otelmetrics'. It tells each
// event to a channel, once the Metrics (a hook before it) has recorded it:
// a test waits for an event there, and the next scrape counts it.
type recorder struct {
	t     *testing.T
	addr  string
	heard chan framework.Event
	hooks []framework.Option
}

func newRecorder(t *testing.T, opts ...otelmetrics.Option) *recorder {
	t.Helper()
	metrics, addr, stop, err := serve("127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	r := &recorder{t: t, addr: addr}
	r.hooks, r.heard = heardAfter(metrics, 4096)
	return r
}

// heardAfter returns the options of two hooks, h and one of the test's own
// after it, and the channel that one tells each event to: once an event is
// there, h has had it.
func heardAfter(h framework.EventHook, size int) ([]framework.Option, chan framework.Event) {
	heard := make(chan framework.Event, size)
	return []framework.Option{
		framework.WithEventHook(h),
		framework.WithEventHook(framework.EventFunc(func(e framework.Event) { heard <- e })),
	}, heard
}

// until returns the next event of kind on path, once recorded.
func (r *recorder) until(kind framework.EventKind, path string) framework.Event {
	r.t.Helper()
	return r.untilEach(framework.Event{Kind: kind, Path: path})[0]
}

// untilEach returns, in the order given, the next event of each kind on
// each path that want names, once all are recorded, in whatever order.
func (r *recorder) untilEach(want ...framework.Event) []framework.Event {
	r.t.Helper()
	return untilEach(r.t, r.heard, want...)
}

// untilEach returns, in the order given, the next event of each kind on
// each path that want names, once all are heard on heard, in whatever
// order.
func untilEach(t *testing.T, heard <-chan framework.Event, want ...framework.Event) []framework.Event {
	t.Helper()
	got := make([]framework.Event, len(want))
	for left := len(want); left > 0; {
		e := recv(t, heard, fmt.Sprintf("%d more of the events %s", left, describe(want)))
		for i, w := range want {
			if got[i].Kind == (framework.EventKind{}) && e.Kind == w.Kind && e.Path == w.Path {
				got[i] = e
				left--
				break
			}
		}
	}
	return got
}

func describe(es []framework.Event) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Kind.String()+" on "+e.Path)
	}
	return strings.Join(s, ", ")
}

// scrape reads /metrics as Prometheus would.
func (r *recorder) scrape() map[string]*dto.MetricFamily {
	r.t.Helper()
	text, err := scrape(r.addr)
	if err != nil {
		r.t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		r.t.Fatalf("%v in\n%s", err, text)
	}
	return families
}

// value is the sample of family whose labels include want (a counter's or
// a gauge's value, a histogram's count), and whether there is one.
func value(families map[string]*dto.MetricFamily, family string, want ...string) (float64, bool) {
	f := families[family]
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		if !hasLabels(m, want...) {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// oldestAge is the family of the oldest hold's age.
const oldestAge = "gocurator_lock_hold_oldest_age_seconds"

// sum is the sum of the histogram of family whose labels include want,
// and whether there is one.
func sum(families map[string]*dto.MetricFamily, family string, want ...string) (float64, bool) {
	for _, m := range families[family].GetMetric() {
		if hasLabels(m, want...) && m.Histogram != nil {
			return m.GetHistogram().GetSampleSum(), true
		}
	}
	return 0, false
}

// hasLabels reports whether m has each label of want (name, value, ...).
func hasLabels(m *dto.Metric, want ...string) bool {
	for i := 0; i < len(want); i += 2 {
		if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == want[i] && l.GetValue() == want[i+1] }) {
			return false
		}
	}
	return true
}

// expect is one sample a scrape must show: of the family, with the path
// and recipe, and a third label if one is given ("error_type=timeout");
// its value want, or any if want is negative.
type expect struct {
	family, path, recipe, label string
	want                        float64
}

func (r *recorder) check(families map[string]*dto.MetricFamily, es ...expect) {
	r.t.Helper()
	for _, e := range es {
		labels := []string{"gocurator_path", e.path, "gocurator_recipe", e.recipe}
		if name, value, ok := strings.Cut(e.label, "="); ok {
			labels = append(labels, name, value)
		}
		if got, ok := value(families, e.family, labels...); !ok || (got != e.want && e.want >= 0) {
			r.t.Errorf("%s%v = %v (found: %v), want %v", e.family, labels, got, ok, e.want)
		}
	}
}

// Real acquisitions, failures and losses, scraped from the example's
// /metrics: the counts and histogram counts of each lock and term (every
// acquire's wait, by its outcome: acquired, timeout, canceled, locked;
// every hold's, released or lost), the causes of failures and losses (a
// try's locked is no failure), a waiter counted while it waits, the oldest
// hold's age while a lock is held and none once nothing is, every waiter,
// holder and leader count back at 0 at the end, and no attribute but the
// path, the recipe and the cause or the outcome (no node names, no
// sessions). The Grafana dashboard (docs/grafana) queries only what these
// scrapes show.
func TestMetricsOfRealLocks(t *testing.T) {
	ctx, base := begin(t)
	r := newRecorder(t)
	c := newClient(t, server.Addr(), r.hooks...)
	other := newClient(t, server.Addr())
	var nodes []string // every node that events named, for the check that no label does

	// A mutex acquired and released three times.
	const n = 3
	mu := base + "/mutex"
	h := mutex(t, c, mu)
	for range n {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, r.until(recipes.Released, mu).Node)
	}

	// Held elsewhere: a waiter counted while it waits, then canceled; a
	// timeout; a try that finds it held.
	held := mutex(t, other, mu)
	if err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	waited := make(chan error, 1)
	go func() { waited <- h.Acquire(wctx) }()
	r.until(recipes.AcquireStarted, mu)
	r.check(r.scrape(), expect{"gocurator_lock_waiter_count", mu, "mutex", "", 1})
	cancel()
	errorIs(t, recv(t, waited, "the canceled acquire"), context.Canceled)
	r.until(recipes.AcquireFailed, mu)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	errorIs(t, h.Acquire(tctx), context.DeadlineExceeded)
	r.until(recipes.AcquireFailed, mu)
	errorIs(t, h.TryAcquire(ctx), recipes.ErrLocked)
	r.until(recipes.AcquireFailed, mu)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// A semaphore's lease. Its events name the semaphore's path, as given to
	// its constructor.
	s, err := recipes.NewInterProcessSemaphoreV2(c, base+"/semaphore", 1)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := s.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sem := base + "/semaphore"
	nodes = append(nodes, r.until(recipes.Released, sem).Node)

	// A lock and a term of leadership lost at SUSPENDED: their connection
	// dropped at a fault proxy.
	lost, leaderLost := base+"/lost", base+"/leader-lost"
	proxy := zktest.NewProxy(t, server.Addr())
	pc := newClient(t, proxy.Addr(), r.hooks...)
	ph := mutex(t, pc, lost)
	if err := ph.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, ph.LockPath())
	pl := leading(t, ctx, pc, leaderLost)
	nodes = append(nodes, r.until(recipes.LeadershipGained, leaderLost).Node)
	whileHeld := r.scrape()
	r.check(whileHeld, expect{oldestAge, lost, "mutex", "", -1})
	proxy.DropConnections()
	for _, e := range r.untilEach(framework.Event{Kind: recipes.Lost, Path: lost}, framework.Event{Kind: recipes.LeadershipLost, Path: leaderLost}) {
		if se := (*framework.StateError)(nil); !errors.As(e.Err, &se) || se.State != state.Suspended {
			t.Fatalf("%s: %v, want the SUSPENDED that caused it", e.Kind, e.Err)
		}
	}
	// The latch may lead again once reconnected; its Close ends that term,
	// and the client's delivers every event emitted before it.
	if err := pl.Close(); err != nil {
		t.Fatal(err)
	}
	pc.Close()

	// A lock whose node is found gone: deleted behind its holder's back.
	gone := base + "/gone"
	gh := mutex(t, c, gone)
	if err := gh.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	nodes = append(nodes, gh.LockPath())
	if err := other.Delete(ctx, gh.LockPath()); err != nil {
		t.Fatal(err)
	}
	_, err = gh.FencingToken(ctx)
	errorIs(t, err, recipes.ErrLockLost)
	r.until(recipes.Lost, gone)

	// A term of leadership.
	latchPath := base + "/latch"
	latch := leading(t, ctx, c, latchPath)
	nodes = append(nodes, r.until(recipes.LeadershipGained, latchPath).Node)
	if err := latch.Close(); err != nil {
		t.Fatal(err)
	}
	r.until(recipes.LeadershipLost, latchPath)

	families := r.scrape()
	r.check(families,
		expect{"gocurator_lock_acquisitions_total", mu, "mutex", "", n},
		expect{"gocurator_lock_acquire_duration_seconds", mu, "mutex", "gocurator_outcome=acquired", n},
		expect{"gocurator_lock_acquire_duration_seconds", mu, "mutex", "gocurator_outcome=canceled", 1},
		expect{"gocurator_lock_acquire_duration_seconds", mu, "mutex", "gocurator_outcome=timeout", 1},
		expect{"gocurator_lock_acquire_duration_seconds", mu, "mutex", "gocurator_outcome=locked", 1},
		expect{"gocurator_lock_hold_duration_seconds", mu, "mutex", "gocurator_outcome=released", n},
		expect{"gocurator_lock_acquire_failures_total", mu, "mutex", "error_type=canceled", 1},
		expect{"gocurator_lock_acquire_failures_total", mu, "mutex", "error_type=timeout", 1},
		expect{"gocurator_lock_acquisitions_total", sem, "semaphore", "", 1},
		expect{"gocurator_lock_hold_duration_seconds", sem, "semaphore", "gocurator_outcome=released", 1},
		expect{"gocurator_lock_losses_total", lost, "mutex", "error_type=suspended", 1},
		expect{"gocurator_lock_hold_duration_seconds", lost, "mutex", "gocurator_outcome=lost", 1},
		expect{"gocurator_lock_losses_total", gone, "mutex", "error_type=node_gone", 1},
		expect{"gocurator_lock_hold_duration_seconds", gone, "mutex", "gocurator_outcome=lost", 1},
		expect{"gocurator_leader_terms_total", latchPath, "latch", "", 1},
		expect{"gocurator_leader_term_duration_seconds", latchPath, "latch", "", 1},
		expect{"gocurator_leader_losses_total", leaderLost, "latch", "error_type=suspended", 1},
	)
	if _, ok := value(families, "gocurator_leader_losses_total", "gocurator_path", latchPath); ok {
		t.Errorf("a latch closed while it led counted as a loss of leadership")
	}
	if v, ok := value(families, "gocurator_lock_acquire_failures_total", "error_type", "locked"); ok {
		t.Errorf("a try that found the lock held counted as a failure (%v): an alert on failures fires on contention", v)
	}
	if _, ok := families[oldestAge]; ok {
		t.Errorf("%s at the end, when nothing is held: %v", oldestAge, families[oldestAge].GetMetric())
	}
	families[oldestAge] = whileHeld[oldestAge] // for the dashboard's queries, which only a scrape during a hold shows
	for _, gauge := range []string{"gocurator_lock_waiter_count", "gocurator_lock_holder_count", "gocurator_leader_count"} {
		if len(families[gauge].GetMetric()) == 0 {
			t.Errorf("%s: no series, though locks were waited for, held and led", gauge)
		}
		for _, m := range families[gauge].GetMetric() {
			if v := m.GetGauge().GetValue(); v != 0 {
				t.Errorf("%s%v = %v at the end, want 0", gauge, m.GetLabel(), v)
			}
		}
	}
	checkLabels(t, families, []string{mu, sem, lost, leaderLost, gone, latchPath}, nodes)
	checkDashboard(t, families)
}

// Every duration is recorded in seconds, as the instruments' unit says:
// each histogram's sum is the sum of the waits, holds and terms its events
// told, and the oldest hold's age, scraped during a hold, lies between the
// hold's age just before the scrape and just after it.
func TestDurationsInSeconds(t *testing.T) {
	ctx, base := begin(t)
	r := newRecorder(t)
	c := newClient(t, server.Addr(), r.hooks...)
	other := newClient(t, server.Addr(), r.hooks...)
	mu, latchPath := base+"/mutex", base+"/latch"
	h := mutex(t, c, mu)
	var acquired, released float64 // the events' waits and holds, in seconds
	for range 3 {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		acquired += r.until(recipes.Acquired, mu).Wait.Seconds()
		released += r.until(recipes.Released, mu).Hold.Seconds()
	}

	// Held elsewhere: a wait that times out, and a scrape during the hold.
	held := mutex(t, other, mu)
	if err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	granted := r.until(recipes.Acquired, mu)
	acquired += granted.Wait.Seconds()
	tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	errorIs(t, h.Acquire(tctx), context.DeadlineExceeded)
	timedOut := r.until(recipes.AcquireFailed, mu).Wait.Seconds()
	before := time.Since(granted.Time).Seconds()
	families := r.scrape()
	after := time.Since(granted.Time).Seconds()
	if age, ok := value(families, oldestAge, "gocurator_path", mu, "gocurator_recipe", "mutex"); !ok || age < before || age > after {
		t.Errorf("%s{%s} = %v (found: %v), want the hold's age at the scrape, between %v and %v", oldestAge, mu, age, ok, before, after)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	released += r.until(recipes.Released, mu).Hold.Seconds()

	latch := leading(t, ctx, c, latchPath)
	if err := latch.Close(); err != nil {
		t.Fatal(err)
	}
	term := r.until(recipes.LeadershipLost, latchPath).Hold.Seconds()

	families = r.scrape()
	for _, w := range []struct {
		family, path, recipe string
		labels               []string
		want                 float64
	}{
		{"gocurator_lock_acquire_duration_seconds", mu, "mutex", []string{"gocurator_outcome", "acquired"}, acquired},
		{"gocurator_lock_acquire_duration_seconds", mu, "mutex", []string{"gocurator_outcome", "timeout"}, timedOut},
		{"gocurator_lock_hold_duration_seconds", mu, "mutex", []string{"gocurator_outcome", "released"}, released},
		{"gocurator_leader_term_duration_seconds", latchPath, "latch", nil, term},
	} {
		labels := append([]string{"gocurator_path", w.path, "gocurator_recipe", w.recipe}, w.labels...)
		if got, ok := sum(families, w.family, labels...); !ok || math.Abs(got-w.want) > 1e-9*w.want {
			t.Errorf("%s%v: sum %v s (found: %v), want %v s, the sum the events told", w.family, labels, got, ok, w.want)
		}
	}
	if _, ok := families[oldestAge]; ok {
		t.Errorf("%s with nothing held: %v", oldestAge, families[oldestAge].GetMetric())
	}
}

// An acquire that fails because no server answers is counted as such
// (error.type no_server; its wait's outcome failed), whether the retries
// ran out or the acquire's deadline came first: not as _OTHER, nor as a
// timeout, which the dashboard shows as contention.
func TestNoServerFailures(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	r := newRecorder(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusing := ln.Addr().String() // closed: nothing listens there
	ln.Close()
	c, err := framework.New(refusing, retry.NewExponentialBackoff(10*time.Millisecond, 1),
		append(r.hooks, framework.WithConnectionTimeout(time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const path = "/otelmetrics-test/no-server"
	h := mutex(t, c, path)
	var ns *framework.NoServerError
	if err := h.Acquire(ctx); !errors.As(err, &ns) || !errors.Is(err, zk.ErrNoServer) {
		t.Fatalf("an acquire with no server: %v, want a *framework.NoServerError", err)
	}
	r.until(recipes.AcquireFailed, path)
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := h.Acquire(dctx); !errors.As(err, &ns) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("an acquire with no server and a deadline: %v, want a *framework.NoServerError wrapping the deadline", err)
	}
	r.until(recipes.AcquireFailed, path)
	families := r.scrape()
	r.check(families,
		expect{"gocurator_lock_acquire_failures_total", path, "mutex", "error_type=no_server", 2},
		expect{"gocurator_lock_acquire_duration_seconds", path, "mutex", "gocurator_outcome=failed", 2},
	)
	checkLabels(t, families, []string{path}, nil)
}

// leading returns a started leader latch of c on path, once it leads.
func leading(t *testing.T, ctx context.Context, c *framework.Client, path string) *recipes.LeaderLatch {
	t.Helper()
	l, err := recipes.NewLeaderLatch(c, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	if err := l.Await(ctx); err != nil {
		t.Fatal(err)
	}
	return l
}

// mutex returns a handle of a new mutex of c on path.
func mutex(t *testing.T, c *framework.Client, path string) *recipes.Handle {
	t.Helper()
	m, err := recipes.NewInterProcessMutex(c, path)
	if err != nil {
		t.Fatal(err)
	}
	return m.NewHandle()
}

// checkLabels fails the test unless every gocurator series is labelled by
// one of paths, a recipe kind, and a cause, and nothing else but the
// meter's scope; and no label names a node or a session.
func checkLabels(t *testing.T, families map[string]*dto.MetricFamily, paths, nodes []string) {
	t.Helper()
	for _, node := range nodes {
		if node == "" {
			t.Errorf("an event told no node, so no label can be checked against it")
		}
	}
	allowed := map[string][]string{
		"gocurator_path":    paths,
		"gocurator_recipe":  {"mutex", "read", "write", "semaphore", "latch", "selector"},
		"error_type":        {"timeout", "locked", "canceled", "no_server", "suspended", "lost", "closed", "node_gone", "interrupted", "_OTHER"},
		"gocurator_outcome": {"acquired", "timeout", "canceled", "locked", "failed", "released", "lost"},
	}
	seen := 0
	for name, f := range families {
		if !strings.HasPrefix(name, "gocurator_") {
			continue
		}
		for _, m := range f.GetMetric() {
			seen++
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(l.GetName(), "otel_scope_") {
					continue
				}
				if values, ok := allowed[l.GetName()]; !ok || !slices.Contains(values, l.GetValue()) {
					t.Errorf("%s: label %s=%q", name, l.GetName(), l.GetValue())
				}
				for _, node := range nodes {
					if node != "" && strings.Contains(l.GetValue(), node[strings.LastIndex(node, "/")+1:]) {
						t.Errorf("%s: label %s=%q names the node %q", name, l.GetName(), l.GetValue(), node)
					}
				}
			}
			if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "gocurator_path" }) {
				t.Errorf("%s%v: no path", name, m.GetLabel())
			}
		}
	}
	if seen == 0 {
		t.Error("no gocurator series at all")
	}
}

// WithPathLabel makes many paths one series.
func TestPathLabel(t *testing.T) {
	ctx, base := begin(t)
	orders := base + "/orders"
	r := newRecorder(t, otelmetrics.WithPathLabel(path.Dir))
	c := newClient(t, server.Addr(), r.hooks...)
	for _, id := range []string{"1", "2"} {
		m, err := recipes.NewInterProcessMutex(c, orders+"/"+id)
		if err != nil {
			t.Fatal(err)
		}
		h := m.NewHandle()
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r.until(recipes.Released, orders+"/"+id)
	}
	families := r.scrape()
	r.check(families, expect{"gocurator_lock_acquisitions_total", orders, "mutex", "", 2})
	checkLabels(t, families, []string{orders}, nil)
}

// New refuses what it cannot measure with.
func TestNewRefusesBadArguments(t *testing.T) {
	provider := noop.NewMeterProvider()
	for name, call := range map[string]func() (*otelmetrics.Metrics, error){
		"nil provider":   func() (*otelmetrics.Metrics, error) { return otelmetrics.New(nil) },
		"nil path label": func() (*otelmetrics.Metrics, error) { return otelmetrics.New(provider, otelmetrics.WithPathLabel(nil)) },
		"no buckets":     func() (*otelmetrics.Metrics, error) { return otelmetrics.New(provider, otelmetrics.WithBuckets()) },
		"buckets out of order": func() (*otelmetrics.Metrics, error) {
			return otelmetrics.New(provider, otelmetrics.WithBuckets(1, 0.5))
		},
	} {
		m, err := call()
		if m != nil {
			t.Errorf("%s: a Metrics", name)
		}
		errorIs(t, err, framework.ErrInvalidArgument)
	}
}
