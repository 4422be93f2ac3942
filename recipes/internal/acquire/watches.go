package acquire

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
)

// Watch is one of a client's shared watches. The waiters of one client
// share their watches: one ZooKeeper watch per watched node (or children
// list) per client, whichever waiters, attempts and observers wait on it. go-zookeeper cannot remove a watch, so a watch that
// each waiter set for itself would stay registered after its waiter gave up
// (its context ended), until the node changed: a process that tries a
// long-held lock with a short timeout, all day, would grow without bound.
// Curator keeps one Watcher per lock for the same reason.
//
// A shared watch is set by a goroutine of its own, with a context of its
// own (a waiter that gives up while it is being set leaves nothing behind
// either). Its event comes on go-zookeeper's channel, which go-zookeeper
// closes once it has sent the one event: every waiter waits on that
// channel itself, and whoever receives the event takes it (Take: records
// it, forgets the watch, closes fired); the others find the channel closed
// and read the event once fired is closed. Waiters that come while it is
// live use it as it is: a watch set before a waiter's listing fires for
// any change after that listing, which is all the waiter needs.
//
// While no waiter waits on it, a collector does: a goroutine that takes
// the event when it comes, so that a watch all of whose waiters gave up is
// forgotten when it fires, as go-zookeeper forgets its own registration.
// The goroutine that set the watch collects until the first waiter comes,
// unless the waiter that asked for it claimed it (claimData): that one
// counts as waiting from the start, until it waits on the watch or lets it
// go (Leave), so the setter ends once it is set. The last waiter to stop
// waiting (having gone back to list, or given up) starts a new collector
// unless the event has been taken. So a queue of waiters costs no goroutine
// per watch, and a watch nobody waits on costs one, until its node changes.
//
// A Watch is small, for there is one per waiter of a queue (on the node
// ahead of it): its ready channel goes once it is set, its result is
// kept only when there is one to tell (an error, a listing), its event
// only as a type, and a channel to wait for the one that took the event is
// made only by a receiver that must wait for it. It has no mutex of its
// own (its state is guarded by its owner's watchesMu), and so takes 80
// bytes, not 96: the size of much of a waiter's set-up garbage
// (go-zookeeper's decoded replies, the create's call), whose spans a Watch
// among them would keep in use.
type Watch struct {
	owner *clientShared
	path  string // its key's path (key)
	// ready is closed once the watch is set, or failed (result), and then
	// dropped: read it under the owner's watchesMu (nil: set).
	ready chan struct{}
	// result is why the watch could not be set, or the listing that set a
	// children watch; nil when there is neither. Read after ready.
	result *watchResult
	// events is go-zookeeper's channel of the watch: its one event, then
	// closed. Set before ready is closed; receive from it only to take.
	events <-chan zk.Event

	// What follows is guarded by the owner's watchesMu.
	waiting  int32         // waiters waiting on events now (Enter, Leave), and the claim of the one that asked for it (claimData)
	evType   zk.EventType  // the event's type, once taken
	children bool          // its key's kind (key)
	taken    bool          // the event has been taken (Take)
	isSet    bool          // events is set: a collector may run
	relieve  chan struct{} // closed to end the collector; nil when none runs
	fired    chan struct{} // closed once the event is taken, for a receiver that waits for that; nil until one does
}

// key is what w is shared by.
func (w *Watch) key() watchKey { return watchKey{w.path, w.children} }

// watchResult is what there is to tell of a watch's set beside its events.
type watchResult struct {
	err error // why it could not be set
	// late reports that it could not be set within setWatchTimeout (err
	// says so too): a waiter whose own context lives asks again.
	late bool
	// children is the listing that set a children watch: it was begun
	// after the waiter that asked for the watch asked, so that waiter may
	// use it (and only that one).
	children []string
}

// watchKey is what a watch is shared by, among the client's watches: one
// path (as the client's callers see it), one kind.
type watchKey struct {
	path     string
	children bool
}

// setWatchTimeout bounds how long a shared watch's goroutine tries to set
// it: at least this long, at most half as long again (setContext); the
// waiters honour their own contexts meanwhile. (A variable for the tests
// only.)
var setWatchTimeout = 30 * time.Second

// setContext returns the context a shared watch is set under: one that
// ends no sooner than setWatchTimeout from now, and no later than half as
// long again. The watches set meanwhile share it, so that a queue of
// thousands of waiters does not make a context, a timer and a channel for
// each (garbage left among the waiters' live objects).
func (s *clientShared) setContext() context.Context {
	now := time.Now()
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if s.setCtx == nil || s.setEnd.Sub(now) < setWatchTimeout {
		// The one before is left to end at its own deadline: the watches
		// being set under it keep their bound.
		if s.setCancel != nil && s.setCtx.Err() != nil {
			s.setCancel()
		}
		s.setEnd = now.Add(setWatchTimeout + setWatchTimeout/2)
		s.setCtx, s.setCancel = context.WithDeadline(context.Background(), s.setEnd)
	}
	return s.setCtx
}

// WatchData returns client's shared data watch on path, set by the call
// that made it: gone reports that the node is not there (no watch is set,
// and none is needed: it cannot come back, its name is unique).
func WatchData(ctx context.Context, client *framework.Client, path string) (w *Watch, gone bool, err error) {
	return sharedOf(client).watchData(ctx, path)
}

// WatchChildren returns client's shared children watch on path, and the
// listing that set it if this call asked for it (nil otherwise: the caller
// lists itself, after this returns). A missing path is no error: the
// listing and the watch then wait for it to be made.
func WatchChildren(ctx context.Context, client *framework.Client, path string) (w *Watch, listing []string, err error) {
	return sharedOf(client).watchChildren(ctx, path)
}

func (s *clientShared) watchData(ctx context.Context, path string) (w *Watch, gone bool, err error) {
	w, gone, _, err = s.claimData(ctx, path, false)
	return w, gone, err
}

// claimData is watchData for a waiter that will wait on the watch: if
// claim and this call sets the watch, the caller counts as waiting on it
// from now (claimed), so that no collector is started for it; the caller
// must then either wait on it without an Enter of its own (its Leave ends
// the claim) or give the claim up with Leave.
func (s *clientShared) claimData(ctx context.Context, path string, claim bool) (w *Watch, gone, claimed bool, err error) {
	w, _, claimed, err = s.watchOf(ctx, watchKey{path, false}, claim)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, true, false, nil
	}
	return w, false, claimed, err
}

func (s *clientShared) watchChildren(ctx context.Context, path string) (w *Watch, listing []string, err error) {
	w, listing, _, err = s.watchOf(ctx, watchKey{path, true}, false)
	return w, listing, err
}

// watchOf returns the live watch of k, or sets one, waiting for it as long
// as ctx allows (a watch that could not be set in setWatchTimeout is asked
// for again while ctx lives). The listing is the one that set a children
// watch this call asked for, else nil. claimed reports that the watch
// returned was set by this call, claimed for the caller (see claimData).
func (s *clientShared) watchOf(ctx context.Context, k watchKey, claim bool) (_ *Watch, _ []string, claimed bool, _ error) {
	for {
		s.watchesMu.Lock()
		w := s.watches[k]
		mine := w == nil
		if mine {
			w = &Watch{owner: s, path: k.path, children: k.children, ready: make(chan struct{})}
			if claim {
				w.waiting = 1 // before its setter can look
			}
			s.watches[k] = w
			go w.run()
		}
		ready := w.ready
		s.watchesMu.Unlock()
		claimed := mine && claim
		if ready != nil {
			select {
			case <-ready:
			case <-ctx.Done():
				if claimed {
					w.Leave()
				}
				return nil, nil, false, ctx.Err()
			}
		}
		r := w.result
		if claimed && r != nil && r.err != nil {
			w.Leave() // its collector takes the event at once
		}
		switch {
		case r == nil:
			return w, nil, claimed, nil
		case r.late && ctx.Err() == nil:
			w.forget()
			continue
		case r.err != nil:
			return nil, nil, false, r.err
		case mine:
			return w, r.children, claimed, nil
		}
		return w, nil, false, nil
	}
}

// liveWatch returns the watch of k if it is set and has not fired, or nil.
func (s *clientShared) liveWatch(k watchKey) *Watch {
	s.watchesMu.Lock()
	w := s.watches[k]
	defer s.watchesMu.Unlock()
	if w == nil || w.ready != nil || w.result != nil && w.result.err != nil || w.taken {
		return nil
	}
	return w
}

// adoptWatch makes a watch its caller set itself (events, from a call that
// set a watch of k's kind on k's path) the shared watch of k, unless
// another is there already; either way it returns a watch that fires for
// any change after the call that set events. (A second watch set meanwhile,
// by a race, still has its event awaited, and so forgotten, once it comes.)
func (s *clientShared) adoptWatch(k watchKey, events <-chan zk.Event) *Watch {
	w := &Watch{owner: s, path: k.path, children: k.children, events: events, relieve: make(chan struct{}), isSet: true}
	relieve := w.relieve
	s.watchesMu.Lock()
	if s.watches[k] == nil {
		s.watches[k] = w
	}
	s.watchesMu.Unlock()
	go w.collect(relieve)
	return w
}

// run sets the watch, then collects its event until a waiter comes.
func (w *Watch) run() {
	ctx := w.owner.setContext()
	var events <-chan zk.Event
	var children []string
	var err error
	c := w.owner.client
	if w.children {
		children, _, events, err = c.ChildrenW(ctx, w.path)
		if errors.Is(err, zk.ErrNoNode) {
			_, _, events, err = c.ExistsW(ctx, w.path) // fires when the path is made
		}
	} else {
		_, _, events, err = c.GetDataW(ctx, w.path)
	}
	if err != nil || children != nil {
		w.result = &watchResult{err: err, late: err != nil && ctx.Err() != nil, children: children}
	}
	if err != nil {
		events = nil
	}
	if relieve := w.set(events); relieve != nil {
		w.collect(relieve)
	}
}

// closedEvents is an events channel that never sends, for a watch that was
// not set (nil events): its first receiver takes it at once.
var closedEvents = func() chan zk.Event {
	ch := make(chan zk.Event)
	close(ch)
	return ch
}()

// set makes w ready with go-zookeeper's events (nil: none will come),
// with a collector to come (w.collect(relieve)) until a waiter enters
// unless one waits, or has claimed it, already (relieve nil), and drops
// its ready channel.
func (w *Watch) set(events <-chan zk.Event) (relieve chan struct{}) {
	if events == nil {
		events = closedEvents
	}
	w.events = events
	s := w.owner
	s.watchesMu.Lock()
	defer s.watchesMu.Unlock()
	w.isSet = true
	if w.waiting == 0 {
		relieve = make(chan struct{})
		w.relieve = relieve
	}
	close(w.ready)
	w.ready = nil
	return relieve
}

// collect takes the event when it comes, unless relieve is closed first
// (a waiter has come, which will take it).
func (w *Watch) collect(relieve <-chan struct{}) {
	select {
	case ev, ok := <-w.events:
		w.Take(ev, ok)
	case <-relieve:
	}
}

// Enter tells w that a waiter is about to wait on its events (nil: no
// watch); the collector, if one runs, may end.
func (w *Watch) Enter() {
	if w == nil {
		return
	}
	s := w.owner
	s.watchesMu.Lock()
	w.waiting++
	if w.relieve != nil {
		close(w.relieve)
		w.relieve = nil
	}
	s.watchesMu.Unlock()
}

// Leave tells w that a waiter stopped waiting on its events (or gave its
// claim up); the last one to leave starts a collector unless the event has
// been taken, or the watch is not set yet (its setter then collects).
func (w *Watch) Leave() {
	if w == nil {
		return
	}
	s := w.owner
	s.watchesMu.Lock()
	defer s.watchesMu.Unlock()
	w.waiting--
	if w.waiting == 0 && w.isSet && w.relieve == nil && !w.taken {
		w.relieve = make(chan struct{})
		go w.collect(w.relieve)
	}
}

// Take records the event a receive from w.Events() got, and tells every
// waiter: ok, the one event (the receiver records it, forgets the watch and
// closes fired, if a receiver made it); !ok, the channel found closed by a
// receiver after the one that got the event, which waits until that one
// has recorded it. go-zookeeper sends a watch's one event before it closes
// the channel (internal/zkconn's assumption 8), so that one exists; a watch
// that was not set (closedEvents) is told by whoever finds it closed first.
// It returns the event's type.
func (w *Watch) Take(ev zk.Event, ok bool) zk.EventType {
	s := w.owner
	s.watchesMu.Lock()
	if w.taken {
		t := w.evType
		s.watchesMu.Unlock()
		return t
	}
	if !ok && w.events != closedEvents {
		if w.fired == nil {
			w.fired = make(chan struct{})
		}
		fired := w.fired
		s.watchesMu.Unlock()
		<-fired
		s.watchesMu.Lock()
		defer s.watchesMu.Unlock()
		return w.evType
	}
	w.taken, w.evType = true, ev.Type
	fired := w.fired
	w.forgetLocked()
	s.watchesMu.Unlock()
	if fired != nil {
		close(fired)
	}
	return ev.Type
}

// forget takes w out of the shared watches, unless another has taken its
// place.
func (w *Watch) forget() {
	s := w.owner
	s.watchesMu.Lock()
	defer s.watchesMu.Unlock()
	w.forgetLocked()
}

// forgetLocked is forget, with the owner's watchesMu held.
func (w *Watch) forgetLocked() {
	s := w.owner
	if k := w.key(); s.watches[k] == w {
		delete(s.watches, k)
	}
}

// Events returns go-zookeeper's channel of the watch: receive from it only
// between Enter and Leave, and give what it got to Take.
func (w *Watch) Events() <-chan zk.Event { return w.events }

// liveWatches returns how many shared watches of the client are set or
// being set, for the tests.
func (s *clientShared) liveWatches() int {
	s.watchesMu.Lock()
	defer s.watchesMu.Unlock()
	return len(s.watches)
}
