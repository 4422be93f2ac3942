package otelmetrics

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
)

// The spans Tracing makes.
const (
	// SpanAcquire is the name of an acquire's span: its wait, from the
	// acquire's start to its grant or failure.
	SpanAcquire = "gocurator.lock.acquire"
	// SpanHold is the name of a hold's span: from the grant to its release
	// or loss.
	SpanHold = "gocurator.lock.hold"
)

// The attributes of spans only: too many values for a metric's.
const (
	attrPosition = attribute.Key("gocurator.queue.position")
	attrNode     = attribute.Key("gocurator.node")
	attrSession  = attribute.Key("gocurator.session")
)

// Tracing is an event hook (framework.EventHook: give it to
// framework.WithEventHook, beside a Metrics if you like) that records each
// acquire of a lock or lease, and each hold of one, as an OpenTelemetry
// span; the package doc lists them. One Tracing may serve any number of
// clients at once.
type Tracing struct {
	tracer trace.Tracer
}

// NewTracing makes the spans with provider's tracer ScopeName. A nil
// provider fails with framework.ErrInvalidArgument.
func NewTracing(provider trace.TracerProvider) (*Tracing, error) {
	if provider == nil {
		return nil, fmt.Errorf("%w: otelmetrics: nil tracer provider", framework.ErrInvalidArgument)
	}
	return &Tracing{tracer: provider.Tracer(ScopeName)}, nil
}

// Event records e's span, once what it spans has ended: an acquire's at its
// Acquired or AcquireFailed, a hold's at its Released or Lost. Each span
// starts when what it spans began (the event's Time less its Wait or Hold),
// as a child of the span in the context the acquire was called with (the
// event's Context). Other events make no span.
func (t *Tracing) Event(e framework.Event) {
	d, ok := recipes.LockEventOf(e)
	if !ok {
		return
	}
	switch e.Kind {
	case recipes.Acquired, recipes.AcquireFailed:
		outcome := outcomeOf(e)
		attrs := []attribute.KeyValue{attrOutcome.String(outcome)}
		if e.Kind == recipes.Acquired {
			attrs = append(attrs, attrPosition.Int(d.Position))
		}
		t.span(e, d, SpanAcquire, e.Wait, outcome != outcomeAcquired && outcome != outcomeLocked, attrs...)
	case recipes.Released:
		t.span(e, d, SpanHold, e.Hold, false, attrOutcome.String(outcomeReleased))
	case recipes.Lost:
		t.span(e, d, SpanHold, e.Hold, true, attrOutcome.String(outcomeLost))
	}
}

// span records the span name of e (whose detail is le), which lasted d up
// to e's Time, with e's path, recipe, node and session, attrs, and e's
// error: its error.type, and an Error status when failed.
func (t *Tracing) span(e framework.Event, le recipes.LockEvent, name string, d time.Duration, failed bool, attrs ...attribute.KeyValue) {
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	attrs = append(attrs, attrPath.String(e.Path), attrRecipe.String(le.Recipe))
	if e.Node != "" {
		attrs = append(attrs, attrNode.String(e.Node))
	}
	if e.Session != 0 {
		attrs = append(attrs, attrSession.String(fmt.Sprintf("0x%x", e.Session)))
	}
	if e.Err != nil {
		attrs = append(attrs, attrCause.String(causeOf(e.Err)))
	}
	_, span := t.tracer.Start(ctx, name, trace.WithTimestamp(e.Time.Add(-d)), trace.WithAttributes(attrs...))
	if failed && e.Err != nil {
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(e.Time))
}
