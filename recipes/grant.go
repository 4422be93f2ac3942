package recipes

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/state"
)

// The ownership contract is written here once. A grant is one grant of a
// lock, a lease, or a term of leadership: the node it holds, and a context
// that ends when the grant does. Every owner type (Handle and so the
// read-write lock's halves, Lease and so the semaphore mutex, the
// multi-lock, a latch's and a selector's terms) keeps its current (or last)
// grant and derives Done, Err, IsHeld and FencingToken from it alone:
//
//   - The grant's context is context.WithCancelCause of the client's trust
//     (framework.Client.Trust) taken before the node was created, so it ends
//     at the first error state of the client (SUSPENDED or LOST by its
//     error policy, any LOST), at Close, when the owner finds the node gone
//     (errNodeVanished), and at release (errReleased). A goroutine waiting
//     on Done always returns.
//   - A grant handed to its owner ends once, settled by one compare-and-swap
//     (end): released by its owner, or lost, whichever comes first. The
//     winner alone does what that end calls for and tells it: exactly one
//     Released or Lost event per grant, after its Acquired. A loss is
//     settled by whoever sees the context ended first: the holdings'
//     follower of the trust (holdings.go), the owner's Err, Release or
//     FencingToken, so that Err is never read unsettled.
//   - Err is nil while the grant holds; once it has ended it says how, and
//     keeps saying it: errReleased (ErrNotHeld) after a release, and an
//     error wrapping ErrLockLost and the cause after a loss, released
//     since or not, until the owner acquires again.
//   - A lock's or a lease's grant lost at SUSPENDED leaves nothing behind:
//     its node is deleted by the library (framework.Client.DeleteLater) no
//     sooner than the servers themselves could have let it go
//     (StateError.ExpiryBound), so the holder told of the loss keeps that
//     margin to stop, whether or not it ever calls Release. A Release after
//     a loss waits for no server: it brings that delete forward to now, in
//     the background (the owner has stopped), and returns the loss. (A
//     release of a held grant deletes at once. LOST and Close end the
//     session, and its nodes with it. A latch's node is a candidacy, not a
//     held resource: it stays, as in Curator.)
//
// Whose the node is: the trust vouches for one session (grant.session)
// until it ends, so while the context lives the node, created in between,
// is that session's, and no round trip is needed to know it. Only after an
// error state is the node's Stat read (own), as CURATOR-604 needs.
type grant struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	trust   context.Context // the client's trust ctx was made from
	session int64           // the session the trust vouched for then

	li         *lockInternals
	path, name string       // the node's path (namespace stripped) and last segment
	own        *zk.Stat     // the node's Stat, once read; nil until an error state needs it
	token      atomic.Int64 // czxid, the fencing token, once read (0: not yet)
	stopRevoke func()       // nil unless revocable
	first      firstListing // the listing sent behind the create, if any; taken by the first look

	recipe     string    // the recipe kind its events name; "" when none are told (events.go)
	recipePath string    // the recipe's path its events name
	grantedAt  time.Time // when it was granted, if its events are heard
	position   int       // our node's place in the queue at its first look
	// acquireCtx is the acquire's context without its cancellation, for
	// its events' Context (events.go); nil when none are told.
	acquireCtx context.Context

	held atomic.Bool              // handed to its owner (hold): its end is settled, cleaned up and told
	fin  atomic.Pointer[grantEnd] // how it ended, once settled (end); nil while it may still hold

	mu          sync.Mutex
	released    bool        // given up by its owner (release ran)
	cancelLater func() bool // takes back the delete the clean-up of a loss planned, or nil
}

// grantEnd is how a grant ended: lost (cause: why; err: the owner's Err,
// wrapping ErrLockLost and cause), or released (cause nil, err
// errReleased).
type grantEnd struct{ cause, err error }

// releasedEnd is the end of every grant its owner released while it held.
var releasedEnd = &grantEnd{err: errReleased}

// errReleased is an ended grant's cause once it was given up: the owner no
// longer holds it, which ErrNotHeld says.
var errReleased = errs.Errorf("%w: released", ErrNotHeld)

// newGrant returns the grant of a node about to be created at li's base,
// its context made from the client's trust now.
func newGrant(li *lockInternals) *grant {
	g := &grant{li: li}
	g.arm()
	return g
}

// arm makes the grant's context anew from the client's trust now (and ends
// the old one, if any): for a grant after an error state, which the node's
// Stat is then read for, and for a latch's next term. It is called before
// the grant is handed out.
func (g *grant) arm() {
	if g.cancel != nil {
		g.cancel(errReleased)
	}
	g.trust, g.session = g.li.client.Trust()
	g.ctx, g.cancel = context.WithCancelCause(g.trust)
}

// renew returns a new grant of the same node, for the next grant on it (a
// leader latch's next term), its context made from the trust now, and ends
// this one (it is left otherwise as it is, for whoever still looks at it).
// The node's owner is carried over, not taken from the trust: the node was
// made in g's session, and if the client is in another one now, the next
// look reads the node (and finds it not ours) rather than trusting it.
func (g *grant) renew() *grant {
	g.release()
	next := &grant{li: g.li, path: g.path, name: g.name, own: &zk.Stat{EphemeralOwner: g.owner()}}
	next.arm()
	return next
}

// owner returns the session our node belongs to, as far as we know.
func (g *grant) owner() int64 {
	if g.own != nil {
		return g.own.EphemeralOwner
	}
	return g.session
}

// done returns the channel closed when the grant ends.
func (g *grant) done() <-chan struct{} { return g.ctx.Done() }

// holds reports whether the grant still holds, settling nothing (for a
// look across many grants under a lock of their own).
func (g *grant) holds() bool { return g.fin.Load() == nil && g.ctx.Err() == nil }

// err returns nil while the grant holds, and otherwise how it ended:
// errReleased once it was given up, and otherwise an error wrapping
// ErrLockLost and why. A handed-out grant whose context has ended is
// settled here as lost, if nobody has settled it yet.
func (g *grant) err() error {
	if e := g.fin.Load(); e != nil {
		return e.err
	}
	if g.ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(g.ctx)
	if !g.held.Load() {
		if cause == errReleased {
			return cause
		}
		return asLost(cause)
	}
	g.lost(cause)
	return g.fin.Load().err
}

// end settles how the grant ended, once: it reports whether e did.
func (g *grant) end(e *grantEnd) bool { return g.fin.CompareAndSwap(nil, e) }

// lose ends the grant because its node was found gone (or not ours).
func (g *grant) lose() {
	g.lost(errs.Errorf("%w: %w", ErrLockLost, errNodeVanished))
}

// lost settles the grant as lost for cause, unless it has ended already,
// and then does what a loss calls for: the context ends, the holdings
// forget it, a node lost at SUSPENDED has its delete planned (cleanUp),
// and then the loss is told. A grant not handed out only ends.
func (g *grant) lost(cause error) {
	if !g.end(&grantEnd{cause: cause, err: asLost(cause)}) {
		return
	}
	g.cancel(cause)
	if !g.held.Load() {
		return
	}
	g.li.holdings.forget(g)
	var se *framework.StateError
	if errors.As(cause, &se) {
		g.cleanUp(se)
	}
	g.ended(cause)
}

// hold hands the grant to its owner: it becomes one of its lock's holdings
// (holdings.go), and its end is settled, cleaned up and told from then on.
// A latch's grant does not call it.
func (g *grant) hold() {
	g.held.Store(true)
	g.li.holdings.add(g)
}

// cleanUp plans the delete of the node of a grant lost when the trust it
// came from ended with se (an error state of a live session), for when the
// servers could have let it go themselves. A grant its owner has released
// already is release's to delete (from now): one place plans that.
func (g *grant) cleanUp(se *framework.StateError) {
	if se.State == state.Lost {
		return // the session is gone, and its nodes with it
	}
	at := se.ExpiryBound
	if at.IsZero() {
		at = time.Now().Add(g.li.client.SessionTimeout())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.released {
		g.cancelLater = g.li.client.DeleteLater(g.path, at)
	}
}

// release gives the grant up for its owner, and reports how it had ended:
// nil when this call released it (its caller deletes the node), or the
// loss that ended it first. Only the first call does anything. Released
// while it holds, the grant ends (errReleased) and the release is told;
// lost, the loss is settled if it was not yet, and the node is deleted in
// the background from now (a delete the clean-up of the loss planned for
// later is brought forward; a node gone with its session or found gone
// costs one request that finds nothing): the owner has stopped, and a
// release after a loss waits for no server. The revocation watcher stops
// either way. first is false for every call but the first.
func (g *grant) release() (lost error, first bool) {
	g.mu.Lock()
	first = !g.released
	g.released = true
	g.mu.Unlock()
	if !first {
		return g.lostErr(), false
	}
	if g.stopRevoke != nil {
		defer g.stopRevoke()
	}
	if g.ctx.Err() == nil && g.end(releasedEnd) {
		g.cancel(errReleased)
		if g.held.Load() {
			g.li.holdings.forget(g)
			g.ended(nil)
		}
		return nil, true
	}
	lost = g.lostErr()
	if lost == nil || !g.held.Load() { // a grant never handed out, given up: its caller deletes
		return lost, true
	}
	g.mu.Lock()
	if g.cancelLater == nil || g.cancelLater() {
		g.cancelLater = g.li.client.DeleteLater(g.path, time.Now())
	}
	g.mu.Unlock()
	return lost, true
}

// lostErr returns the loss that ended the grant, or nil when it was
// released (or holds).
func (g *grant) lostErr() error {
	if err := g.err(); err != errReleased {
		return err
	}
	return nil
}

// firstListing is the listing sent behind a grant's create
// (lockInternals.createAndList), for its first look at the queue, and, for
// a counting driver, the children watch set before it.
type firstListing struct {
	children []string // our node among them: never empty when there is one
	watch    *sharedWatch
}

// closedChan is the Done channel of an owner that holds nothing.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// doneOf returns the Done channel of an owner whose current grant is g:
// g's, or a closed channel when there is none.
func doneOf(g *grant) <-chan struct{} {
	if g == nil {
		return closedChan
	}
	return g.done()
}

// ownerErr returns the Err of an owner of what (its path) whose current grant
// is g: g's err, or an error wrapping notHeld when there is none.
func ownerErr(g *grant, what string, notHeld error) error {
	if g == nil {
		return errs.Errorf("%s: %w", what, notHeld)
	}
	return g.err()
}

// contextOf is what the package's owners have beyond Owner: the context
// of their current acquisition (nil when they hold nothing), which WithLock
// and the multi-lock follow with context.AfterFunc instead of a goroutine.
type contextOf interface {
	grantContext() context.Context
}
