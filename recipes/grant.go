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
// multi-lock, a latch's and a selector's terms) keeps its current grant and
// derives Done, Err, IsHeld and FencingToken from it alone:
//
//   - The grant's context is context.WithCancelCause of the client's trust
//     (framework.Client.Trust) taken before the node was created, so it ends
//     at the first error state of the client (SUSPENDED or LOST by its
//     error policy, any LOST), at Close, when the owner finds the node gone
//     (errNodeVanished), and at release (errReleased). A goroutine waiting
//     on Done always returns.
//   - Err is nil while the context lives; once it has ended, its cause says
//     why: errReleased (ErrNotHeld) after a release, and otherwise an error
//     wrapping ErrLockLost and the cause.
//   - A lock's or a lease's grant lost at SUSPENDED leaves nothing behind:
//     its node is deleted by the library (framework.Client.DeleteLater) no
//     sooner than the servers themselves could have let it go
//     (StateError.ExpiryBound), so the holder told of the loss keeps that
//     margin to stop, whether or not it ever calls Release. (A release
//     deletes at once. LOST and Close end the session, and its nodes with
//     it. A latch's node is a candidacy, not a held resource: it stays, as
//     in Curator.)
//
// Whose the node is: the trust vouches for one session (grant.session)
// until it ends, so while the context lives the node, created in between,
// is that session's, and no round trip is needed to know it. Only after an
// error state is the node's Stat read (own), as CURATOR-604 needs.
type grant struct {
	ctx     context.Context
	end     context.CancelCauseFunc
	trust   context.Context // the client's trust ctx was made from
	session int64           // the session the trust vouched for then

	li         *lockInternals
	path, name string       // the node's path (namespace stripped) and last segment
	own        *zk.Stat     // the node's Stat, once read; nil until an error state needs it
	token      atomic.Int64 // czxid, the fencing token, once read (0: not yet)
	stopRevoke func()       // nil unless revocable
	first      firstListing // the listing sent behind the create, if any; taken by the first look

	recipe     string      // the recipe kind its events name; "" when none are told (events.go)
	recipePath string      // the recipe's path its events name
	grantedAt  time.Time   // when it was granted, if its events are heard
	position   int         // our node's place in the queue at its first look
	endTold    atomic.Bool // its Released or Lost event has been told
	// acquireCtx is the acquire's context without its cancellation, for
	// its events' Context (events.go); nil when none are told.
	acquireCtx context.Context

	mu          sync.Mutex
	held        bool        // one of its client's holdings (hold)
	released    bool        // given up by its owner: a clean-up of a loss is not needed
	cancelLater func() bool // takes back a delete the clean-up of a loss scheduled, or nil
}

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
// Stat is then read for, and for a latch's next term.
func (g *grant) arm() {
	if g.end != nil {
		g.end(errReleased)
	}
	g.trust, g.session = g.li.client.Trust()
	g.ctx, g.end = context.WithCancelCause(g.trust)
}

// renew returns a new grant of the same node, for the next grant on it (a
// leader latch's next term), its context made from the trust now, and ends
// this one (it is left otherwise as it is, for whoever still looks at it).
// The node's owner is carried over, not taken from the trust: the node was
// made in g's session, and if the client is in another one now, the next
// look reads the node (and finds it not ours) rather than trusting it.
func (g *grant) renew() *grant {
	g.end(errReleased)
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

// err returns nil while the grant holds, errReleased once it was given up,
// and otherwise an error wrapping ErrLockLost and why it ended.
func (g *grant) err() error {
	if g.ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(g.ctx)
	if cause == errReleased || errors.Is(cause, ErrLockLost) {
		return cause
	}
	return errs.Errorf("%w: %w", ErrLockLost, cause)
}

// lose ends the grant because its node was found gone (or not ours).
func (g *grant) lose() {
	g.end(errs.Errorf("%w: %w", ErrLockLost, errNodeVanished))
	g.ended(g.lostCause())
}

// hold makes the grant one of its client's holdings, as it goes to its
// owner: a lock's or a lease's node is then deleted when the grant is lost
// at SUSPENDED (see the package comment above; holdings.go). A latch's
// grant does not call it.
func (g *grant) hold() {
	g.mu.Lock()
	g.held = true
	g.mu.Unlock()
	holdingsOf(g.li.client).add(g)
}

// cleanUp deletes the node of a grant lost when the trust it came from
// ended with se (an error state of a live session), once the servers could
// have let it go themselves.
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

// isReleased reports whether the grant's owner has given it up.
func (g *grant) isReleased() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.released
}

// release ends the grant as given up by its owner (unless it had ended
// already) and stops what watches it: the revocation watcher, the clean-up
// of a loss, and a delete that clean-up scheduled (the owner deletes the
// node itself, at once). It reports whether it was the first release.
func (g *grant) release() bool {
	g.mu.Lock()
	first := !g.released
	g.released = true
	later, held := g.cancelLater, g.held
	g.mu.Unlock()
	if !first {
		return false
	}
	if g.ctx.Err() == nil {
		g.ended(nil) // a loss was told when it came
	}
	if held {
		holdingsOf(g.li.client).remove(g)
	}
	if later != nil {
		later()
	}
	g.end(errReleased)
	if g.stopRevoke != nil {
		g.stopRevoke()
	}
	return true
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

// contextOf is what the package's owners have beyond Locker: the context
// of their current acquisition (nil when they hold nothing), which WithLock
// and the multi-lock follow with context.AfterFunc instead of a goroutine.
type contextOf interface {
	grantContext() context.Context
}
