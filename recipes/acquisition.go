package recipes

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// acquisition is one grant of a lock or a lease: the node it holds, and the
// signal that ends it. Every owner type (Handle, Lease, the semaphore mutex,
// through its lease) keeps one per grant, and the ownership contract is
// written here once:
//
//   - done is closed when the grant ends, for whatever reason: an error state
//     of the client (SUSPENDED or LOST by its error policy, any LOST), Close,
//     our node found gone, or release. A goroutine waiting on it always
//     returns.
//   - err says why: nil while the grant holds; an error wrapping ErrLockLost
//     (and the cause) once it is lost; errReleased once it was given up.
//
// Whose the node is: sig was made before the create, with the client's
// session then. While sig has not ended, the client has had that one session
// all along, so the node, created in between, is that session's: no round
// trip is needed to know it. Only after an error state is the node's Stat
// read (own), as CURATOR-604 needs.
type acquisition struct {
	path       string                 // as the caller sees it (namespace stripped)
	name       string                 // last segment
	sig        *framework.ErrorSignal // made before the create; replaced only by verify, before the grant
	own        *zk.Stat               // the node's Stat, once read; nil until an error state needs it
	token      atomic.Int64           // czxid, the fencing token, once read (0: not yet)
	stopRevoke func()                 // nil unless revocable
	pre        *prelisting            // the first listing, sent behind the create; taken by the first look

	mu   sync.Mutex
	gone error // set when we found our node gone (before sig ended otherwise)
}

// errReleased is an ended grant's err once it was given up: the owner no
// longer holds it, which ErrNotHeld says.
var errReleased = errs.Errorf("%w: released", ErrNotHeld)

// owner returns the session our node belongs to, as far as we know.
func (a *acquisition) owner() int64 {
	if a.own != nil {
		return a.own.EphemeralOwner
	}
	return a.sig.Session()
}

// done returns the channel closed when the grant ends.
func (a *acquisition) done() <-chan struct{} { return a.sig.Done() }

// err returns nil while the grant holds, an error wrapping ErrLockLost once
// it is lost, and errReleased once it was released.
func (a *acquisition) err() error {
	cause := a.sig.Err()
	if cause == nil {
		return nil
	}
	a.mu.Lock()
	gone := a.gone
	a.mu.Unlock()
	switch {
	case gone != nil:
		return gone
	case errors.Is(cause, framework.ErrStopped):
		return errReleased
	}
	return errs.Errorf("%w: %w", ErrLockLost, cause)
}

// lose ends the grant because its node was found gone (or not ours).
func (a *acquisition) lose() {
	a.mu.Lock()
	if a.sig.Err() == nil {
		a.gone = errs.Errorf("%w: %w", ErrLockLost, errNodeVanished)
	}
	a.mu.Unlock()
	a.sig.Stop()
}

// end ends the grant as released (unless it had ended already) and stops
// its revocation watcher. The node is the caller's to delete.
func (a *acquisition) end() {
	a.sig.Stop()
	if a.stopRevoke != nil {
		a.stopRevoke()
	}
}

// closedChan is the Done channel of an owner that holds nothing.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// renew returns a new acquisition of the same node, for the next grant on
// it (a leader latch's next term): it is not trusted (its signal has ended),
// so the grant reads the node again; the ended one is left as it is, for
// whoever still looks at it.
func (a *acquisition) renew() *acquisition {
	return &acquisition{path: a.path, name: a.name, sig: a.sig, stopRevoke: a.stopRevoke}
}
