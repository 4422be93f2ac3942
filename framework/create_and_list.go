package framework

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/zkconn"
)

// Listing is what CreateAndList returns: the node it created, and its
// parent's children as a listing that shows it.
type Listing struct {
	// Path is the created node's path, as Create returns it.
	Path string
	// Children are the parent's children, in server order. Path's last
	// segment is among them, unless the listing behind the create was
	// dropped and the one made after it no longer shows the node (another
	// client deleted it meanwhile; see CreateAndList).
	Children []string
	// Watch gets the parent's next children event, when the create was
	// made WatchingParent (nil otherwise): a one-shot channel set with the
	// listing, as ChildrenW's.
	Watch <-chan zk.Event

	pipelined bool // Children are the listing sent behind the create (the tests check it)
}

// CreateAndList creates the node at path, as Create does with the same
// options, and lists its parent's children in the same round trip. The
// listing's request is written right behind the create's (the client hears
// when the create is written), and the server handles a session's requests
// in order, so the listing shows the new node, and its reply comes with the
// create's. A lock recipe acquires so with one round trip where the
// textbook recipe (create, then list once the create has returned) needs
// two; the requests on the wire, and their order, are the same.
//
// The listing sent behind the create is used only if it shows the new
// node. It is dropped if it does not (the create was retried, or the
// connection changed between the two requests, or the parent had to be
// made first) or if it failed; the parent is then listed again, after the
// create, as the textbook recipe does. (A children watch that a dropped
// listing set stays until it fires, as every go-zookeeper watch.) That
// second listing is what the servers hold by then, which need not show the
// node: another client may have deleted it, or the parent (a missing parent
// lists as no children, with the error of the listing); and if the second
// listing fails (ctx ended, retries exhausted), the error is returned with
// the node's Path and no Children.
func (c *Client) CreateAndList(ctx context.Context, path string, data []byte, opts ...CreateOption) (Listing, error) {
	if !c.usable() {
		return Listing{}, opError("create", path, errUnusable)
	}
	if err := ValidatePath(path); err != nil {
		return Listing{}, opError("create", path, err)
	}
	o := createOptionsOf(opts)
	parent, _ := SplitPath(path)
	p := &pipelined{c: c}
	p.job = callJob[nodeResult]{a: listChildren(o.parentWatch, &c.watches), arg: c.ns.fix(parent)}
	o.sent = p
	created, err := c.create(ctx, path, data, o)
	if err != nil {
		p.drop()
		return Listing{}, err
	}
	_, name := SplitPath(created)
	l, ok := p.take(ctx, name)
	if ok {
		l.Path = created
		return l, nil
	}
	l = Listing{Path: created}
	if err := ctx.Err(); err != nil {
		return l, opError("get children", parent, err)
	}
	if o.parentWatch {
		l.Children, _, l.Watch, err = c.ChildrenW(ctx, parent)
	} else {
		l.Children, _, err = c.Children(ctx, parent)
	}
	return l, err
}

// pipelined is CreateAndList's listing sent behind its create: one
// allocation, its call included.
//
// Written runs on go-zookeeper's writer, and may come late: after
// CreateAndList has given up (its context ended, or the create failed,
// while the hook was being called), or a second time. Who owns the
// listing's runner is settled on r: Written swaps its runner in for nil,
// take and drop swap in gone; whoever finds the other's value there gives
// the runner up. Only the first Written starts a listing (written), so
// that p.job has one writer.
type pipelined struct {
	c       *Client
	job     callJob[nodeResult]    // the listing: its attempt and the parent's server path, set before the create
	written atomic.Bool            // Written has been called: a later call starts nothing
	r       atomic.Pointer[runner] // the runner of the listing once it is sent; gone once CreateAndList is done with it
}

// gone is what pipelined.r holds once CreateAndList has taken the listing
// or given it up: a listing started later is dropped at once.
var gone = new(runner)

// Written starts the listing on a runner as the create is written on z:
// the runner's request is queued behind the create's. It runs on
// go-zookeeper's writer, so it only hands the call over (a WriteHook).
func (p *pipelined) Written(z *zkconn.Conn) {
	if !p.written.CompareAndSwap(false, true) {
		return // a create written again: the first one's listing stands
	}
	p.job.z = z
	r := p.c.runners.start(&p.job)
	if r != nil && !p.r.CompareAndSwap(nil, r) {
		p.c.runners.drop(r, &p.job) // CreateAndList is done: nobody reads it
	}
}

// take returns the listing sent behind the create, if there was one and it
// shows name; it waits for it as long as ctx allows. No listing is sent
// once it has been called.
func (p *pipelined) take(ctx context.Context, name string) (Listing, bool) {
	r := p.r.Swap(gone)
	if r == nil {
		return Listing{}, false
	}
	if ok, _ := p.c.runners.finish(ctx, r, &p.job); !ok {
		return Listing{}, false
	}
	if p.job.err != nil || !slices.Contains(p.job.v.children, name) {
		return Listing{}, false
	}
	return Listing{Children: p.job.v.children, Watch: p.job.v.watch, pipelined: true}, true
}

// drop gives the listing up, if one was sent; no listing is sent once it
// has been called.
func (p *pipelined) drop() {
	if r := p.r.Swap(gone); r != nil {
		p.c.runners.drop(r, &p.job)
	}
}

// listChildren is the attempt of a listing, with a watch or without; one
// attempt, on the connection the create was written on: a listing that
// fails is dropped, not retried. The watch is told to the client's
// persistent watches (it replaces one on the same path).
func listChildren(watch bool, watches *watchRegistry) attempter[nodeResult] {
	if watch {
		return attemptFunc[nodeResult](func(z *zkconn.Conn, p string) (nodeResult, error) {
			names, stat, w, err := z.ChildrenW(p)
			watches.touched(p, true)
			return nodeResult{children: names, stat: stat, watch: w}, err
		})
	}
	return attemptFunc[nodeResult](func(z *zkconn.Conn, p string) (nodeResult, error) {
		names, stat, err := z.Children(p)
		return nodeResult{children: names, stat: stat}, err
	})
}
