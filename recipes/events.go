package recipes

import (
	"context"
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// The recipes' events (framework.Event), told through their client's Emit:
// an acquisition's start, grant or failure, its release or loss (exactly
// one of the two), a revocation asked, a term of leadership gained and
// lost. Their kinds, and what they add to an event (LockEvent), are the
// recipes' own: the client knows nothing of locks. Nothing is measured,
// nor an event built, when nothing hears it (Client.Observed, Hears).

// The kinds of the recipes' events. A lock's or lease's acquisition is
// AcquireStarted, then Acquired or AcquireFailed, then (once acquired)
// Released or Lost, exactly one of the two: a lost grant's late release is
// not an event of its own. A term of leadership is LeadershipGained, then
// LeadershipLost. Each is equal to the framework's deprecated kind of the
// same name (framework.Acquired, ...).
var (
	// AcquireStarted: an acquire began to queue (a reentrant one that only
	// counts up is no event). Logged at DEBUG.
	AcquireStarted = framework.NewEventKind("acquire-started", zapcore.DebugLevel)
	// Acquired: the lock or lease was granted. Wait is the time since
	// AcquireStarted; its LockEvent's Position the node's place in the
	// queue at its first look (0: it held at once). Logged at DEBUG.
	Acquired = framework.NewEndEventKind("acquired", zapcore.DebugLevel)
	// AcquireFailed: the acquire gave up; Err says why (a context's
	// deadline: a timeout; ErrLocked: a try that found it held). Logged at
	// DEBUG.
	AcquireFailed = framework.NewEndEventKind("acquire-failed", zapcore.DebugLevel)
	// Released: the owner released what it held; Hold is the time since
	// Acquired. Logged at DEBUG.
	Released = framework.NewEndEventKind("released", zapcore.DebugLevel)
	// Lost: the grant can no longer be trusted. Err says why (a
	// *framework.StateError, framework.ErrClosed, or zk.ErrNoNode for a
	// node found gone); Hold is the time it was held. Logged at INFO.
	Lost = framework.NewEndEventKind("lost", zapcore.InfoLevel)
	// RevocationRequested: another participant asked the holder to
	// release (Curator's revocation). Logged at INFO.
	RevocationRequested = framework.NewEventKind("revocation-requested", zapcore.InfoLevel)
	// LeadershipGained: a leader latch or selector began to lead. Logged at
	// DEBUG.
	LeadershipGained = framework.NewEventKind("leadership-gained", zapcore.DebugLevel)
	// LeadershipLost: its term of leadership ended (lost, given up, or
	// closed). Err says why, nil when given up; Hold is the term's length.
	// Logged at INFO.
	LeadershipLost = framework.NewEndEventKind("leadership-lost", zapcore.InfoLevel)
)

// LockEvent is what the recipes add to the events they tell
// (framework.Event.Detail).
type LockEvent struct {
	// Recipe is the kind of recipe: "mutex", "read", "write", "semaphore"
	// (a lease, also a semaphore mutex's), "latch", "selector".
	Recipe string
	// Position is the node's place in the queue at its first look
	// (Acquired; 0 when it held at once).
	Position int
}

// EachField calls f with the recipe, then with what e's kind measures: the
// position and the wait (Acquired), the wait (AcquireFailed), the hold
// (Released, Lost, LeadershipLost). A field of the kind's that is zero
// still shows (a position 0: held at once).
func (d LockEvent) EachField(e framework.Event, f func(key string, value any)) {
	f("recipe", d.Recipe)
	switch e.Kind {
	case Acquired:
		f("position", d.Position)
		f("wait", e.Wait)
	case AcquireFailed:
		f("wait", e.Wait)
	case Released, Lost, LeadershipLost:
		f("hold", e.Hold)
	}
}

// LockEventOf returns what e's Detail says of a recipe's event, and
// whether e is one: a hook that hears the client's events too tells the
// recipes' from them so.
func LockEventOf(e framework.Event) (LockEvent, bool) {
	d, ok := e.Detail.(LockEvent)
	return d, ok
}

// emit tells e, an event of a recipe of the recipe kind (an Acquired one:
// at position), through c, unless nothing would hear it; it reports
// whether it was dropped (see framework.Client.Emit).
func emit(c *framework.Client, recipe string, position int, e framework.Event) (dropped bool) {
	if !c.Hears(e.Kind) {
		return false
	}
	e.Detail = LockEvent{Recipe: recipe, Position: position}
	//lint:ignore SA1019 the framework's deprecated fields are filled for one release
	e.Recipe, e.Position = recipe, position
	return c.Emit(e)
}

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
	if emit(e.client, e.recipe, 0, framework.Event{Kind: AcquireStarted, Time: a.started, Path: e.path, Context: a.ctx}) {
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
	ev := framework.Event{Kind: Released, Path: e.path, Node: g.Path(), Session: g.Session(), Hold: hold, Context: ctx}
	if cause != nil {
		ev.Kind, ev.Err = Lost, cause
	}
	emit(e.client, e.recipe, 0, ev)
}

// revoked returns the revocation listener the engine calls
// (acquire.Attempt.Revoked): it tells the request, then calls listener.
func (e *lockEvents) revoked(listener func()) func(node string) {
	return func(node string) {
		emit(e.client, e.recipe, 0, framework.Event{Kind: RevocationRequested, Path: e.path, Node: node})
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
	emit(e.client, e.recipe, position, framework.Event{Kind: Acquired, Time: a.grantedAt, Path: e.path,
		Wait: a.grantedAt.Sub(a.started), Node: g.Path(), Session: g.Session(), Context: a.ctx})
}

// Failed tells the failure, and its wait.
func (a *acquisition) Failed(err error) {
	now := time.Now()
	e := a.events
	emit(e.client, e.recipe, 0, framework.Event{Kind: AcquireFailed, Time: now, Path: e.path, Wait: now.Sub(a.started), Err: err,
		Context: a.ctx})
}

// Ended tells the grant's end, and how long it held.
func (a *acquisition) Ended(g *acquire.Grant, cause error) {
	ctx := a.ctx
	a.ctx = nil // the grant outlives its end, in its handle: a request's context, values and all, need not
	a.events.ended(g, cause, time.Since(a.grantedAt), ctx)
}
