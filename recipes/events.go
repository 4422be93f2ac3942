package recipes

import (
	"context"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// The recipes' events (framework.Event), told through their client's Emit:
// an acquisition's start, grant or failure, its release or loss (exactly
// one of the two), a revocation asked, a term of leadership gained and
// lost. Nothing is measured when nothing hears them (Client.Observed).

// The recipe kinds events name.
const (
	recipeMutex     = "mutex"
	recipeRead      = "read"
	recipeWrite     = "write"
	recipeSemaphore = "semaphore"
	recipeLatch     = "latch"
	recipeSelector  = "selector"
)

// lockEvents tells the acquisitions of one lock value (the engine's
// acquire.Observer): kept in the value, it costs an acquisition nothing
// while nothing hears the events, and still tells a loss then (Emit logs
// one at INFO, hook or not).
type lockEvents struct {
	client *framework.Client
	recipe string
	path   string // the recipe's path, as its events name it
}

// Acquiring tells that an acquisition called with ctx begins. While
// something hears, it returns the acquisition's own observer, which
// measures it; nil when its start was dropped (the hook is too slow): then
// none of it is told, so that what is built on the events (a gauge of
// holders) stays true.
func (e *lockEvents) Acquiring(ctx context.Context) acquire.Observer {
	if !e.client.Observed() {
		return e
	}
	a := &acquisition{events: e, started: time.Now(), ctx: context.WithoutCancel(ctx)}
	if e.client.Emit(framework.Event{Kind: framework.AcquireStarted, Time: a.started, Recipe: e.recipe, Path: e.path, Context: a.ctx}) {
		return nil
	}
	return a
}

// Acquired, Failed: not measured, not told.
func (e *lockEvents) Acquired(*acquire.Grant, int) {}
func (e *lockEvents) Failed(error)                 {}

// Ended tells the end of a grant acquired while nothing heard: released
// (cause nil) or lost.
func (e *lockEvents) Ended(g *acquire.Grant, cause error) { e.ended(g, cause, 0, nil) }

// ended tells that g ended (released: cause nil), held for hold, acquired
// with ctx.
func (e *lockEvents) ended(g *acquire.Grant, cause error, hold time.Duration, ctx context.Context) {
	ev := framework.Event{Kind: framework.Released, Recipe: e.recipe, Path: e.path, Node: g.Path(), Session: g.Session(),
		Hold: hold, Context: ctx}
	if cause != nil {
		ev.Kind, ev.Err = framework.Lost, cause
	}
	e.client.Emit(ev)
}

// revoked returns the revocation listener the engine calls
// (acquire.Attempt.Revoked): it tells the request, then calls listener.
func (e *lockEvents) revoked(listener func()) func(node string) {
	return func(node string) {
		e.client.Emit(framework.Event{Kind: framework.RevocationRequested, Recipe: e.recipe, Path: e.path, Node: node})
		listener()
	}
}

// acquisition is one acquisition told while something hears: when it
// began, with what context, and when it was granted.
type acquisition struct {
	events    *lockEvents
	started   time.Time
	grantedAt time.Time
	// ctx is the acquire's context without its cancellation, for its
	// events' Context; dropped once its grant has ended.
	ctx context.Context
}

func (a *acquisition) Acquiring(context.Context) acquire.Observer { return a }

// Acquired tells the grant: its wait, its node and its place in the queue.
func (a *acquisition) Acquired(g *acquire.Grant, position int) {
	a.grantedAt = time.Now()
	e := a.events
	e.client.Emit(framework.Event{Kind: framework.Acquired, Time: a.grantedAt, Recipe: e.recipe, Path: e.path,
		Wait: a.grantedAt.Sub(a.started), Node: g.Path(), Session: g.Session(), Position: position, Context: a.ctx})
}

// Failed tells the failure, and its wait.
func (a *acquisition) Failed(err error) {
	now := time.Now()
	e := a.events
	e.client.Emit(framework.Event{Kind: framework.AcquireFailed, Time: now, Recipe: e.recipe, Path: e.path,
		Wait: now.Sub(a.started), Err: err, Context: a.ctx})
}

// Ended tells the grant's end, and how long it held.
func (a *acquisition) Ended(g *acquire.Grant, cause error) {
	ctx := a.ctx
	a.ctx = nil // the grant outlives its end, in its handle: a request's context, values and all, need not
	a.events.ended(g, cause, time.Since(a.grantedAt), ctx)
}
