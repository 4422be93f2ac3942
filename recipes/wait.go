package recipes

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
// hand-off: the deletion of the one node that kept us from holding.
func (li *lockInternals) wait(ctx context.Context, a attempt, g *grant, ls *lister) error {
	var w waits
	for look := 0; ; look++ {
		l, err := li.list(ctx, a, g, ls)
		if err != nil {
			return err
		}
		held, watch, err := a.driver.check(l.sorted, g.name)
		if err != nil {
			return err
		}
		if look == 0 && li.client.Observed() { // for the events alone
			g.position = max(locktree.IndexOf(l.sorted, g.name), 0)
		}
		if held {
			return li.grantHeld(ctx, g)
		}
		if a.try {
			return errs.Errorf("%w: %s", ErrLocked, li.base)
		}
		p := planWait(a.driver, l.sorted, g.name, watch)
		gone, err := w.arm(ctx, li, p)
		if err != nil {
			return err
		}
		if gone {
			continue // a node we would watch is gone already: look again
		}
		granted, err := li.await(ctx, g, &w, l, p)
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
	children *sharedWatch
	changed  <-chan struct{}
}

// list lists the base's children: the first time, the listing sent behind
// our create, if there is one; else through ls, the listing it shares with
// the client's other waiters on the base, unless the driver is a counting
// one (nil ls), which watches the children (a shared watch set before its
// listing). After an error state (our node is not trusted), our node's
// Stat (owner session, czxid) is read alongside, so that a grant needs no
// round trip of its own to verify it; our node found gone is
// errNodeVanished.
func (li *lockInternals) list(ctx context.Context, a attempt, g *grant, ls *lister) (listing, error) {
	var own chan nodeStat
	if g.own == nil && !li.trusted(g) {
		own = make(chan nodeStat, 1)
		go func() {
			ok, stat, err := li.client.Exists(ctx, g.path)
			own <- nodeStat{ok, stat, err}
		}()
	}
	var l listing
	var err error
	counting, isCounting := a.driver.(countingDriver)
	switch first := g.first; {
	case first.children != nil:
		g.first = firstListing{}
		li.hear(listBehindCreate, ctx, 0)
		if isCounting {
			l.changed = counting.changed()
			l.children = first.watch
		}
		l.sorted = a.driver.sort(first.children)
	case isCounting:
		l, err = li.listCounting(ctx, counting)
	default:
		l.sorted, err = ls.list(ctx, li, a.driver)
	}
	if own != nil {
		r := <-own
		if r.err == nil && !r.ok {
			return l, errNodeVanished
		}
		g.own = r.stat // nil after an error: read again with the next listing
	}
	return l, err
}

// listCounting lists the children for a counting driver, with the shared
// children watch set before the listing: the listing that set the watch,
// or one of its own after it.
func (li *lockInternals) listCounting(ctx context.Context, d countingDriver) (l listing, err error) {
	l.changed = d.changed() // before listing: no change between the two goes unseen
	var children []string
	if l.children, children, err = watchChildren(ctx, li.client, li.base); err != nil {
		return l, err
	}
	if children == nil {
		children, _, err = li.client.Children(ctx, li.base)
		if errors.Is(err, zk.ErrNoNode) {
			err = nil
		}
	}
	l.sorted = d.sort(children)
	return l, err
}

type nodeStat struct {
	ok   bool
	stat *zk.Stat
	err  error
}

// waitPlan is what a waiter that a listing did not grant waits for.
type waitPlan struct {
	watch     string // the node whose deletion (or change) to wait for; "" for a counting driver
	handsOff  bool   // that deletion alone makes us the holder (see handoffDriver)
	lookahead string // a node further ahead whose deletion is worth listing again for, or ""
}

// planWait applies the driver's hand-off and lookahead rules to a listing
// in which ourName waits on watch.
func planWait(d driver, sorted []string, ourName, watch string) waitPlan {
	p := waitPlan{watch: watch}
	h, ok := d.(handoffDriver)
	if !ok || watch == "" {
		return p
	}
	p.handsOff = h.handsOff(sorted, ourName, watch)
	if !p.handsOff {
		p.lookahead = h.lookahead(sorted, ourName, watch)
	}
	return p
}

// waits are a waiter's data watches (shared, getData: a missing node leaves
// no watch behind). The one on the node waited for is kept across listings
// while it has not fired: after a lookahead wake, that node is usually
// still there.
type waits struct {
	watched string       // the node kept is on
	kept    *sharedWatch // nil until set, or once this waiter took its event (if another took it, the next wait wakes at once)
	early   *sharedWatch // the lookahead's, for one listing
}

// arm sets the watches p calls for; gone reports that one of their nodes is
// gone already.
func (w *waits) arm(ctx context.Context, li *lockInternals, p waitPlan) (gone bool, err error) {
	w.early = nil
	if p.watch == "" {
		return false, nil
	}
	if p.watch != w.watched || w.kept == nil {
		// Set before the listing that decides on it or after: either way
		// a deletion after that listing fires it.
		w.watched, w.kept = "", nil
		if w.kept, gone, err = watchData(ctx, li.client, framework.JoinPath(li.base, p.watch)); gone || err != nil {
			return gone, err
		}
		w.watched = p.watch
	}
	if p.lookahead != "" {
		if w.early, gone, err = watchData(ctx, li.client, framework.JoinPath(li.base, p.lookahead)); gone {
			return true, nil // perhaps second in line now
		}
	}
	return false, err
}

// await waits for what calls for another look: the watched node (or, for a
// counting driver, the children or the limit) changing, the lookahead's
// node going, or our node's session ending (a session the client gave up
// leaves watches that nothing will fire). granted reports a hand-off: the
// watched node deleted when that alone makes us the holder.
func (li *lockInternals) await(ctx context.Context, g *grant, w *waits, l listing, p waitPlan) (granted bool, err error) {
	// A call retried across a session expiry sets its watch in the new
	// session, where nothing will wake us for the old session's node: once
	// the client is in a session other than our node's, or its session has
	// ended, the node is gone (or going) and waiting on it would be forever.
	session, ended := li.client.Session()
	if o := g.owner(); o != 0 && o != session || isClosed(ended) {
		return false, errNodeVanished
	}
	fired := w.kept
	if l.children != nil {
		fired = l.children
	}
	var early <-chan zk.Event
	if w.early != nil {
		early = w.early.events
	}
	fired.enter()
	w.early.enter()
	defer fired.leave()
	defer w.early.leave()
	select {
	case <-ended:
	case ev, ok := <-fired.events:
		ev = fired.take(ev, ok)
		if l.children == nil {
			w.kept = nil // fired: a watch is good for one event
		}
		if p.handsOff && l.children == nil && ev.Type == zk.EventNodeDeleted && li.trusted(g) {
			return true, nil
		}
	case ev, ok := <-early: // list again, keeping the watch on the node we wait for
		w.early.take(ev, ok)
	case <-l.changed:
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
