package acquire

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/state"
)

// endState is whether and how a grant has ended: its context, and the one
// compare-and-swap (fin) that settles a release against a loss. The winner
// alone cleans up and tells the end.
type endState struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	trust  context.Context // the client's trust ctx was made from

	fin atomic.Pointer[ending] // how it ended, once settled; nil while it may still hold

	mu          sync.Mutex
	released    bool        // given up by its owner (Release ran)
	cancelLater func() bool // takes back the delete the clean-up of a loss planned, or nil
}

// ending is how a grant ended: lost (cause: why; err: the owner's Err,
// wrapping ErrLockLost and cause), or released (cause nil, err
// ErrReleased).
type ending struct{ cause, err error }

// releasedEnd is the end of every grant its owner released while it held.
var releasedEnd = &ending{err: ErrReleased}

// begin makes the grant's context from trust.
func (e *endState) begin(trust context.Context) {
	e.trust = trust
	e.ctx, e.cancel = context.WithCancelCause(trust)
}

// settle settles how the grant ended, once: it reports whether e did.
func (e *endState) settle(how *ending) bool { return e.fin.CompareAndSwap(nil, how) }

// hold hands the grant to its owner: it becomes one of its lock value's
// holdings (holdings.go), which settle its loss when the trust it came
// from ends.
func (g *Grant) hold() { g.lock.holdings.add(g) }

// lost is where a grant's loss is settled, the one place: unless it has
// ended already, the grant ends as lost for cause, and then what a loss
// calls for is done: the context ends, the holdings forget it, a node lost
// at SUSPENDED has its delete planned (cleanUp), and the loss is told
// (Observer.Ended). A term only ends.
func (g *Grant) lost(cause error) {
	if !g.end.settle(&ending{cause: cause, err: AsLost(cause)}) {
		return
	}
	g.end.cancel(cause)
	if !g.held {
		return
	}
	g.lock.holdings.forget(g)
	var se *framework.StateError
	if errors.As(cause, &se) {
		g.cleanUp(se)
	}
	if g.obs != nil {
		g.obs.Ended(g, cause)
	}
}

// cleanUp plans the delete of the node of a grant lost when the trust it
// came from ended with se (an error state of a live session), for when the
// servers could have let it go themselves. A grant its owner has released
// already is Release's to delete (from now): one place plans that.
func (g *Grant) cleanUp(se *framework.StateError) {
	if se.State == state.Lost {
		return // the session is gone, and its nodes with it
	}
	at := se.ExpiryBound
	if at.IsZero() {
		at = time.Now().Add(g.lock.client.SessionTimeout())
	}
	g.end.mu.Lock()
	defer g.end.mu.Unlock()
	if !g.end.released {
		g.end.cancelLater = g.lock.client.DeleteLater(g.node.path, at)
	}
}

// Release gives the grant up for its owner, and reports how it had ended:
// nil when this call released it (the caller deletes the node: Delete), or
// the loss that ended it first. Only the first call does anything; first
// is false for every later one. Released while it holds, the grant ends
// (ErrReleased) and its observer hears it released. Lost, the loss is
// settled if it was not yet (lost), and the node of a lock's or a lease's
// grant is deleted in the background from now (a delete the clean-up of
// the loss planned for later is brought forward; a node gone with its
// session or found gone costs one request that finds nothing): the owner
// has stopped, and a release after a loss waits for no server. The
// revocation watcher stops either way.
func (g *Grant) Release() (lost error, first bool) {
	g.end.mu.Lock()
	first = !g.end.released
	g.end.released = true
	g.end.mu.Unlock()
	if !first {
		return g.lostErr(), false
	}
	if g.node.stopRevoke != nil {
		defer g.node.stopRevoke()
	}
	if g.end.ctx.Err() == nil && g.end.settle(releasedEnd) {
		g.end.cancel(ErrReleased)
		if g.held {
			g.lock.holdings.forget(g)
			if g.obs != nil {
				g.obs.Ended(g, nil)
			}
		}
		return nil, true
	}
	g.lost(context.Cause(g.end.ctx)) // settled already, or settled now
	lost = g.lostErr()
	if lost == nil || !g.held {
		return lost, true
	}
	g.end.mu.Lock()
	if g.end.cancelLater == nil || g.end.cancelLater() {
		g.end.cancelLater = g.lock.client.DeleteLater(g.node.path, time.Now())
	}
	g.end.mu.Unlock()
	return lost, true
}

// lostErr returns the loss that ended the grant, or nil when it was
// released (or holds).
func (g *Grant) lostErr() error {
	if err := g.Err(); err != ErrReleased {
		return err
	}
	return nil
}
