package otelmetrics

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
)

// ScopeName is the name of the meter the instruments are made by: the
// package's import path, as OpenTelemetry's conventions have it.
const ScopeName = "github.com/gocurator/curator/framework/otelmetrics"

// The attributes every measurement carries, and the failures' and losses'
// cause (OpenTelemetry's error.type).
const (
	attrPath    = attribute.Key("gocurator.path")
	attrRecipe  = attribute.Key("gocurator.recipe")
	attrCause   = attribute.Key("error.type")
	attrOutcome = attribute.Key("gocurator.outcome")
)

// Metrics is an event hook (framework.EventHook: give it to
// framework.WithEventHook) that records the events of the recipes on its
// clients as OpenTelemetry metrics; the package doc lists them. One Metrics
// may serve any number of clients at once.
type Metrics struct {
	pathLabel func(string) string

	acquireDuration metric.Float64Histogram
	holdDuration    metric.Float64Histogram
	acquisitions    metric.Int64Counter
	failures        metric.Int64Counter
	losses          metric.Int64Counter
	waiters         metric.Int64UpDownCounter
	holders         metric.Int64UpDownCounter
	terms           metric.Int64Counter
	termDuration    metric.Float64Histogram
	leaderLosses    metric.Int64Counter
	leaders         metric.Int64UpDownCounter

	// holds are the grants held now, each with its path's and recipe's
	// attributes and when it was granted: the oldest hold's age is
	// observed from them at each collection (observeOldestHolds).
	mu    sync.Mutex
	holds map[holdKey]heldSince
}

// holdKey names one grant: its node, of its session.
type holdKey struct {
	session int64
	node    string
}

// heldSince is a grant held now: the attributes of its measurements, and
// when it was granted.
type heldSince struct {
	attrs attribute.Set
	since time.Time
}

// New makes the instruments with provider's meter ScopeName. A nil
// provider, or a bad option, fails with framework.ErrInvalidArgument.
func New(provider metric.MeterProvider, opts ...Option) (*Metrics, error) {
	if provider == nil {
		return nil, fmt.Errorf("%w: otelmetrics: nil meter provider", framework.ErrInvalidArgument)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	mk := instruments{meter: provider.Meter(ScopeName), buckets: cfg.buckets}
	m := &Metrics{
		pathLabel: cfg.pathLabel,
		holds:     map[holdKey]heldSince{},

		acquireDuration: mk.seconds("gocurator.lock.acquire.duration", "The time an acquisition of a lock or lease waited, to its grant or failure, by gocurator.outcome."),
		holdDuration:    mk.seconds("gocurator.lock.hold.duration", "The time a lock or lease was held, to its release or loss, by gocurator.outcome."),
		acquisitions:    mk.counter("gocurator.lock.acquisitions", "{acquisition}", "Locks and leases granted."),
		failures:        mk.counter("gocurator.lock.acquire.failures", "{failure}", "Acquisitions of a lock or lease that failed, by error.type; a try that found the lock held is no failure."),
		losses:          mk.counter("gocurator.lock.losses", "{loss}", "Locks and leases lost while held, by error.type."),
		waiters:         mk.upDown("gocurator.lock.waiter.count", "{waiter}", "Acquisitions of a lock or lease under way."),
		holders:         mk.upDown("gocurator.lock.holder.count", "{holder}", "Locks and leases held."),
		terms:           mk.counter("gocurator.leader.terms", "{term}", "Terms of leadership begun."),
		termDuration:    mk.seconds("gocurator.leader.term.duration", "The length of a term of leadership, once ended."),
		leaderLosses:    mk.counter("gocurator.leader.losses", "{loss}", "Terms of leadership that ended other than given up, by error.type."),
		leaders:         mk.upDown("gocurator.leader.count", "{leader}", "Terms of leadership under way."),
	}
	mk.observedSeconds("gocurator.lock.hold.oldest_age", "The age of the oldest grant of a lock or lease held now.", m.observeOldestHolds)
	if mk.err != nil {
		return nil, fmt.Errorf("gocurator: otelmetrics: %w", mk.err)
	}
	return m, nil
}

// Event records e; the events of the client itself (no recipes.LockEvent)
// and revocation requests are not measured. The measurements are made with
// the event's Context (the acquire's), so that an SDK that keeps exemplars
// links them to the caller's trace.
func (m *Metrics) Event(e framework.Event) {
	d, ok := recipes.LockEventOf(e)
	if !ok {
		return
	}
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	path, recipe := attrPath.String(m.pathLabel(e.Path)), attrRecipe.String(d.Recipe)
	at := metric.WithAttributeSet(attribute.NewSet(path, recipe))
	because := func() metric.MeasurementOption {
		return metric.WithAttributeSet(attribute.NewSet(path, recipe, attrCause.String(causeOf(e.Err))))
	}
	waited := func() {
		m.acquireDuration.Record(ctx, e.Wait.Seconds(), metric.WithAttributeSet(attribute.NewSet(path, recipe, attrOutcome.String(outcomeOf(e)))))
	}
	switch e.Kind {
	case recipes.AcquireStarted:
		m.waiters.Add(ctx, 1, at)
	case recipes.Acquired:
		m.waiters.Add(ctx, -1, at)
		m.holders.Add(ctx, 1, at)
		m.acquisitions.Add(ctx, 1, at)
		waited()
		m.mu.Lock()
		m.holds[holdKey{e.Session, e.Node}] = heldSince{attribute.NewSet(path, recipe), e.Time}
		m.mu.Unlock()
	case recipes.AcquireFailed:
		m.waiters.Add(ctx, -1, at)
		if causeOf(e.Err) != causeLocked { // a try's answer, not a fault
			m.failures.Add(ctx, 1, because())
		}
		waited()
	case recipes.Released, recipes.Lost:
		m.mu.Lock()
		delete(m.holds, holdKey{e.Session, e.Node})
		m.mu.Unlock()
		m.holders.Add(ctx, -1, at)
		outcome := outcomeReleased
		if e.Kind == recipes.Lost {
			outcome = outcomeLost
			m.losses.Add(ctx, 1, because())
		}
		m.holdDuration.Record(ctx, e.Hold.Seconds(), metric.WithAttributeSet(attribute.NewSet(path, recipe, attrOutcome.String(outcome))))
	case recipes.LeadershipGained:
		m.leaders.Add(ctx, 1, at)
		m.terms.Add(ctx, 1, at)
	case recipes.LeadershipLost:
		m.leaders.Add(ctx, -1, at)
		m.termDuration.Record(ctx, e.Hold.Seconds(), at)
		if e.Err != nil {
			m.leaderLosses.Add(ctx, 1, because())
		}
	}
}

// observeOldestHolds observes, for each path and recipe with grants held
// now, the age of the oldest: the callback of gocurator.lock.hold.oldest_age.
func (m *Metrics) observeOldestHolds(_ context.Context, o metric.Float64Observer) error {
	oldest := map[attribute.Distinct]heldSince{}
	m.mu.Lock()
	for _, h := range m.holds {
		if cur, ok := oldest[h.attrs.Equivalent()]; !ok || h.since.Before(cur.since) {
			oldest[h.attrs.Equivalent()] = h
		}
	}
	m.mu.Unlock()
	for _, h := range oldest {
		o.Observe(time.Since(h.since).Seconds(), metric.WithAttributeSet(h.attrs))
	}
	return nil
}

// instruments makes instruments with meter, keeping the first error.
type instruments struct {
	meter   metric.Meter
	buckets []float64
	err     error
}

func (mk *instruments) keep(err error) {
	if mk.err == nil {
		mk.err = err
	}
}

// seconds makes a histogram of durations in seconds.
func (mk *instruments) seconds(name, desc string) metric.Float64Histogram {
	h, err := mk.meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
		metric.WithExplicitBucketBoundaries(mk.buckets...))
	mk.keep(err)
	return h
}

// observedSeconds makes a gauge of seconds, observed by f at each
// collection.
func (mk *instruments) observedSeconds(name, desc string, f metric.Float64Callback) {
	_, err := mk.meter.Float64ObservableGauge(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithFloat64Callback(f))
	mk.keep(err)
}

func (mk *instruments) counter(name, unit, desc string) metric.Int64Counter {
	c, err := mk.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err)
	return c
}

func (mk *instruments) upDown(name, unit, desc string) metric.Int64UpDownCounter {
	c, err := mk.meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	mk.keep(err)
	return c
}
