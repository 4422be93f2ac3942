package recipes

import (
	"context"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
)

// A prelisting is a counting waiter's first listing (the semaphore's look
// at its leases), sent right behind its node's create instead of after the
// create's reply: framework.WhenSent calls it once the create request is
// written, and the server handles the session's requests in order. The
// requests, and their order, are Curator's (create, then getChildren with a
// watch); only the wait between them goes, a round trip on the path every
// lease takes while it holds the semaphore's internal lock.
//
// It is used only if it shows our node: then it was handled after our
// create, as Curator's listing is. Otherwise (the create was retried, the
// connection changed, the listing failed), the waiter lists again as
// usual; a prelisting that is not used ends on its own, its watch left to
// the next change of the leases.
type prelisting struct {
	changed  <-chan struct{} // the driver's, taken before the create: no change after it goes unseen
	started  atomic.Bool
	done     chan struct{} // closed when what follows is set
	children []string
	watch    <-chan zk.Event
	err      error
}

// newPrelisting returns the prelisting of a create of d's waiter, and the
// create option that sends it.
func newPrelisting(ctx context.Context, li *lockInternals, d countingDriver) (*prelisting, framework.CreateOption) {
	p := &prelisting{changed: d.changed(), done: make(chan struct{})}
	return p, framework.WhenSent(func() {
		if p.started.CompareAndSwap(false, true) {
			go p.list(ctx, li) // the connection's writer must not wait
		}
	})
}

func (p *prelisting) list(ctx context.Context, li *lockInternals) {
	defer close(p.done)
	p.children, _, p.watch, p.err = li.client.ChildrenW(ctx, li.base)
}

// take returns the prelisting as n's listing, if it was sent and shows n's
// node; ok is false otherwise (the caller lists as usual), and err is set
// if ctx ended meanwhile.
func (p *prelisting) take(ctx context.Context, n *acquisition) (l listing, children []string, ok bool, err error) {
	if !p.started.Load() {
		return l, nil, false, nil
	}
	select {
	case <-p.done:
	case <-ctx.Done():
		return l, nil, false, ctx.Err()
	}
	if p.err != nil || locktree.IndexOf(p.children, n.name) < 0 {
		return l, nil, false, nil
	}
	return listing{children: p.watch, changed: p.changed}, p.children, true, nil
}
