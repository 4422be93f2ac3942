package acquire

import "context"

// waitPlan is what a waiter that a listing did not grant waits for.
type waitPlan struct {
	watch     string // the node whose deletion (or change) to wait for; "" for a counting driver
	handsOff  bool   // that deletion alone makes us the holder (see HandoffDriver)
	lookahead string // a node further ahead whose deletion is worth listing again for, or ""
}

// planWait applies the driver's hand-off and lookahead rules to a listing
// in which ourName waits on watch.
func planWait(d Driver, sorted []string, ourName, watch string) waitPlan {
	p := waitPlan{watch: watch}
	h, ok := d.(HandoffDriver)
	if !ok || watch == "" {
		return p
	}
	p.handsOff = h.HandsOff(sorted, ourName, watch)
	if !p.handsOff {
		p.lookahead = h.Lookahead(sorted, ourName, watch)
	}
	return p
}

// waits are a waiter's data watches (shared, getData: a missing node leaves
// no watch behind). The one on the node waited for is kept across listings
// while it has not fired: after a lookahead wake, that node is usually
// still there. No name of a listing is kept while the waiter waits (the
// name of the node kept is its watch's path's): one would keep the span it
// was decoded into, among thousands of names gone (a queue of 5,000
// waiters kept a span for each).
type waits struct {
	watched string // the node kept is on: the last segment of kept's path
	kept    *Watch // nil until set, or once this waiter took its event (if another took it, the next wait wakes at once)
	early   *Watch // the lookahead's, for one listing
}

// arm sets the watches p calls for; gone reports that one of their nodes is
// gone already.
func (w *waits) arm(ctx context.Context, l *Lock, p waitPlan) (gone bool, err error) {
	w.early = nil
	if p.watch == "" {
		return false, nil
	}
	if p.watch != w.watched || w.kept == nil {
		// Set before the listing that decides on it or after: either way
		// a deletion after that listing fires it.
		w.watched, w.kept = "", nil
		if w.kept, gone, err = l.shared.watchData(ctx, l.joinPath(p.watch)); gone || err != nil {
			return gone, err
		}
		w.watched = w.kept.key.path[len(l.base)+1:]
	}
	if p.lookahead != "" {
		if w.early, gone, err = l.shared.watchData(ctx, l.joinPath(p.lookahead)); gone {
			return true, nil // perhaps second in line now
		}
	}
	return false, err
}
