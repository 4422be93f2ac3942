package recipes

import (
	"context"
	"errors"
	"sync"

	"github.com/gocurator/curator/framework"
)

// holdings are the grants held through one client and not yet released:
// locks and leases (not latch terms). They are what the end of a stretch of
// the client's trust cleans up after (grant.cleanUp: a grant lost at
// SUSPENDED has its node deleted once the servers could have let it go),
// and what InterProcessMutex.IsAcquiredInThisProcess looks through. One
// context.AfterFunc per client follows the current stretch, armed by the
// first grant held in it: an acquisition costs a map insert, not a
// registration of its own.
type holdings struct {
	mu        sync.Mutex
	grants    map[*grant]struct{}
	following context.Context // the trust whose end is followed, or nil
}

// heldBy maps a client to its holdings.
var heldBy sync.Map // *framework.Client -> *holdings

// holdingsOf returns client's holdings.
func holdingsOf(client *framework.Client) *holdings {
	if h, ok := heldBy.Load(client); ok {
		return h.(*holdings)
	}
	h, _ := heldBy.LoadOrStore(client, &holdings{grants: map[*grant]struct{}{}})
	return h.(*holdings)
}

// add holds g, and follows the end of the trust g came from.
func (h *holdings) add(g *grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.grants[g] = struct{}{}
	if h.following != g.trust {
		h.following = g.trust
		trust, client := g.trust, g.li.client
		context.AfterFunc(trust, func() { h.trustEnded(client, trust) })
	}
}

// remove forgets g (released). The holdings of a closed client go with its
// last grant.
func (h *holdings) remove(g *grant) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.grants, g)
	if len(h.grants) == 0 && g.li.client.IsClosed() {
		heldBy.Delete(g.li.client)
	}
}

// trustEnded cleans up after the grants that came from trust, which has
// just ended: they are all lost.
func (h *holdings) trustEnded(client *framework.Client, trust context.Context) {
	var se *framework.StateError
	stateEnded := errors.As(context.Cause(trust), &se)
	h.mu.Lock()
	var lost []*grant
	for g := range h.grants {
		if g.trust == trust {
			delete(h.grants, g)
			lost = append(lost, g)
		}
	}
	if h.following == trust {
		h.following = nil
	}
	if !stateEnded { // closed: nothing of the client's is left to clean up
		heldBy.Delete(client)
	}
	h.mu.Unlock()
	for _, g := range lost {
		if stateEnded {
			g.cleanUp(se)
		}
		g.ended(g.lostCause())
	}
}

// heldOn reports whether a grant of li's lock is held through its client
// and not lost.
func (h *holdings) heldOn(li *lockInternals) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for g := range h.grants {
		if g.li == li && g.err() == nil {
			return true
		}
	}
	return false
}
