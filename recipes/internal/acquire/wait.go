package acquire

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
)

// wait is Curator's internalLockLoop, in three parts: list the queue (and,
// after an error state, read our own node alongside); arm the watches the
// driver's rules call for (planWait); wait for one of them, for our node's
// session to end, or for ctx. Any event means "look again", but for a
// hand-off: the deletion of the one node that kept us from holding. It
// returns nil once n holds.
func (l *Lock) wait(ctx context.Context, a *Attempt, n *node, ls *lister) error {
	var w waits
	defer w.drop()
	for look := 0; ; look++ {
		q, err := l.list(ctx, a, n, ls)
		if err != nil {
			return err
		}
		held, watch, err := a.Driver.Check(q.sorted, n.name)
		if err != nil {
			return err
		}
		if look == 0 && a.Observer != nil && l.client.Observed() { // for the events alone
			n.position = max(locktree.IndexOf(q.sorted, n.name), 0)
		}
		if held {
			return l.held(ctx, n)
		}
		if a.Try {
			return errs.Errorf("%w: %s", ErrLocked, l.base)
		}
		p := planWait(a.Driver, q.sorted, n.name, watch)
		q.sorted = nil // not kept while we wait: the next look lists anew
		gone, err := w.arm(ctx, l, p)
		if err != nil {
			return err
		}
		if gone {
			continue // a node we would watch is gone already: look again
		}
		granted, err := l.await(ctx, n, &w, q, p.handsOff)
		if granted || err != nil {
			return err
		}
	}
}

// listing is one look at the queue.
type listing struct {
	sorted []string // the base's children, as the driver sorts them; shared with other waiters: read-only
	// For a counting driver: the children watch set before the listing,
	// and the channel that closes when the driver's own limit changes.
	children *Watch
	changed  <-chan struct{}
}

// list lists the base's children: the first time, the listing sent behind
// our create, if there is one; else through ls, the listing it shares with
// the client's other waiters on the base, unless the driver is a counting
// one (nil ls), which watches the children (a shared watch set before its
// listing). After an error state (our node is not trusted), our node's
// owner is read alongside, so that a grant needs no round trip of its own
// to verify it; our node found gone is ErrVanished.
func (l *Lock) list(ctx context.Context, a *Attempt, n *node, ls *lister) (listing, error) {
	var own chan nodeStat
	if n.owner == 0 && !n.trusted(l.client) {
		own = make(chan nodeStat, 1)
		go l.readOwner(ctx, n.path, own)
	}
	var q listing
	var err error
	counting, isCounting := a.Driver.(CountingDriver)
	switch first := n.first; {
	case first.children != nil:
		n.first = firstListing{}
		l.hear(listBehindCreate, ctx, 0)
		if isCounting {
			q.changed = counting.Changed()
			q.children = first.watch
		}
		q.sorted = a.Driver.Sort(first.children)
	case isCounting:
		q, err = l.listCounting(ctx, counting)
	default:
		q.sorted, err = ls.list(ctx, l, a.Driver)
	}
	if own != nil {
		r := <-own
		if r.err == nil && !r.ok {
			return q, ErrVanished
		}
		if r.err == nil {
			n.owner = r.owner
		} // after an error: read again with the next listing
	}
	return q, err
}

// nodeStat is what readOwner read of our node.
type nodeStat struct {
	ok    bool
	owner int64
	err   error
}

// readOwner reads the owner session of our node at path, into own.
func (l *Lock) readOwner(ctx context.Context, path string, own chan<- nodeStat) {
	ok, stat, err := l.client.Exists(ctx, path)
	r := nodeStat{ok: ok, err: err}
	if ok && err == nil {
		r.owner = stat.EphemeralOwner
	}
	own <- r
}

// listCounting lists the children for a counting driver, with the shared
// children watch set before the listing: the listing that set the watch,
// or one of its own after it.
func (l *Lock) listCounting(ctx context.Context, d CountingDriver) (q listing, err error) {
	q.changed = d.Changed() // before listing: no change between the two goes unseen
	var children []string
	if q.children, children, err = l.shared.watchChildren(ctx, l.base); err != nil {
		return q, err
	}
	if children == nil {
		children, _, err = l.client.Children(ctx, l.base)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
	}
	q.sorted = d.Sort(children)
	return q, err
}

// await waits for what calls for another look: the watched node (or, for a
// counting driver, the children or the limit) changing, the lookahead's
// node going, or ctx ending. granted reports a hand-off: the watched node
// deleted when that alone makes us the holder (handsOff).
//
// Our node's session ending wakes it too, with no case of its own (a
// blocked case costs a waiter about 100 bytes): the watches it waits on were
// set in our node's session, checked here, and every watch of a session
// fires when it ends, whether the servers expired it, the client gave it up
// or the client closed (framework.Client, and internal/zkconn's assumption
// 8).
func (l *Lock) await(ctx context.Context, n *node, w *waits, q listing, handsOff bool) (granted bool, err error) {
	// A call retried across a session expiry sets its watch in the new
	// session, where nothing will wake us for the old session's node: once
	// the client is in a session other than our node's, or its session has
	// ended, the node is gone (or going) and waiting on it would be forever.
	session, ended := l.client.Session()
	if o := n.ownerID(); o != 0 && o != session || isClosed(ended) {
		return false, ErrVanished
	}
	fired := w.kept
	if q.children != nil {
		fired = q.children
	}
	var early <-chan zk.Event
	if w.early != nil {
		early = w.early.events
	}
	// A watch this waiter claimed counts it as waiting already (waits).
	if q.children != nil || !w.keptClaim {
		fired.Enter()
	}
	if !w.earlyClaim {
		w.early.Enter()
	}
	if q.children == nil {
		w.keptClaim = false
	}
	w.earlyClaim = false
	defer fired.Leave()
	defer w.early.Leave()
	select {
	case ev, ok := <-fired.events:
		t := fired.Take(ev, ok)
		if q.children == nil {
			w.kept = nil // fired: a watch is good for one event
		}
		if handsOff && q.children == nil && t == zk.EventNodeDeleted && n.trusted(l.client) {
			return true, nil
		}
	case ev, ok := <-early: // list again, keeping the watch on the node we wait for
		w.early.Take(ev, ok)
	case <-q.changed:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return false, nil
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// joinPath is the path of the child name of the base.
func (l *Lock) joinPath(name string) string { return framework.JoinPath(l.base, name) }
