package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
)

// The waiters of one client share their watches: one ZooKeeper watch per
// watched node (or children list) per client, whichever waiters and
// attempts wait on it. go-zookeeper cannot remove a watch, so a watch that
// each waiter set for itself would stay registered after its waiter gave up
// (its context ended), until the node changed: a process that tries a
// long-held lock with a short timeout, all day, would grow without bound.
// Curator keeps one Watcher per lock for the same reason.
//
// A shared watch is set by a goroutine of its own, with a context of its
// own (a waiter that gives up while it is being set leaves nothing behind
// either), which then waits for the watch's one event, tells every waiter
// (fired closes), and forgets it. Waiters that come while it is live use it
// as it is: a watch set before a waiter's listing fires for any change
// after that listing, which is all the waiter needs.
type sharedWatch struct {
	key   watchKey
	ready chan struct{} // closed once the watch is set, or failed (err)
	err   error         // why it could not be set; read after ready
	// late reports that it could not be set within setWatchTimeout (err
	// says so too): a waiter whose own context lives asks again.
	late bool
	// children is the listing that set a children watch: it was begun
	// after the waiter that asked for the watch asked, so that waiter may
	// use it (and only that one). Read after ready.
	children []string
	fired    chan struct{} // closed when the event has come
	ev       zk.Event      // the event; read after fired
}

// watchKey is what a watch is shared by: one client, one path (as the
// client's callers see it), one kind.
type watchKey struct {
	client   *framework.Client
	path     string
	children bool
}

// setWatchTimeout bounds how long a shared watch's goroutine tries to set
// it: the waiters honour their own contexts meanwhile. (A variable for the
// tests only.)
var setWatchTimeout = 30 * time.Second

var (
	watchesMu sync.Mutex
	watches   = map[watchKey]*sharedWatch{}
)

// watchData returns the shared data watch on path, set by the call that
// made it: gone reports that the node is not there (no watch is set, and
// none is needed: it cannot come back, its name is unique).
func watchData(ctx context.Context, client *framework.Client, path string) (w *sharedWatch, gone bool, err error) {
	w, _, err = sharedWatchOf(ctx, watchKey{client, path, false})
	if errors.Is(err, zk.ErrNoNode) {
		return nil, true, nil
	}
	return w, false, err
}

// watchChildren returns the shared children watch on path, and the
// listing that set it if this call asked for it (nil otherwise: the caller
// lists itself, after this returns). A missing path is no error: the
// listing and the watch then wait for it to be made.
func watchChildren(ctx context.Context, client *framework.Client, path string) (w *sharedWatch, listing []string, err error) {
	return sharedWatchOf(ctx, watchKey{client, path, true})
}

// sharedWatchOf returns the live watch of k, or sets one, waiting for it as
// long as ctx allows (a watch that could not be set in setWatchTimeout is
// asked for again while ctx lives). The listing is the one that set a
// children watch this call asked for, else nil.
func sharedWatchOf(ctx context.Context, k watchKey) (*sharedWatch, []string, error) {
	for {
		watchesMu.Lock()
		w := watches[k]
		mine := w == nil
		if mine {
			w = &sharedWatch{key: k, ready: make(chan struct{}), fired: make(chan struct{})}
			watches[k] = w
			go w.run()
		}
		watchesMu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		switch {
		case w.late && ctx.Err() == nil:
			w.forget()
			continue
		case w.err != nil:
			return nil, nil, w.err
		case mine:
			return w, w.children, nil
		}
		return w, nil, nil
	}
}

// liveWatch returns the watch of k if it is set and has not fired, or nil.
func liveWatch(k watchKey) *sharedWatch {
	watchesMu.Lock()
	w := watches[k]
	watchesMu.Unlock()
	if w == nil || !isClosed(w.ready) || w.err != nil || isClosed(w.fired) {
		return nil
	}
	return w
}

// adoptWatch makes a watch its caller set itself (events, from a call that
// set a watch of k's kind on k's path) the shared watch of k, unless
// another is there already; either way it returns a watch that fires for
// any change after the call that set events. (A second watch set meanwhile,
// by a race, still has its event awaited, and so forgotten, once it comes.)
func adoptWatch(k watchKey, events <-chan zk.Event) *sharedWatch {
	w := &sharedWatch{key: k, ready: make(chan struct{}), fired: make(chan struct{})}
	close(w.ready)
	watchesMu.Lock()
	if watches[k] == nil {
		watches[k] = w
	}
	watchesMu.Unlock()
	go w.await(events)
	return w
}

// run sets the watch, then waits for its event.
func (w *sharedWatch) run() {
	ctx, cancel := context.WithTimeout(context.Background(), setWatchTimeout)
	var events <-chan zk.Event
	c := w.key.client
	if w.key.children {
		var err error
		w.children, _, events, err = c.ChildrenW(ctx, w.key.path)
		if errors.Is(err, zk.ErrNoNode) {
			_, _, events, err = c.ExistsW(ctx, w.key.path) // fires when the path is made
		}
		w.err = err
	} else {
		_, _, events, w.err = c.GetDataW(ctx, w.key.path)
	}
	w.late = w.err != nil && ctx.Err() != nil
	cancel()
	close(w.ready)
	if w.err != nil {
		events = nil
	}
	w.await(events)
}

// await waits for the watch's event (none for a nil events), then forgets
// the watch and tells its waiters.
func (w *sharedWatch) await(events <-chan zk.Event) {
	if events != nil {
		w.ev = <-events
	}
	w.forget()
	close(w.fired)
}

// forget takes w out of the shared watches, unless another has taken its
// place.
func (w *sharedWatch) forget() {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	if watches[w.key] == w {
		delete(watches, w.key)
	}
}

// liveWatches returns how many shared watches are set or being set, for
// the tests.
func liveWatches() int {
	watchesMu.Lock()
	defer watchesMu.Unlock()
	return len(watches)
}
