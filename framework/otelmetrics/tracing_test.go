package otelmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/otelmetrics"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// spans is a Tracing whose spans go to an in-memory exporter as each ends,
// with a hook of the test's own after it: once that hook hears an event,
// the event's span (if any) is exported.
type spans struct {
	exporter *tracetest.InMemoryExporter
	provider *sdktrace.TracerProvider
	heard    chan framework.Event
	hooks    []framework.Option
}

func newSpans(t *testing.T) *spans {
	t.Helper()
	s := &spans{exporter: tracetest.NewInMemoryExporter()}
	s.provider = sdktrace.NewTracerProvider(sdktrace.WithSyncer(s.exporter))
	t.Cleanup(func() { s.provider.Shutdown(context.Background()) })
	tracing, err := otelmetrics.NewTracing(s.provider)
	if err != nil {
		t.Fatal(err)
	}
	s.hooks, s.heard = heardAfter(tracing, 1024)
	return s
}

// caller starts a span of the test's own, as a program's request would: the
// parent the acquires under ctx should give their spans.
func (s *spans) caller(ctx context.Context, name string) (context.Context, trace.Span) {
	return s.provider.Tracer("test").Start(ctx, name)
}

// until returns the next event of kind on path, once heard (and its span
// exported).
func (s *spans) until(t *testing.T, kind framework.EventKind, path string) framework.Event {
	t.Helper()
	return untilEach(t, s.heard, framework.Event{Kind: kind, Path: path})[0]
}

// span returns the one exported span of name whose gocurator.node is node,
// or, for an acquire that failed (no node), whose parent is parent.
func (s *spans) span(t *testing.T, name, node string, parent trace.Span) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, sp := range s.exporter.GetSpans() {
		if sp.Name != name {
			continue
		}
		if got := attr(sp, "gocurator.node"); (node != "" && got.AsString() == node) ||
			(node == "" && sp.Parent.SpanID() == parent.SpanContext().SpanID()) {
			found = append(found, sp)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans %s of node %q under %v, want 1", len(found), name, node, parent.SpanContext().SpanID())
	}
	return found[0]
}

func attr(sp tracetest.SpanStub, key string) attribute.Value {
	for _, kv := range sp.Attributes {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// want is what a span must show.
type want struct {
	parent      trace.Span
	from, to    time.Time // its start and end
	attrs       map[string]any
	errorStatus bool
}

func checkSpan(t *testing.T, sp tracetest.SpanStub, w want) {
	t.Helper()
	if sp.Parent.SpanID() != w.parent.SpanContext().SpanID() || sp.SpanContext.TraceID() != w.parent.SpanContext().TraceID() {
		t.Errorf("%s: parent %v of trace %v, want the caller's span %v of %v", sp.Name,
			sp.Parent.SpanID(), sp.SpanContext.TraceID(), w.parent.SpanContext().SpanID(), w.parent.SpanContext().TraceID())
	}
	// The start is the event's Time less its Wait or Hold: the wall clock
	// and the monotonic one may part by a little.
	if d := sp.StartTime.Sub(w.from); d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("%s: starts at %v, want %v (the event that began it)", sp.Name, sp.StartTime, w.from)
	}
	if !sp.EndTime.Equal(w.to) {
		t.Errorf("%s: ends at %v, want %v (the event that ended it)", sp.Name, sp.EndTime, w.to)
	}
	for k, v := range w.attrs {
		if got := attr(sp, k).AsInterface(); got != v {
			t.Errorf("%s: %s = %v, want %v (all: %v)", sp.Name, k, got, v, sp.Attributes)
		}
	}
	if got := sp.Status.Code == codes.Error; got != w.errorStatus {
		t.Errorf("%s: status %v, want an error: %v", sp.Name, sp.Status, w.errorStatus)
	}
}

// Real acquisitions traced: each acquire's span (its wait: at once, behind
// a holder, a timeout) and each hold's (released, and lost at a fault
// proxy's dropped connection), each a child of the span in the context
// the acquire was called with, from the event that began it to the one
// that ended it, with the path, the recipe, the queue position, the
// outcome, the node and the session.
func TestTracesOfRealLocks(t *testing.T) {
	ctx, base := begin(t)
	s := newSpans(t)
	c := newClient(t, server.Addr(), s.hooks...)
	other := newClient(t, server.Addr())
	session := func(c *framework.Client) string { return fmt.Sprintf("0x%x", c.SessionID()) }

	// Acquired at once, then released.
	mu := base + "/mutex"
	h := mutex(t, c, mu)
	rctx, request := s.caller(ctx, "request")
	if err := h.Acquire(rctx); err != nil {
		t.Fatal(err)
	}
	node := h.LockPath()
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	request.End()
	started, acquired, released := s.until(t, recipes.AcquireStarted, mu), s.until(t, recipes.Acquired, mu), s.until(t, recipes.Released, mu)
	checkSpan(t, s.span(t, otelmetrics.SpanAcquire, node, request), want{parent: request, from: started.Time, to: acquired.Time,
		attrs: map[string]any{"gocurator.path": mu, "gocurator.recipe": "mutex", "gocurator.outcome": "acquired",
			"gocurator.queue.position": int64(0), "gocurator.node": node, "gocurator.session": session(c)}})
	checkSpan(t, s.span(t, otelmetrics.SpanHold, node, request), want{parent: request, from: acquired.Time, to: released.Time,
		attrs: map[string]any{"gocurator.path": mu, "gocurator.recipe": "mutex", "gocurator.outcome": "released",
			"gocurator.node": node, "gocurator.session": session(c)}})

	// Behind a holder: a timeout, then acquired second in the queue.
	held := mutex(t, other, mu)
	if err := held.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	tctx, timedOut := s.caller(ctx, "times out")
	tctx, cancel := context.WithTimeout(tctx, 100*time.Millisecond)
	defer cancel()
	errorIs(t, h.Acquire(tctx), context.DeadlineExceeded)
	timedOut.End()
	started, failed := s.until(t, recipes.AcquireStarted, mu), s.until(t, recipes.AcquireFailed, mu)
	checkSpan(t, s.span(t, otelmetrics.SpanAcquire, "", timedOut), want{parent: timedOut, from: started.Time, to: failed.Time,
		attrs: map[string]any{"gocurator.path": mu, "gocurator.recipe": "mutex", "gocurator.outcome": "timeout",
			"error.type": "timeout"}, errorStatus: true})

	wctx, waiter := s.caller(ctx, "waits")
	done := make(chan error, 1)
	go func() { done <- h.Acquire(wctx) }()
	started = s.until(t, recipes.AcquireStarted, mu)
	waitChildren(t, ctx, other, mu, 2)
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done, "the waiter's acquire"); err != nil {
		t.Fatal(err)
	}
	waiter.End()
	acquired = s.until(t, recipes.Acquired, mu)
	checkSpan(t, s.span(t, otelmetrics.SpanAcquire, h.LockPath(), waiter), want{parent: waiter, from: started.Time, to: acquired.Time,
		attrs: map[string]any{"gocurator.outcome": "acquired", "gocurator.queue.position": int64(1)}})
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Lost: its connection dropped at a fault proxy.
	lost := base + "/lost"
	proxy := zktest.NewProxy(t, server.Addr())
	pc := newClient(t, proxy.Addr(), s.hooks...)
	ph := mutex(t, pc, lost)
	lctx, losing := s.caller(ctx, "loses")
	if err := ph.Acquire(lctx); err != nil {
		t.Fatal(err)
	}
	losing.End()
	node, owner := ph.LockPath(), session(pc)
	acquired = s.until(t, recipes.Acquired, lost)
	proxy.DropConnections()
	lostEvent := s.until(t, recipes.Lost, lost)
	if se := (*framework.StateError)(nil); !errors.As(lostEvent.Err, &se) || se.State != state.Suspended {
		t.Fatalf("lost: %v, want the SUSPENDED that caused it", lostEvent.Err)
	}
	checkSpan(t, s.span(t, otelmetrics.SpanHold, node, losing), want{parent: losing, from: acquired.Time, to: lostEvent.Time,
		attrs: map[string]any{"gocurator.path": lost, "gocurator.outcome": "lost", "error.type": "suspended",
			"gocurator.node": node, "gocurator.session": owner}, errorStatus: true})
	errorIs(t, ph.Release(ctx), recipes.ErrLockLost)
}

// NewTracing refuses a nil provider; any other will do.
func TestNewTracingRefusesNil(t *testing.T) {
	tr, err := otelmetrics.NewTracing(nil)
	if tr != nil {
		t.Error("a Tracing")
	}
	errorIs(t, err, framework.ErrInvalidArgument)
	if _, err := otelmetrics.NewTracing(noop.NewTracerProvider()); err != nil {
		t.Fatal(err)
	}
}
