package acquire

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// Grant is one grant of a lock, a lease, or a term of leadership: the node
// it holds, and a context that ends when the grant does. The ownership
// contract is written here once. Every owner type of the recipes (a
// Handle and so the read-write lock's halves, a Lease and so the semaphore
// mutex, the multi-lock, a latch's and a selector's terms) keeps its
// current (or last) grant and derives Done, Err, IsHeld and FencingToken
// from it alone:
//
//   - A grant exists only once its node holds: a waiter has a node, not a
//     grant (node.go). Its context is context.WithCancelCause of the
//     client's trust (framework.Client.Trust) taken before the node was
//     created, so it ends at the first error state of the client since
//     then (SUSPENDED or LOST by its error policy, any LOST), at Close,
//     when the owner finds the node gone (ErrVanished), and at release
//     (ErrReleased). A goroutine waiting on Done always returns.
//   - A grant ends once, settled by one compare-and-swap (end.go): released
//     by its owner, or lost, whichever comes first. The winner alone does
//     what that end calls for and tells it: exactly one Ended to its
//     observer per grant, after its Acquired. A loss is settled in one
//     place, lost, called by whoever learns of it: the holdings' follower
//     of the trust (holdings.go), a Release that finds the context ended,
//     and a Token read that finds the node gone. Reading a grant settles
//     nothing: Err, Cause and Done only read.
//   - Err is nil while the grant holds; once it has ended it says how, and
//     keeps saying it: ErrReleased (ErrNotHeld) after a release, and an
//     error wrapping ErrLockLost and the cause after a loss, released
//     since or not. (Before the loss is settled, Err says what the
//     settling will record: the context's cause, as a loss.)
//   - A lock's or a lease's grant lost at SUSPENDED leaves nothing behind:
//     its node is deleted by the library (framework.Client.DeleteLater) no
//     sooner than the servers themselves could have let it go
//     (StateError.ExpiryBound), so the holder told of the loss keeps that
//     margin to stop, whether or not it ever calls Release. A Release after
//     a loss waits for no server: it brings that delete forward to now, in
//     the background (the owner has stopped), and returns the loss. (A
//     release of a held grant deletes at once. LOST and Close end the
//     session, and its nodes with it. A term's node is a candidacy, not a
//     held resource: it stays, as in Curator.)
type Grant struct {
	lock *Lock
	node grantNode // what it holds
	end  endState  // whether and how it has ended (end.go)
	obs  Observer  // hears its end; nil for a term
	held bool      // one of its lock value's holdings (a lock's or a lease's); a term is not
}

// grantNode is the node a grant holds.
type grantNode struct {
	path, name string
	owner      int64        // the session the node belongs to
	token      atomic.Int64 // its czxid, the fencing token, once read (0: not yet)
	stopRevoke func()       // nil unless revocable
}

// newGrant returns the grant of n, which holds, its context made from the
// trust n was created (or last verified) under; held says whether it is
// one of l's holdings (hold).
func newGrant(l *Lock, n *node, o Observer, held bool) *Grant {
	g := &Grant{lock: l, obs: o, held: held}
	g.node.path, g.node.name, g.node.owner, g.node.stopRevoke = n.path, n.name, n.ownerID(), n.stopRevoke
	g.node.token.Store(n.token)
	g.end.begin(n.trust)
	return g
}

// Path returns the full path of the grant's node (the namespace stripped).
func (g *Grant) Path() string { return g.node.path }

// Name returns the last segment of the grant's node's path.
func (g *Grant) Name() string { return g.node.name }

// Session returns the session the grant's node belongs to.
func (g *Grant) Session() int64 { return g.node.owner }

// Client returns the client the grant's node was created through.
func (g *Grant) Client() *framework.Client { return g.lock.client }

// Done returns the channel closed when the grant ends.
func (g *Grant) Done() <-chan struct{} { return g.end.ctx.Done() }

// Context returns the grant's context: it ends when the grant does, its
// cause why. A follower of the grant's end (context.AfterFunc) uses it.
func (g *Grant) Context() context.Context { return g.end.ctx }

// Err returns nil while the grant holds, and otherwise how it ended:
// ErrReleased (wrapping ErrNotHeld) once it was given up, and otherwise an
// error wrapping ErrLockLost and why. It settles nothing.
func (g *Grant) Err() error {
	if e := g.end.fin.Load(); e != nil {
		return e.err
	}
	if g.end.ctx.Err() == nil {
		return nil
	}
	cause := context.Cause(g.end.ctx)
	if cause == ErrReleased {
		return cause
	}
	return AsLost(cause)
}

// Cause returns why the grant ended, as a Lost event tells it: nil while
// it holds, and when it was given up.
func (g *Grant) Cause() error {
	if e := g.end.fin.Load(); e != nil {
		return e.cause
	}
	if cause := context.Cause(g.end.ctx); cause != ErrReleased {
		return cause
	}
	return nil
}

// holds reports whether the grant still holds, settling nothing (for a
// look across many grants under a lock of their own).
func (g *Grant) holds() bool { return g.end.fin.Load() == nil && g.end.ctx.Err() == nil }

// Token returns our node's czxid, the fencing token: read from the server
// the first time it is asked for, unless the acquisition knew it already
// (a verify read it; a downgrade takes its write lock's). The grant must
// still hold: once it ended, the answer is its Err; a node found gone (or
// another session's) is a loss learnt, and settled here (lost).
func (g *Grant) Token(ctx context.Context) (int64, error) {
	if err := g.Err(); err != nil {
		return 0, err
	}
	if t := g.node.token.Load(); t != 0 {
		return t, nil
	}
	ok, stat, err := g.lock.client.Exists(ctx, g.node.path)
	if err != nil {
		return 0, err
	}
	if !ok || stat.EphemeralOwner != g.node.owner {
		g.lose()
	}
	if err := g.Err(); err != nil { // lost, or an error state came while we asked
		return 0, err
	}
	g.node.token.Store(stat.Czxid)
	return stat.Czxid, nil
}

// Delete deletes the node of a grant its owner released (Release returned
// no loss), guaranteed: if the delete fails, it goes on in the background.
// A node that is already gone is no error.
func (g *Grant) Delete(ctx context.Context) error {
	err := g.lock.client.Delete(ctx, g.node.path, framework.Guaranteed())
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// lose ends the grant because its node was found gone (or not ours).
func (g *Grant) lose() {
	g.lost(errs.Errorf("%w: %w", ErrLockLost, ErrVanished))
}
