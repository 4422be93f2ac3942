package recipes

import (
	"context"
	"time"

	"github.com/gocurator/curator/framework"
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

// acquireObserved is an acquisition told to its client's event hook and
// logger: started when made, ended by done.
type acquireObserved struct {
	li      *lockInternals
	recipe  string
	path    string          // the recipe's path, as its events name it
	started time.Time       // zero: nothing hears
	dropped bool            // its start was dropped (the hook is too slow): nothing more of it is told
	ctx     context.Context // the acquire's, without its cancellation, for its events' Context
}

// observeAcquire tells that an acquisition of li's lock, called with ctx,
// begins; its events name path, the recipe's (li's base, but for a
// semaphore's leases).
func (li *lockInternals) observeAcquire(ctx context.Context, recipe, path string) acquireObserved {
	o := acquireObserved{li: li, recipe: recipe, path: path}
	if li.client.Observed() {
		o.started, o.ctx = time.Now(), context.WithoutCancel(ctx)
		o.dropped = li.client.Emit(framework.Event{Kind: framework.AcquireStarted, Time: o.started, Recipe: recipe, Path: path, Context: o.ctx})
	}
	return o
}

// done tells how the acquisition ended: g granted, or err. A granted g
// gets its recipe and path (grant.recipe), so that its end is told too,
// unless the acquisition's start was dropped: then none of it is told, so
// that what is built on the events (a gauge of holders) stays true.
func (o acquireObserved) done(g *grant, err error) {
	if o.dropped {
		return
	}
	if err == nil {
		g.recipe, g.recipePath, g.acquireCtx = o.recipe, o.path, o.ctx
	}
	if o.started.IsZero() {
		return
	}
	now := time.Now()
	e := framework.Event{Time: now, Recipe: o.recipe, Path: o.path, Wait: now.Sub(o.started), Context: o.ctx}
	if err != nil {
		e.Kind, e.Err = framework.AcquireFailed, err
	} else {
		e.Kind, e.Node, e.Session, e.Position = framework.Acquired, g.path, g.owner(), g.position
		g.grantedAt = now
	}
	o.li.client.Emit(e)
}

// ended tells the end of a held grant: released (cause nil) or lost. It
// is called once, by whoever settled the end (grant.end). A grant not
// granted through observeAcquire (an internal lock, a latch's term) tells
// nothing.
func (g *grant) ended(cause error) {
	if g.recipe == "" {
		return
	}
	c := g.li.client // Emit checks who hears it: a loss is logged at INFO, hook or not
	e := framework.Event{Kind: framework.Released, Recipe: g.recipe, Path: g.recipePath, Node: g.path, Session: g.owner(),
		Context: g.acquireCtx}
	if cause != nil {
		e.Kind, e.Err = framework.Lost, cause
	}
	if !g.grantedAt.IsZero() {
		e.Hold = time.Since(g.grantedAt)
	}
	g.acquireCtx = nil // the grant outlives its end, in its handle: a request's context, values and all, need not
	c.Emit(e)
}

// lostCause is why g ended, as a Lost or LeadershipLost event tells it:
// nil when it was given up.
func (g *grant) lostCause() error {
	if e := g.fin.Load(); e != nil {
		return e.cause
	}
	if cause := context.Cause(g.ctx); cause != errReleased {
		return cause
	}
	return nil
}
