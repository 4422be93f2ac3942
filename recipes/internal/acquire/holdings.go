package acquire

import (
	"context"
	"runtime"
	"sync"
	"weak"
)

// holdings are the grants of one lock value (its Lock) held and not yet
// ended: locks and leases (not latch terms). They are what the end of a
// stretch of the client's trust settles as lost (Grant.lost: told, and a
// grant lost at SUSPENDED has its node deleted once the servers could have
// let it go), and what Lock.AnyHeld (InterProcessMutex's
// IsAcquiredInThisProcess) looks through. They belong to the lock value, as Curator's threadData
// belongs to its InterProcessMutex: nothing outside the value refers to
// them but the one context.AfterFunc that follows the current stretch,
// armed by the first grant held in it, on the client's own trust context.
// So an acquisition costs a map insert, not a registration of its own. The
// follower holds them weakly, and is stopped once they are collected: a
// lock value the program no longer refers to (one built per key, say) is
// nobody's to keep while the client goes on, nor is a client once closed.
// (A grant held is reachable from its owner, and so are they.)
type holdings struct {
	mu        sync.Mutex
	grants    map[*Grant]struct{}
	following context.Context // the trust whose end is followed, or nil
	unfollow  runtime.Cleanup // stops following it once the holdings are collected
}

// add holds g, and follows the end of the trust g came from. The trust
// followed is replaced only once it has ended (its follower has run, or
// runs): one stretch of the client's trust lives at a time, so a grant of
// another stretch held while the followed one lives (an older stretch's,
// held just after a newer one's) came from a stretch that has ended. That
// grant is settled by a follower of its own, which runs at once and which
// nothing needs to stop; the followed stretch keeps its follower, and the
// clean-up that stops it when the holdings are collected.
func (h *holdings) add(g *Grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.grants == nil {
		h.grants = map[*Grant]struct{}{}
	}
	h.grants[g] = struct{}{}
	if h.following == g.end.trust {
		return
	}
	if h.following != nil && h.following.Err() == nil {
		h.follow(g.end.trust) // ended: it runs at once
		return
	}
	stop := h.follow(g.end.trust)
	h.unfollow.Stop() // the trust before has ended: its follower has run, or runs
	h.following, h.unfollow = g.end.trust, runtime.AddCleanup(h, func(stop func() bool) { stop() }, stop)
}

// follow arms the follower of trust's end, which holds the holdings weakly,
// and returns the function that stops it.
func (h *holdings) follow(trust context.Context) (stop func() bool) {
	held := weak.Make(h)
	return context.AfterFunc(trust, func() {
		if h := held.Value(); h != nil {
			h.trustEnded(trust)
		}
	})
}

// forget forgets g: it has ended.
func (h *holdings) forget(g *Grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.grants, g)
}

// trustEnded settles the grants that came from trust, which has just
// ended, as lost.
func (h *holdings) trustEnded(trust context.Context) {
	h.mu.Lock()
	var lost []*Grant
	for g := range h.grants {
		if g.end.trust == trust {
			lost = append(lost, g)
		}
	}
	if h.following == trust {
		h.following = nil
	}
	h.mu.Unlock()
	cause := context.Cause(trust) // not each grant's: its context may not have been cancelled yet
	for _, g := range lost {
		g.lost(cause)
	}
}

// any reports whether a grant held here has not ended.
func (h *holdings) any() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for g := range h.grants {
		if g.holds() {
			return true
		}
	}
	return false
}

// has reports whether g is one of the holdings, for the tests.
func (h *holdings) has(g *Grant) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.grants[g]
	return ok
}
