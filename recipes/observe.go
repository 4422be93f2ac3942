package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
	"github.com/gocurator/curator/state"
)

// LeaderView is what an observer of an election (ObserveLeaderLatch,
// ObserveLeaderSelector) sees of its leader.
type LeaderView struct {
	// Leader is the leading candidate, with IsLeader set; the zero
	// Participant while no candidate stands (or none has been read yet).
	Leader Participant
	// Node is the path of the leader's node, "" when there is none. A
	// candidate that leads again after its term ended leads with another
	// node: a new Node with the same Leader.ID is a new term.
	Node string
	// At is when a server showed this view: the time of the read that found
	// it (zero before any). While the view is not Stale, the observer's
	// watch stands for it after At too; once Stale, nothing vouches for it
	// after At.
	At time.Time
	// Stale reports that the view may be out of date: the client is not
	// connected (SUSPENDED, or LOST and not yet in a new session), or the
	// observer could not read the election (Err). It is the last view read,
	// at At. A fresh view (Stale false) follows when a read succeeds again,
	// whether the leader changed or not.
	Stale bool
	// Err is why the observer could not read the election, for a Stale
	// view; nil otherwise. A view whose Err wraps framework.ErrClosed (the
	// client closed) is the last one: the channel is closed after it.
	Err error
}

// ObserveLeaderLatch follows the leader of the LeaderLatch election at
// path, for a process that does not stand in it: Go and Java Curator
// candidates alike. It is etcd's Election.Observe; Curator has only
// LeaderLatch.getLeader, which reads once (Leader here). The views come on
// the channel returned: the first once the client has read the election
// (while it is not connected yet, a Stale view of no leader, with a zero
// At, comes first), then one each time the leader changes (another node leads, or none does),
// each time the view goes stale (the client's connection SUSPENDED or
// LOST: the last view, marked Stale), and each time it is fresh again.
//
// The channel holds the latest view only: a view not yet received when a
// newer one comes is replaced by it. A slow reader skips leaders that came
// and went meanwhile but always gets the latest, and the observer never
// waits for its reader. The channel is closed when ctx ends, or after a
// view whose Err wraps framework.ErrClosed when the client closes. A read
// that fails otherwise gives a Stale view with its Err, and is tried again
// a second later, or at the next connection state.
//
// The observer watches the leader's node only (as each candidate watches
// the one ahead: a candidate that joins or leaves behind the leader wakes
// no observer), and, while no candidate stands, the election's children.
// Its watches are the client's shared ones, which its lock waiters use
// too: one per node, whoever waits on it. go-zookeeper cannot remove a
// watch, so one whose observers have all gone stays set, with a goroutine
// to collect its event, until its node changes or the client closes; the
// observer's own goroutine ends with ctx.
//
// A nil ctx or client is an error wrapping framework.ErrInvalidArgument, a closed client
// one wrapping framework.ErrClosed, a bad path one that unwraps to
// zk.ErrInvalidPath.
func ObserveLeaderLatch(ctx context.Context, client *framework.Client, path string) (<-chan LeaderView, error) {
	return observeLeader(ctx, client, path, locktree.LatchName)
}

// ObserveLeaderSelector follows the leader of the LeaderSelector election
// at path, as ObserveLeaderLatch does a latch's. A selector's election is an
// InterProcessMutex's tree, so it follows the holder of the mutex at path
// too (its ID is the holder's lock data).
func ObserveLeaderSelector(ctx context.Context, client *framework.Client, path string) (<-chan LeaderView, error) {
	return observeLeader(ctx, client, path, locktree.MutexName)
}

func observeLeader(ctx context.Context, client *framework.Client, path, lockName string) (<-chan LeaderView, error) {
	if err := checkContext(ctx); err != nil {
		return nil, errs.Errorf("observe the leader of %s: %w", path, err)
	}
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	o := &leaderObserver{client: client, base: path, driver: lockNameDriver(lockName, 1),
		out: make(chan LeaderView, 1), wake: make(chan struct{}, 1)}
	go o.run(ctx)
	return o.out, nil
}

// leaderObserver is one observation of an election's leader: its goroutine
// (run), and the client's state listener that wakes it.
type leaderObserver struct {
	client *framework.Client
	base   string
	driver standardDriver
	out    chan LeaderView // the latest view only (push)
	wake   chan struct{}   // a connection state came

	mu         sync.Mutex
	cancelRead context.CancelFunc // ends the read under way; nil when none
}

// StateChanged ends the read under way when the connection is no longer
// connected (the view is stale: the reader says so at once, instead of
// waiting for the read's retries), and wakes the observer. It runs on the
// client's listener goroutine; it only cancels and signals.
func (o *leaderObserver) StateChanged(s state.ConnectionState) {
	if !s.IsConnected() {
		o.mu.Lock()
		if o.cancelRead != nil {
			o.cancelRead()
		}
		o.mu.Unlock()
	}
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// push makes v the view on the channel, replacing one not yet received.
// The observer is the channel's only sender, so the send never waits.
func (o *leaderObserver) push(v LeaderView) {
	select {
	case <-o.out:
	default:
	}
	o.out <- v
}

// run is the observer's goroutine: read the leader and watch for its
// change, tell each view that differs from the last told, until ctx ends
// or the client closes.
func (o *leaderObserver) run(ctx context.Context) {
	defer close(o.out)
	defer o.client.AddListener(o)()
	var last LeaderView
	told := false
	tell := func(v LeaderView) {
		if !told || v.Node != last.Node || v.Leader != last.Leader || v.Stale != last.Stale || !sameError(v.Err, last.Err) {
			o.push(v)
		}
		last, told = v, true
	}
	stale := func(err error) LeaderView {
		v := last
		v.Stale, v.Err = true, err
		return v
	}
	for ctx.Err() == nil {
		trust, _ := o.client.Trust() // ends at Close (and at error states)
		if o.client.IsClosed() {
			tell(stale(errs.Errorf("observe the leader of %s: %w", o.base, framework.ErrClosed)))
			return
		}
		rctx, endRead := o.beginRead(ctx)
		if !o.client.State().IsConnected() { // checked after beginRead: a later change cancels rctx
			endRead()
			tell(stale(nil))
			o.wait(ctx, trust, nil, nil)
			continue
		}
		v, w, err := o.look(rctx)
		endRead()
		switch {
		case err == nil:
			tell(v)
			o.wait(ctx, trust, w, nil)
		case ctx.Err() != nil:
			return
		case rctx.Err() != nil:
			// a state other than connected ended the read: look at it again
		case errors.Is(err, framework.ErrClosed):
			tell(stale(errs.Errorf("observe the leader of %s: %w", o.base, err)))
			return
		default:
			tell(stale(errs.Errorf("observe the leader of %s: %w", o.base, err)))
			retry := time.NewTimer(latchRetryWait) // as a latch waits after a failure its retry policy gave up on
			o.wait(ctx, trust, nil, retry.C)
			retry.Stop()
		}
	}
}

// beginRead returns the context of a read, which StateChanged ends when
// the connection is no longer connected, and the function that ends it.
func (o *leaderObserver) beginRead(ctx context.Context) (context.Context, func()) {
	rctx, cancel := context.WithCancel(ctx)
	o.mu.Lock()
	o.cancelRead = cancel
	o.mu.Unlock()
	return rctx, func() {
		o.mu.Lock()
		o.cancelRead = nil
		o.mu.Unlock()
		cancel()
	}
}

// wait waits for what calls for another look: w's event (the leader's node
// changed, or, with no leader, the election's children), a connection
// state, the trust's end (Close), retry, or ctx's end.
func (o *leaderObserver) wait(ctx context.Context, trust context.Context, w *acquire.Watch, retry <-chan time.Time) {
	var events <-chan zk.Event
	if w != nil {
		events = w.Events()
		w.Enter()
		defer w.Leave()
	}
	select {
	case ev, ok := <-events:
		w.Take(ev, ok)
	case <-o.wake:
	case <-trust.Done():
	case <-retry:
	case <-ctx.Done():
	}
}

// look reads the election's leader (Curator's getLeader: the first
// candidate in queue order whose node is still there) and returns it with
// the watch that fires when it may change: the leader's node's, or, while
// no candidate stands, the election's children's. Each watch is set before
// the read it guards, so no change after the read goes unseen.
func (o *leaderObserver) look(ctx context.Context) (LeaderView, *acquire.Watch, error) {
	for {
		children, _, err := o.client.Children(ctx, o.base)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return LeaderView{}, nil, err
		}
		for _, name := range o.driver.Sort(children) {
			node := framework.JoinPath(o.base, name)
			w, gone, err := acquire.WatchData(ctx, o.client, node)
			if err != nil {
				return LeaderView{}, nil, err
			}
			if gone {
				continue
			}
			data, _, err := o.client.GetData(ctx, node)
			if errors.Is(err, zk.ErrNoNode) {
				continue // gone since the watch was set, which fires for it
			}
			if err != nil {
				return LeaderView{}, nil, err
			}
			return LeaderView{Leader: Participant{ID: string(data), IsLeader: true}, Node: node, At: time.Now()}, w, nil
		}
		w, listing, err := acquire.WatchChildren(ctx, o.client, o.base)
		if err != nil {
			return LeaderView{}, nil, err
		}
		if listing == nil { // a watch set before this call: list after it
			if listing, _, err = o.client.Children(ctx, o.base); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return LeaderView{}, nil, err
			}
		}
		if len(listing) == 0 {
			return LeaderView{At: time.Now()}, w, nil
		}
		// a candidate came since the first listing: look again
	}
}

// sameError reports whether a and b are both nil, or say the same.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Error() == b.Error()
}
