package acquire

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/retry"
)

// Lock is one lock at one base path on one client: Curator's
// LockInternals. A recipe value keeps one per base path it queues under (a
// semaphore two: its guard lock's and its leases'), by value.
type Lock struct {
	client *framework.Client
	base   string
	shared *clientShared // the client's watches and listers (shared.go)
	// holdings are the grants of this lock value held now (holdings.go).
	holdings holdings
	// listHook, when set (by tests only), hears what a waiter of this
	// value does in its lister (see lister.list), and when it takes the
	// listing sent behind its create (createAndList).
	listHook func(ev listEvent, ctx context.Context, n uint64)
}

// NewLock returns the lock at base on client. The client and the path are
// the caller's to check.
func NewLock(client *framework.Client, base string) Lock {
	return Lock{client: client, base: base, shared: sharedOf(client)}
}

// Client returns the lock's client (nil for a zero Lock).
func (l *Lock) Client() *framework.Client { return l.client }

// Base returns the lock's base path.
func (l *Lock) Base() string { return l.base }

// AnyHeld reports whether a grant of this lock value holds now.
func (l *Lock) AnyHeld() bool { return l.holdings.any() }

// Attempt says what one acquire creates and how it decides.
type Attempt struct {
	// Path is where the node is created, before protection: the base and
	// a lock name ("lock-").
	Path string
	// Mode is EphemeralSequential, or Ephemeral for a downgrade read node.
	Mode framework.CreateMode
	// Data is the node's data; nil: the client's default data.
	Data   []byte
	Driver Driver
	// Try gives up with ErrLocked instead of waiting.
	Try bool
	// Revoked, when set, makes the grant revocable: it is called with the
	// node's path, on a goroutine of its own, each time another participant
	// writes locktree.RevokeMessage to the node (revocation.go).
	Revoked func(node string)
	// Still, when set, says once our node holds whether the grant may
	// still be given (nil) or not (why): a downgrade's, whether the write
	// lock it takes the place of still holds. It runs before the grant is
	// told or held.
	Still func() error
	// Token is the grant's fencing token when it is known already (a
	// downgrade's: its write lock's); 0: the node's czxid, read when asked.
	Token int64
	// Guard, when set, is a lock taken before each node of this attempt is
	// created and given up once it holds or fails: Curator's
	// InterProcessSemaphoreV2 queues for its leases behind an internal
	// mutex. Its own guard is not looked at.
	Guard *Guard
	// Observer hears the acquisition (observer.go), or nil.
	Observer Observer
}

// Guard is a lock taken around each try of an attempt (Attempt.Guard): the
// lock and how it is taken.
type Guard struct {
	Lock    *Lock
	Attempt Attempt
}

// Acquire creates a node and waits until the driver says it holds, ctx
// ends, or an error occurs: the one acquire sequence of every recipe. It
// tells the observer that the acquisition begins; retries, as far as the
// client's retry policy allows, while our node vanishes (its session
// expired), as Curator's attemptLock does; and hands the grant out held
// (hold: one of the lock value's holdings, its loss settled, cleaned up and
// told), after the observer heard it granted. On any failure our node is
// deleted (guaranteed) before Acquire returns, and the observer hears the
// failure.
func (l *Lock) Acquire(ctx context.Context, a Attempt) (*Grant, error) {
	var o Observer
	if a.Observer != nil {
		o = a.Observer.Acquiring(ctx)
	}
	var n node
	err := l.try(ctx, &a, &n)
	if vanished(err) {
		n, err = l.retryVanished(ctx, a, err)
	}
	if err != nil {
		if o != nil {
			o.Failed(err)
		}
		return nil, err
	}
	g := newGrant(l, &n, o, true)
	if o != nil {
		o.Acquired(g, n.position) // before hold publishes g
	}
	g.hold()
	return g, nil
}

// retryVanished tries again, as far as the client's retry policy allows,
// while a try fails because our node vanished (ErrVanished): Curator's
// NoNode retry (attemptLock; the semaphore's RETRY_DUE_TO_MISSING_NODE).
// It is the retry loop of that one cause; connection loss is retried
// inside each call, by the client. The first try was made by the caller,
// which built no retry machinery for it (nor made its node escape).
func (l *Lock) retryVanished(ctx context.Context, a Attempt, first error) (node, error) {
	start := time.Now()
	var n node
	err := retry.Do(ctx, l.client.RetryPolicy(), func(context.Context) error {
		n = node{}
		return l.try(ctx, &a, &n)
	}, retry.FirstAttempt(start, first), retry.RetryIf(vanished),
		retry.OnRetry(func(error, int, time.Duration) {
			l.client.Logger().Info("lock node vanished; creating a new one", zap.String("lock", l.base))
		}))
	return n, err
}

// try takes the attempt's guard lock, if any, then creates our node and
// waits on it (n); the guard is given up either way. On failure our node is
// deleted.
func (l *Lock) try(ctx context.Context, a *Attempt, n *node) error {
	if g := a.Guard; g != nil {
		var gn node
		if err := g.Lock.tryOnce(ctx, &g.Attempt, &gn); err != nil {
			return err
		}
		defer g.Lock.giveUp(ctx, &gn)
	}
	return l.tryOnce(ctx, a, n)
}

// tryOnce creates our node (n) and waits on it until it holds; on failure
// it deletes it.
func (l *Lock) tryOnce(ctx context.Context, a *Attempt, n *node) error {
	var ls *lister // nil for a counting driver, which lists the children itself
	if _, counting := a.Driver.(CountingDriver); !counting {
		ls = l.shared.listerFor(l.base, a.Driver)
		defer ls.release()
	}
	if err := l.create(ctx, a, n, ls); err != nil {
		return err
	}
	err := l.wait(ctx, a, n, ls)
	if err == nil && a.Still != nil {
		err = a.Still()
	}
	if err != nil {
		l.giveUp(ctx, n)
		return err
	}
	return nil
}

// giveUp deletes the node of a try that failed, or that was never to be
// held (a guard's), and stops its revocation watcher.
func (l *Lock) giveUp(ctx context.Context, n *node) {
	if n.stopRevoke != nil {
		n.stopRevoke()
	}
	l.deleteNode(ctx, n.path)
}

// Participants returns the full paths of every child of the base, sorted
// as d sorts them; a missing base has none.
func (l *Lock) Participants(ctx context.Context, d Driver) ([]string, error) {
	sorted, err := l.listSorted(ctx, d)
	if err != nil {
		return nil, err
	}
	for i, c := range sorted {
		sorted[i] = framework.JoinPath(l.base, c)
	}
	return sorted, nil
}
