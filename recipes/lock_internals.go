package recipes

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// cleanupTimeout bounds how long a failed or cancelled acquire, or a
// release, waits in the foreground for its node's delete. The delete is
// guaranteed: if it has not completed by then it goes on in the background.
const cleanupTimeout = 5 * time.Second

// driver is the recipe-specific part of the lock algorithm (Curator's
// LockInternalsDriver): how children sort, and whether our node holds the
// lock or which node to wait on.
type driver interface {
	sort(children []string) []string
	// check returns whether ourName holds the lock among the sorted
	// children, or else the name of the child to wait on. An error that
	// unwraps to errNodeVanished means ourName is not among them.
	check(sorted []string, ourName string) (held bool, watch string, err error)
}

// handoffDriver is a driver that can say, of the listing in which ourName
// waits on watch, whether the deletion of watch alone makes ourName the
// holder, so that the waiter holds the moment that node is deleted, without
// listing again (the round trip Curator pays at every hand-off).
//
// Why it is safe: sequence numbers only grow, so no sequential node can
// appear ahead of ours after we listed. The only lock node that can is
// non-sequential: the read node of a read-write downgrade, which takes the
// key of the downgrader's __WRIT__ node. So the hand-off is allowed only when
// the deleted node was the one node that could keep us from holding and
// cannot be replaced by a node that would: a mutex (or a writer) whose only
// node ahead is not a write node; a reader whose only writer ahead is the
// one it watches (a downgrade read node does not block readers). A foreign
// non-sequential child created meanwhile is not seen; it is no participant,
// so no one else holds because of it. Our node cannot be gone unseen either:
// the hand-off also needs our node's owner to be the current session, with
// no error state since (an ephemeral node of a live session goes only by an
// explicit delete).
//
// lookahead names, for a waiter further back that watches watch, the node
// whose deletion is worth listing again for before watch goes: the node two
// ahead of a mutex waiter (or a writer whose predecessor is not a write
// node). When it goes, typically because our predecessor now holds, the
// waiter lists again while the predecessor holds, finds itself second in
// line, and so holds the moment the predecessor's node is deleted: the
// re-listing Curator does after every hand-off moves off the critical path.
// Each deletion then wakes at most two waiters: its successor and the one
// after; "" means no lookahead.
type handoffDriver interface {
	handsOff(sorted []string, ourName, watch string) bool
	lookahead(sorted []string, ourName, watch string) string
}

// countingDriver is a driver that decides on the children as a whole (the
// semaphore's lease count) rather than on one node ahead of ours: its
// waiter watches the base's children, and also wakes when changed's channel
// closes (its own limit changed). When check says neither held nor a node
// to watch, the waiter waits for one of those.
type countingDriver interface {
	driver
	changed() <-chan struct{}
}

// standardDriver is StandardLockInternalsDriver: hold when fewer than
// maxLeases nodes sort before ours; otherwise wait on the node maxLeases
// places ahead (for a mutex, the immediate predecessor: no herd). key is the
// sort key: SortKey with the lock name, or the read-write lock's double
// transformation for its write half.
type standardDriver struct {
	key       func(name string) string
	maxLeases int
}

// lockNameDriver is the standard driver sorting by SortKey with lockName.
func lockNameDriver(lockName string, maxLeases int) standardDriver {
	return standardDriver{key: func(s string) string { return SortKey(s, lockName) }, maxLeases: maxLeases}
}

func (d standardDriver) sort(children []string) []string { return sortBy(children, d.key) }

func (d standardDriver) check(sorted []string, ourName string) (bool, string, error) {
	i := indexOf(sorted, ourName)
	if i < 0 {
		return false, "", errNodeVanished
	}
	if i < d.maxLeases {
		return true, "", nil
	}
	return false, sorted[i-d.maxLeases], nil
}

func (d standardDriver) handsOff(sorted []string, ourName, watch string) bool {
	return d.maxLeases == 1 && indexOf(sorted, ourName) == 1 && !strings.Contains(watch, writeLockName)
}

func (d standardDriver) lookahead(sorted []string, ourName, watch string) string {
	i := indexOf(sorted, ourName)
	if d.maxLeases != 1 || i < 2 || sorted[i-1] != watch || strings.Contains(watch, writeLockName) {
		return ""
	}
	return sorted[i-2]
}

// lockInternals is Curator's LockInternals: the acquire loop every lock
// recipe shares, on one base path.
type lockInternals struct {
	client *framework.Client
	base   string
}

// attempt says what one acquire creates and how it decides.
type attempt struct {
	name    string               // node name before protection, e.g. "lock-"
	mode    framework.CreateMode // EphemeralSequential, or Ephemeral for a downgrade read node
	data    []byte               // nil: the client's default data
	driver  driver
	try     bool   // give up with ErrLocked instead of waiting
	revoked func() // revocation listener, or nil
}

// acquire creates a node and waits until the driver says it holds the lock,
// ctx ends, or an error occurs. If the node vanishes (its session expired),
// a new node is created as far as the client's retry policy allows, as
// Curator's attemptLock does. On any failure our node is deleted
// (guaranteed) before acquire returns.
func (li *lockInternals) acquire(ctx context.Context, a attempt) (*acquisition, error) {
	return retryVanished(ctx, li.client, li.base, func() (*acquisition, error) { return li.attemptOnce(ctx, a) })
}

// retryVanished runs once again, as far as the client's retry policy allows,
// while it fails because our node vanished (errNodeVanished): Curator's
// NoNode retry (attemptLock; the semaphore's RETRY_DUE_TO_MISSING_NODE).
// One retry count and one elapsed time cover every run.
func retryVanished(ctx context.Context, client *framework.Client, base string, once func() (*acquisition, error)) (*acquisition, error) {
	start := time.Now()
	for retries := 0; ; retries++ {
		n, err := once()
		if !errors.Is(err, errNodeVanished) {
			return n, err
		}
		wait, ok := client.RetryPolicy().AllowRetry(retries, time.Since(start))
		if !ok {
			return nil, err
		}
		client.Logger().Info("lock node vanished; creating a new one", zap.String("lock", base))
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func (li *lockInternals) attemptOnce(ctx context.Context, a attempt) (*acquisition, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Made before the create: an error state at any point from here on is
	// seen, and a grant after one is verified again (see grant).
	sig := li.client.NotifyErrorState()
	path, err := li.client.Create(ctx, framework.JoinPath(li.base, a.name), a.data,
		framework.WithMode(a.mode), framework.WithProtection(), framework.CreatingParentContainersIfNeeded())
	if err != nil {
		sig.Stop()
	}
	if errors.Is(err, zk.ErrNoNode) {
		// The server reaped a container parent between the client creating
		// the parents and creating our node: as if our node had vanished,
		// create again as far as the retry policy allows.
		return nil, errs.Errorf("%w: %w", errNodeVanished, err)
	}
	if err != nil {
		return nil, err // a protected create cleans up after itself
	}
	n := &acquisition{path: path, name: path[len(li.base)+1:], sig: sig}
	if a.revoked != nil {
		n.stopRevoke = li.watchRevocation(path, a.revoked)
	}
	if err := li.wait(ctx, a, n); err != nil {
		n.end()
		li.deleteNode(ctx, path)
		return nil, err
	}
	return n, nil
}

// wait is Curator's internalLockLoop: list, check, and wait on the node the
// driver names with a data watch (getData, never exists: a missing node
// leaves no watch behind). Any event on it means "look again". A counting
// driver (the semaphore's) lists with a child watch instead and waits on it
// and on its own limit changing, as InterProcessSemaphoreV2 does. The end
// of our node's session wakes the waiter too: a session the client gave up
// on (see framework.Client.Session) leaves watches that nothing will fire.
func (li *lockInternals) wait(ctx context.Context, a attempt, n *acquisition) error {
	counting, _ := a.driver.(countingDriver)
	handoff, _ := a.driver.(handoffDriver)
	// The watch on the node we wait for is kept across listings while it has
	// not fired: after a lookahead wake, that node is usually still there.
	var watched string
	var kept <-chan zk.Event
	for {
		var own chan nodeStat
		if n.own == nil && !li.trusted(n) {
			// After an error state: our node's Stat (owner session, czxid),
			// read alongside the listing, so that a grant needs no round trip
			// of its own to verify it.
			own = make(chan nodeStat, 1)
			go func() {
				ok, stat, err := li.client.Exists(ctx, n.path)
				own <- nodeStat{ok, stat, err}
			}()
		}
		var children []string
		var w, early <-chan zk.Event
		var changed <-chan struct{}
		var err error
		if counting != nil {
			changed = counting.changed() // before listing: no change between the two goes unseen
			children, _, w, err = li.client.ChildrenW(ctx, li.base)
		} else {
			children, _, err = li.client.Children(ctx, li.base)
		}
		if own != nil {
			r := <-own
			if r.err == nil && !r.ok {
				return errNodeVanished
			}
			n.own = r.stat // nil after an error: fetched again with the next listing
		}
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		sorted := a.driver.sort(children)
		held, watch, err := a.driver.check(sorted, n.name)
		if err != nil {
			return err
		}
		if held {
			return li.grant(ctx, n)
		}
		if a.try {
			return errs.Errorf("%w: %s", ErrLocked, li.base)
		}
		handsOff := false
		if watch != "" {
			handsOff = handoff != nil && handoff.handsOff(sorted, n.name, watch)
			if watch != watched || kept == nil {
				// Set before the listing that decides on it or after: either
				// way a deletion after that listing fires it.
				watched, kept = "", nil
				_, _, kept, err = li.client.GetDataW(ctx, framework.JoinPath(li.base, watch))
				if errors.Is(err, zk.ErrNoNode) {
					continue // gone already: look again
				}
				if err != nil {
					return err
				}
				watched = watch
			}
			w = kept
			if handoff != nil && !handsOff {
				if ahead := handoff.lookahead(sorted, n.name, watch); ahead != "" {
					_, _, early, err = li.client.GetDataW(ctx, framework.JoinPath(li.base, ahead))
					if errors.Is(err, zk.ErrNoNode) {
						continue // gone already: look again, perhaps second in line now
					}
					if err != nil {
						return err
					}
				}
			}
		}
		// A call retried across a session expiry sets its watch in the new
		// session, where nothing will wake us for the old session's node:
		// once the client is in a session other than our node's, or its
		// session has ended, the node is gone (or going) and waiting on it
		// would be forever.
		session, ended := li.client.Session()
		if o := n.owner(); o != 0 && o != session || isClosed(ended) {
			return errNodeVanished
		}
		select {
		case <-ended:
		case ev := <-w:
			kept = nil // fired: a watch is good for one event
			if handsOff && ev.Type == zk.EventNodeDeleted && li.trusted(n) {
				return nil
			}
		case <-early: // list again, keeping the watch on the node we wait for
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

type nodeStat struct {
	ok   bool
	stat *zk.Stat
	err  error
}

// trusted reports whether what we know of our node still holds without
// asking the server: no error state has come since the loss signal was
// armed, so the client's session has been alive and the same all along, and
// our node is that session's. (An ephemeral node of a live session goes only
// by an explicit delete, which the listing that grants us would show.)
func (li *lockInternals) trusted(n *acquisition) bool {
	return n.owner() != 0 && n.owner() == li.client.SessionID() && n.sig.Err() == nil
}

// grant completes an acquisition: at once if the node is trusted, otherwise
// by verify. The fencing token is read only when asked for (token), so an
// uncontended acquire costs what Curator's does: a create and a listing.
func (li *lockInternals) grant(ctx context.Context, n *acquisition) error {
	if li.trusted(n) {
		return nil
	}
	return li.verify(ctx, n)
}

// token returns our node's czxid, the fencing token: read from the server
// the first time it is asked for, unless verify has read it already. The
// grant must still hold: once it ended, the answer is its err (wrapping
// ErrLockLost, or ErrNotHeld after release); a node found gone ends it.
func (li *lockInternals) token(ctx context.Context, n *acquisition) (int64, error) {
	if err := n.err(); err != nil {
		return 0, err
	}
	if t := n.token.Load(); t != 0 {
		return t, nil
	}
	ok, stat, err := li.client.Exists(ctx, n.path)
	if err != nil {
		return 0, err
	}
	if !ok || stat.EphemeralOwner != n.owner() {
		n.lose()
	}
	if err := n.err(); err != nil { // lost, or an error state came while we asked
		return 0, err
	}
	n.token.Store(stat.Czxid)
	return stat.Czxid, nil
}

// verify makes sure the node we were granted is ours in this session
// (CURATOR-604: after a new session, the old session's node may still be
// listed until the server removes it) and takes its czxid as the fencing
// token. The grant's signal starts again before the check, so no error
// state after it can go unnoticed.
func (li *lockInternals) verify(ctx context.Context, n *acquisition) error {
	n.sig.Stop()
	n.sig = li.client.NotifyErrorState()
	ok, stat, err := li.client.Exists(ctx, n.path)
	if err == nil && (!ok || stat.EphemeralOwner != li.client.SessionID()) {
		err = errNodeVanished
	}
	if err != nil {
		return err
	}
	n.own = stat
	n.token.Store(stat.Czxid)
	return nil
}

// deleteGranted deletes the node of a grant that has ended (guaranteed: if
// the delete fails, it goes on in the background). A node that is already
// gone is no error.
func (li *lockInternals) deleteGranted(ctx context.Context, n *acquisition) error {
	err := li.client.Delete(ctx, n.path, framework.Guaranteed())
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// deleteNode deletes a node of a failed attempt, with a context of its own:
// the caller's may be the reason the attempt failed.
func (li *lockInternals) deleteNode(ctx context.Context, path string) {
	dctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := li.client.Delete(dctx, path, framework.Guaranteed()); err != nil && !errors.Is(err, zk.ErrNoNode) {
		li.client.Logger().Info("lock node delete goes on in the background", zap.String("path", path), zap.Error(err))
	}
}

// cleanupContext is the context for deleting what a failed or cancelled
// call made, or for releasing after one: not cancelled with ctx (which may
// be why it failed), bounded by cleanupTimeout.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

// participants returns the full paths of every child of the base, sorted as
// the driver sorts them.
func (li *lockInternals) participants(ctx context.Context, d driver) ([]string, error) {
	children, _, err := li.client.Children(ctx, li.base)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	sorted := d.sort(children)
	for i, c := range sorted {
		sorted[i] = framework.JoinPath(li.base, c)
	}
	return sorted, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
