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
//
// A watch this waiter set is claimed (claimData): the waiter counts as
// waiting on it from the start, so its setter does not stay to collect it;
// the claim turns into the waiter's wait on it (await), or is given up
// when the waiter lets the watch go (drop).
type waits struct {
	watched string // the node kept is on: the last segment of kept's path
	kept    *Watch // nil until set, or once this waiter took its event (if another took it, the next wait wakes at once)
	early   *Watch // the lookahead's, for one listing
	// keptClaim, earlyClaim: kept, early is claimed, not yet waited on.
	keptClaim, earlyClaim bool
}

// drop lets go of the watches, giving up their claims.
func (w *waits) drop() {
	w.dropKept()
	w.dropEarly()
}

func (w *waits) dropKept() {
	if w.keptClaim {
		w.kept.Leave()
	}
	w.watched, w.kept, w.keptClaim = "", nil, false
}

func (w *waits) dropEarly() {
	if w.earlyClaim {
		w.early.Leave()
	}
	w.early, w.earlyClaim = nil, false
}

// arm sets the watches p calls for; gone reports that one of their nodes is
// gone already.
func (w *waits) arm(ctx context.Context, l *Lock, p waitPlan) (gone bool, err error) {
	w.dropEarly()
	if p.watch == "" {
		return false, nil
	}
	if p.watch != w.watched || w.kept == nil {
		// Set before the listing that decides on it or after: either way
		// a deletion after that listing fires it.
		w.dropKept()
		if w.kept, gone, w.keptClaim, err = l.shared.claimData(ctx, l.watchPath(p.watch), true); gone || err != nil {
			return gone, err
		}
		w.watched = w.kept.path[len(l.base)+1:]
	}
	if p.lookahead != "" {
		if w.early, gone, w.earlyClaim, err = l.shared.claimData(ctx, l.watchPath(p.lookahead), true); gone {
			return true, nil // perhaps second in line now
		}
	}
	return false, err
}

// watchPath returns the path of the base's child name, for its data watch:
// the key of the client's shared watch on it when there is one (which the
// waiters of a queue share: each one's lookahead is the node the waiter
// ahead of it waits for), so that finding it allocates nothing; else a path
// of its own.
func (l *Lock) watchPath(name string) string {
	const most = 256
	if base := l.base; base != "/" && len(base)+1+len(name) <= most {
		var buf [most]byte
		b := append(append(append(buf[:0], base...), '/'), name...)
		s := l.shared
		s.watchesMu.Lock()
		w := s.watches[watchKey{string(b), false}] // no allocation: the compiler looks up the bytes
		s.watchesMu.Unlock()
		if w != nil {
			return w.path
		}
	}
	return l.joinPath(name)
}
