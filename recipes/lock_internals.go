package recipes

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/retry"
)

// cleanupTimeout bounds how long a failed or cancelled acquire, or a
// release, waits in the foreground for its node's delete. The delete is
// guaranteed: if it has not completed by then it goes on in the background.
const cleanupTimeout = 5 * time.Second

// lockInternals is Curator's LockInternals: the acquire loop every lock
// recipe shares, on one base path. (The loop itself, Curator's
// internalLockLoop, is wait, in wait.go; the rules it applies are the
// drivers', in driver.go.)
type lockInternals struct {
	client *framework.Client
	base   string
	// holdings are the grants of this lock value held now (holdings.go).
	holdings holdings
	// listHook, when set (by tests only), hears what a waiter of this
	// value does in its lister (see lister.list), and when it takes the
	// listing sent behind its create (createAndList).
	listHook func(ev listEvent, ctx context.Context, n uint64)
}

// attempt says what one acquire creates and how it decides.
type attempt struct {
	recipe  string               // the recipe kind its events name
	path    string               // the node's path before protection: the base and e.g. "lock-"
	mode    framework.CreateMode // EphemeralSequential, or Ephemeral for a downgrade read node
	data    []byte               // nil: the client's default data
	driver  driver
	try     bool   // give up with ErrLocked instead of waiting
	revoked func() // revocation listener, or nil
	// still, when set, says once our node holds whether the grant may still
	// be given (nil) or not (why): a downgrade's, whether the write lock it
	// takes the place of still holds. It runs before the grant is told.
	still func() error
}

// acquire creates a node and waits until the driver says it holds the lock,
// ctx ends, or an error occurs. If the node vanishes (its session expired),
// a new node is created as far as the client's retry policy allows, as
// Curator's attemptLock does. On any failure our node is deleted
// (guaranteed) before acquire returns. The grant it returns holds (its loss
// is cleaned up: grant.hold).
func (li *lockInternals) acquire(ctx context.Context, a attempt) (*grant, error) {
	o := li.observeAcquire(ctx, a.recipe, li.base)
	g, err := retryVanished(ctx, li.client, li.base, func() (*grant, error) { return li.attemptOnce(ctx, a) })
	o.done(g, err) // before hold publishes g: its fields are set by then
	if err == nil {
		g.hold()
	}
	return g, err
}

// retryVanished runs once again, as far as the client's retry policy allows,
// while it fails because our node vanished (errNodeVanished): Curator's
// NoNode retry (attemptLock; the semaphore's RETRY_DUE_TO_MISSING_NODE).
// It is the retry loop of that one cause; connection loss is retried inside
// each call, by the client. The first run is made here, so that an attempt
// that does not meet a vanished node builds no retry machinery.
func retryVanished(ctx context.Context, client *framework.Client, base string, once func() (*grant, error)) (*grant, error) {
	start := time.Now()
	got, err := once()
	if !errors.Is(err, errNodeVanished) {
		return got, err
	}
	err = retry.Do(ctx, client.RetryPolicy(), func(context.Context) error {
		var err error
		got, err = once()
		return err
	}, retry.FirstAttempt(start, err), retry.RetryIf(vanished),
		retry.OnRetry(func(error, int, time.Duration) {
			client.Logger().Info("lock node vanished; creating a new one", zap.String("lock", base))
		}))
	return got, err
}

// vanished reports whether err says our node vanished.
func vanished(err error) bool { return errors.Is(err, errNodeVanished) }

// attemptOnce creates a node and waits on it; on failure it deletes it.
func (li *lockInternals) attemptOnce(ctx context.Context, a attempt) (*grant, error) {
	var ls *lister // nil for a counting driver, which lists the children itself
	if _, counting := a.driver.(countingDriver); !counting {
		ls = listerFor(li, a.driver)
		defer ls.release()
	}
	g, err := li.create(ctx, a, ls)
	if err != nil {
		return nil, err
	}
	err = li.wait(ctx, a, g, ls)
	if err == nil && a.still != nil {
		err = a.still()
	}
	if err != nil {
		li.giveUp(ctx, g)
		return nil, err
	}
	return g, nil
}

// giveUp ends a grant that its owner never got or no longer wants, and
// deletes its node (guaranteed).
func (li *lockInternals) giveUp(ctx context.Context, g *grant) {
	g.release()
	li.deleteNode(ctx, g.path)
}

// create creates the node of an attempt: protected, under container
// parents, with its grant's context made before the create, so that an
// error state at any point from then on is seen and a grant after one is
// verified again (see grantHeld). A container parent the server reaps
// meanwhile is made again by the client, and a protected create cleans up
// after itself: an error here is final.
//
// The first listing goes right behind the create
// (framework.Client.CreateAndList: one round trip for both), unless other
// waiters of this client share the lister, whose listing then serves: a
// counting driver's always (with the children watch, unless the client's
// shared one is live), anyone else's when it waits alone.
func (li *lockInternals) create(ctx context.Context, a attempt, ls *lister) (*grant, error) {
	g := newGrant(li)
	mode, protect, parents := framework.WithMode(a.mode), framework.WithProtection(), framework.CreatingParentContainersIfNeeded()
	var path string
	var err error
	if ls != nil && ls.shared() {
		path, err = li.client.Create(ctx, a.path, a.data, mode, protect, parents)
	} else {
		path, err = li.createAndList(ctx, a, g, mode, protect, parents)
	}
	if err != nil {
		g.release()
		awaitCleanup(err)
		return nil, err
	}
	g.path, g.name = path, path[len(li.base)+1:]
	if a.revoked != nil {
		g.stopRevoke = li.watchRevocation(a.recipe, path, a.revoked)
	}
	return g, nil
}

// createAndList creates the node with its first listing behind it, and
// keeps the listing for the grant's first look (g.first).
func (li *lockInternals) createAndList(ctx context.Context, a attempt, g *grant, opts ...framework.CreateOption) (string, error) {
	_, counting := a.driver.(countingDriver)
	k := watchKey{li.client, li.base, true}
	var live *sharedWatch
	if counting {
		if live = liveWatch(k); live == nil {
			opts = append(opts, framework.WatchingParent())
		}
	}
	l, err := li.client.CreateAndList(ctx, a.path, a.data, opts...)
	if err != nil {
		if l.Path != "" { // made, but not listed: ctx ended meanwhile
			li.deleteNode(ctx, l.Path)
		}
		return "", err
	}
	g.first = firstListing{children: l.Children, watch: live}
	if counting && live == nil {
		g.first.watch = adoptWatch(k, l.Watch)
	}
	return l.Path, nil
}

// trusted reports whether what we know of our node still holds without
// asking the server: no error state has come since the grant's context was
// made, so the client's session has been alive and the same all along, and
// our node is that session's. (An ephemeral node of a live session goes only
// by an explicit delete, which the listing that grants us would show.)
func (li *lockInternals) trusted(g *grant) bool {
	return g.owner() != 0 && g.owner() == li.client.SessionID() && g.ctx.Err() == nil
}

// grantHeld completes an acquisition: at once if the node is trusted,
// otherwise by verify. The fencing token is read only when asked for
// (token), so an uncontended acquire costs what Curator's does: a create and
// a listing.
func (li *lockInternals) grantHeld(ctx context.Context, g *grant) error {
	if li.trusted(g) {
		return nil
	}
	return li.verify(ctx, g)
}

// token returns our node's czxid, the fencing token: read from the server
// the first time it is asked for, unless verify has read it already. The
// grant must still hold: once it ended, the answer is its err (wrapping
// ErrLockLost, or ErrNotHeld after release); a node found gone ends it.
func (li *lockInternals) token(ctx context.Context, g *grant) (int64, error) {
	if err := g.err(); err != nil {
		return 0, err
	}
	if t := g.token.Load(); t != 0 {
		return t, nil
	}
	ok, stat, err := li.client.Exists(ctx, g.path)
	if err != nil {
		return 0, err
	}
	if !ok || stat.EphemeralOwner != g.owner() {
		g.lose()
	}
	if err := g.err(); err != nil { // lost, or an error state came while we asked
		return 0, err
	}
	g.token.Store(stat.Czxid)
	return stat.Czxid, nil
}

// verify makes sure the node we were granted is ours in this session
// (CURATOR-604: after a new session, the old session's node may still be
// listed until the server removes it) and takes its czxid as the fencing
// token. The grant's context is made anew from the trust before the check,
// so no error state after it can go unnoticed.
func (li *lockInternals) verify(ctx context.Context, g *grant) error {
	g.arm()
	ok, stat, err := li.client.Exists(ctx, g.path)
	if err == nil && (!ok || stat.EphemeralOwner != g.session) {
		err = errNodeVanished
	}
	if err != nil {
		return err
	}
	g.own = stat
	g.token.Store(stat.Czxid)
	return nil
}

// deleteGranted deletes the node of a grant that has ended (guaranteed: if
// the delete fails, it goes on in the background). A node that is already
// gone is no error.
func (li *lockInternals) deleteGranted(ctx context.Context, g *grant) error {
	err := li.client.Delete(ctx, g.path, framework.Guaranteed())
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

// awaitCleanup waits, at most cleanupTimeout, until whatever the failed
// create of err may have made is deleted (framework.CleanupDone), as
// deleteNode waits for the delete of a node known: a cancelled or failed
// attempt returns once its node is gone, so that a Close that waited for it
// leaves none behind. The delete goes on in the background past the bound.
func awaitCleanup(err error) {
	if over := framework.CleanupDone(err); over != nil {
		t := time.NewTimer(cleanupTimeout)
		defer t.Stop()
		select {
		case <-over:
		case <-t.C:
		}
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
