package acquire

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
)

// cleanupTimeout bounds how long a failed or cancelled acquire, or a
// release, waits in the foreground for its node's delete. The delete is
// guaranteed: if it has not completed by then it goes on in the background.
const cleanupTimeout = 5 * time.Second

// node is our node in a lock's queue while it waits, from its create until
// it holds (and becomes a Grant) or is given up. It lives on the acquiring
// goroutine's stack (a candidacy keeps one across its terms): a waiter
// allocates no grant, nor a context, while it waits.
//
// Whose the node is: the trust taken before the create vouches for one
// session (session) until it ends, so while it lives the node, created in
// between, is that session's, and no round trip is needed to know it. Only
// after an error state is the node's owner read (owner), as CURATOR-604
// needs.
type node struct {
	path, name string // the node's path (namespace stripped) and last segment

	trust   context.Context // the client's trust, taken before the create (or again before a verify)
	session int64           // the session trust vouched for then
	owner   int64           // the session the node belongs to, once read or carried over; 0: unknown (session, while trust lives)
	token   int64           // its czxid, once read (0: not yet)

	first      firstListing // the listing sent behind the create, if any; taken by the first look
	position   int          // its place in the queue at its first look, when anyone hears (Observer)
	stopRevoke func()       // nil unless revocable
}

// arm takes the client's trust now, for the looks that follow: before the
// create, and before a verify.
func (n *node) arm(c *framework.Client) { n.trust, n.session = c.Trust() }

// ownerID returns the session our node belongs to, as far as we know.
func (n *node) ownerID() int64 {
	if n.owner != 0 {
		return n.owner
	}
	return n.session
}

// trusted reports whether what we know of our node still holds without
// asking the server: no error state has come since its trust was taken,
// so the client's session has been alive and the same all along, and our
// node is that session's. (An ephemeral node of a live session goes only by
// an explicit delete, which the listing that grants us would show.)
func (n *node) trusted(c *framework.Client) bool {
	o := n.ownerID()
	return o != 0 && o == c.SessionID() && n.trust.Err() == nil
}

// create creates the node of an attempt (n): protected, under container
// parents, with the client's trust taken before the create, so that an
// error state at any point from then on is seen and a grant after one is
// verified again (see held). A container parent the server reaps meanwhile
// is made again by the client, and a protected create cleans up after
// itself: an error here is final.
//
// The first listing goes right behind the create
// (framework.Client.CreateAndList: one round trip for both), unless other
// waiters of this client share the lister, whose listing then serves: a
// counting driver's always (with the children watch, unless the client's
// shared one is live), anyone else's when it waits alone.
func (l *Lock) create(ctx context.Context, a *Attempt, n *node, ls *lister) error {
	n.arm(l.client)
	mode, protect, parents := framework.WithMode(a.Mode), framework.WithProtection(), framework.CreatingParentContainersIfNeeded()
	var path string
	var err error
	if ls != nil && ls.shared() {
		path, err = l.client.Create(ctx, a.Path, a.Data, mode, protect, parents)
	} else {
		path, err = l.createAndList(ctx, a, n, mode, protect, parents)
	}
	if err != nil {
		awaitCleanup(err)
		return err
	}
	n.path, n.name = path, path[len(l.base)+1:]
	n.token = a.Token
	if a.Revoked != nil {
		n.stopRevoke = l.watchRevocation(path, a.Revoked)
	}
	return nil
}

// createAndList creates the node with its first listing behind it, and
// keeps the listing for the node's first look (n.first).
func (l *Lock) createAndList(ctx context.Context, a *Attempt, n *node, opts ...framework.CreateOption) (string, error) {
	_, counting := a.Driver.(CountingDriver)
	k := watchKey{l.base, true}
	var live *Watch
	if counting {
		if live = l.shared.liveWatch(k); live == nil {
			opts = append(opts, framework.WatchingParent())
		}
	}
	listed, err := l.client.CreateAndList(ctx, a.Path, a.Data, opts...)
	if err != nil {
		if listed.Path != "" { // made, but not listed: ctx ended meanwhile
			l.deleteNode(ctx, listed.Path)
		}
		return "", err
	}
	n.first = firstListing{children: listed.Children, watch: live}
	if counting && live == nil {
		n.first.watch = l.shared.adoptWatch(k, listed.Watch)
	}
	return listed.Path, nil
}

// firstListing is the listing sent behind a node's create (createAndList),
// for its first look at the queue, and, for a counting driver, the
// children watch set before it.
type firstListing struct {
	children []string // our node among them: never empty when there is one
	watch    *Watch
}

// held completes an acquisition: at once if the node is trusted, otherwise
// by verify. The fencing token is read only when asked for (Grant.Token),
// so an uncontended acquire costs what Curator's does: a create and a
// listing.
func (l *Lock) held(ctx context.Context, n *node) error {
	if n.trusted(l.client) {
		return nil
	}
	return l.verify(ctx, n)
}

// verify makes sure the node we were granted is ours in this session
// (CURATOR-604: after a new session, the old session's node may still be
// listed until the server removes it) and takes its czxid as the fencing
// token. The trust is taken anew before the check, so no error state after
// it can go unnoticed.
func (l *Lock) verify(ctx context.Context, n *node) error {
	n.arm(l.client)
	ok, stat, err := l.client.Exists(ctx, n.path)
	if err == nil && (!ok || stat.EphemeralOwner != n.session) {
		err = ErrVanished
	}
	if err != nil {
		return err
	}
	n.owner = stat.EphemeralOwner
	if n.token == 0 {
		n.token = stat.Czxid
	}
	return nil
}

// deleteNode deletes a node of a failed attempt, with a context of its own:
// the caller's may be the reason the attempt failed.
func (l *Lock) deleteNode(ctx context.Context, path string) {
	dctx, cancel := CleanupContext(ctx)
	defer cancel()
	if err := l.client.Delete(dctx, path, framework.Guaranteed()); err != nil && !errors.Is(err, zk.ErrNoNode) {
		l.client.Logger().Info("lock node delete goes on in the background", zap.String("path", path), zap.Error(err))
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

// CleanupContext is the context for deleting what a failed or cancelled
// call made, or for releasing after one: not cancelled with ctx (which may
// be why it failed), bounded by a few seconds.
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
