package recipes

import (
	"context"
	"sync/atomic"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
)

// A prelisting is a counting waiter's first listing (the semaphore's look
// at its leases), sent right behind its node's create instead of after the
// create's reply: framework.WhenSent calls it once the create request is
// written, and the server handles the session's requests in order. The
// requests, and their order, are Curator's (create, then getChildren with a
// watch); only the wait between them goes, a round trip on the path every
// lease takes while it holds the semaphore's internal lock. (The watch is
// the client's shared one on the leases when it is live: the listing is
// then a plain one, behind a watch set before it.)
//
// It is used only if it shows our node: then it was handled after our
// create, as Curator's listing is. Otherwise (the create was retried, the
// connection changed, the listing failed), the waiter lists again as
// usual; a prelisting that is not used ends on its own, its watch shared
// with the next waiter.
type prelisting struct {
	started  atomic.Bool
	done     chan struct{} // closed when what follows is set
	children []string
	watch    *sharedWatch
	err      error
}

// newPrelisting returns the prelisting of a create of a counting waiter,
// and the create option that sends it.
func newPrelisting(ctx context.Context, li *lockInternals) (*prelisting, framework.CreateOption) {
	p := &prelisting{done: make(chan struct{})}
	return p, framework.WhenSent(func() {
		if p.started.CompareAndSwap(false, true) {
			go p.list(ctx, li) // the connection's writer must not wait
		}
	})
}

func (p *prelisting) list(ctx context.Context, li *lockInternals) {
	defer close(p.done)
	k := watchKey{li.client, li.base, true}
	if p.watch = liveWatch(k); p.watch != nil {
		p.children, _, p.err = li.client.Children(ctx, li.base)
		return
	}
	children, _, events, err := li.client.ChildrenW(ctx, li.base)
	if p.children, p.err = children, err; err == nil {
		p.watch = adoptWatch(k, events)
	}
}

// take returns the prelisting as g's listing, with its watch, if it was
// sent and shows g's node; ok is false otherwise (the caller lists as
// usual), and err is set if ctx ended meanwhile.
func (p *prelisting) take(ctx context.Context, g *grant) (watch *sharedWatch, children []string, ok bool, err error) {
	if !p.started.Load() {
		return nil, nil, false, nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return nil, nil, false, ctx.Err()
	}
	if p.err != nil || locktree.IndexOf(p.children, g.name) < 0 {
		return nil, nil, false, nil
	}
	return p.watch, p.children, true, nil
}
