package framework

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/zkconn"
)

// Persistent watches (ZooKeeper 3.6's addWatch), kept set across connections
// and sessions: Curator's PersistentWatcher. The watch itself goes through
// the door (zkconn.Conn.AddWatch); what is kept here is the client's
// registry of them, by server path, shared by every watcher of a path (the
// servers keep one watch per path and connection):
//
//   - the keeper, a goroutine of the client's started with the first
//     watcher, sets each path's watch again after every new connection
//     (told by the connection's first event, before any request is sent
//     on it)
//     (go-zookeeper sets only its own one-shot watches again) and after a
//     one-shot watch of the client's on that very path (which replaces
//     the persistent one on servers before 3.9), removes it when its last
//     watcher has gone (unless a one-shot watch of the client's on the path
//     has not fired: removeWatches would take that too, so the watch goes
//     with its connection), and then tells each watcher of the path "reset":
//     the watch stands from now on, and what changed before may have come
//     without an event;
//   - the events, heard on go-zookeeper's reader (zkconn's OnEvent), are
//     pushed to the queue of each watcher they concern, whose goroutine
//     calls its function: nothing of the watcher's runs on go-zookeeper's
//     goroutine or under a lock of the library's.

// WatchEvent is what a PersistentWatcher tells its function: a node event,
// a reset, or, last, why the watcher stopped.
type WatchEvent struct {
	// Type is what happened at Path: zk.EventNodeCreated,
	// zk.EventNodeDataChanged or zk.EventNodeDeleted of the watched node
	// (or, for a recursive watcher, of any node below it), or, for a watcher
	// that is not recursive, zk.EventNodeChildrenChanged of its node. Zero
	// for a reset or the last event.
	Type zk.EventType
	// Path is the node's path, as the caller sees it (the namespace
	// stripped).
	Path string
	// Reset reports that the watch has just been set on the servers, at
	// first or again on a new connection (or after a one-shot watch of the
	// client on the same path replaced it): it stands from now on, and a
	// change made before may have come without an event. Whoever keeps a
	// copy of what the watch covers reads it again.
	Reset bool
	// Lapsed reports that the watch no longer stands (after a Reset): the
	// connection it stood on is gone, or a one-shot watch on the same path
	// replaced it. Changes made from now until the next Reset may come
	// without an event.
	Lapsed bool
	// Err, when not nil, is why the watcher stopped: an error wrapping
	// ErrClosed when its client closed. It is the last event.
	Err error
}

// PersistentWatcher is a persistent watch on a node, or on a node and every
// node below it (recursive), that the client keeps set across connection
// losses and sessions: Curator's PersistentWatcher, on ZooKeeper 3.6's
// addWatch. Make one with Client.NewPersistentWatcher; Close it when done.
type PersistentWatcher struct {
	c         *Client
	path      string // as the caller gave it
	spath     string // on the servers
	recursive bool
	fn        func(WatchEvent)
	q         *listeners.Queue[WatchEvent]
	stopped   atomic.Bool // closed, or told its last event: fn hears nothing more
	standing  bool        // told Reset, and no Lapsed since (guarded by the registry's mu)
}

// NewPersistentWatcher sets a persistent watch on path (recursive: on every
// node below it too) and calls fn with its events, in the order the client
// read them, on a goroutine of the watcher's own, one at a time. fn first
// hears a reset (WatchEvent.Reset) once the watch is set on the servers,
// and, after a lapse (WatchEvent.Lapsed: the connection dropped), a reset
// again each time it is set again: after every reconnection, in the same
// session or a new one, since ZooKeeper drops a connection's persistent
// watches with it, and changes made meanwhile come without an event. Lapses
// and resets alternate, in the order of the connections: a reset says the
// watch stands on the client's current connection. A watcher that is not recursive hears its node created, changed
// and deleted, and its children change; a recursive one hears every node
// at or below path created, changed and deleted (ZooKeeper tells it no
// children's changes). It does not wait for the servers: the watch is set
// in the background, and set again until it stands or the watcher closes.
//
// Several watchers of one path share the client's one watch on the
// servers. ZooKeeper 3.6 to 3.8 keep one watch per path and connection,
// in one mode: a one-shot watch (GetDataW, ExistsW, ChildrenW) that the same
// client sets on the very same path replaces the persistent one, which then
// fires once and is gone. The client sets it again after each such call (and
// the watcher hears a reset), but cannot after a reconnection, where
// go-zookeeper sets its one-shot watches again itself: keep one-shot watches
// of a client off the paths it watches persistently. Paths below are no
// concern.
//
// A nil fn is an error wrapping ErrInvalidArgument, a bad path one that
// unwraps to zk.ErrInvalidPath, a closed client one wrapping ErrClosed. The
// servers must be ZooKeeper 3.6 or later.
func (c *Client) NewPersistentWatcher(path string, recursive bool, fn func(WatchEvent)) (*PersistentWatcher, error) {
	switch {
	case !c.usable():
		return nil, opError("add watch", path, errUnusable)
	case fn == nil:
		return nil, opError("add watch", path, invalidArgument("nil watch function"))
	}
	if err := ValidatePath(path); err != nil {
		return nil, opError("add watch", path, err)
	}
	w := &PersistentWatcher{c: c, path: path, spath: c.ns.fix(path), recursive: recursive, fn: fn}
	w.q = listeners.NewQueue(w.deliver, nil, nil)
	if err := c.watches.add(c, w); err != nil {
		w.stopped.Store(true)
		w.q.Close()
		return nil, opError("add watch", path, err)
	}
	return w, nil
}

// Path returns the watched path, as given.
func (w *PersistentWatcher) Path() string {
	if w == nil {
		return ""
	}
	return w.path
}

// Close stops the watcher: its function hears nothing more, but for a call
// under way, which Close does not wait for (it may be the caller). The last
// watcher of a path has the client remove the watch from the servers, in
// the background, or, while a one-shot watch of the client's on the path
// has not fired (which the removal would take too), leave it to end with
// its connection. Close is idempotent; on a nil or zero PersistentWatcher
// it returns an error wrapping ErrInvalidArgument.
func (w *PersistentWatcher) Close() error {
	if w == nil || w.c == nil {
		return invalidArgument("nil or zero PersistentWatcher: make one with Client.NewPersistentWatcher")
	}
	if !w.stopped.CompareAndSwap(false, true) {
		return nil
	}
	w.c.watches.remove(w)
	w.q.Close()
	return nil
}

// deliver calls fn with ev on the watcher's goroutine, unless the watcher
// has stopped.
func (w *PersistentWatcher) deliver(ev WatchEvent) {
	if w.stopped.Load() {
		return
	}
	if ev.Err != nil {
		w.stopped.Store(true) // the last
	}
	if err := listeners.Safe(func() { w.fn(ev) }); err != nil {
		w.c.log.Error("persistent watcher", zap.String("path", w.path), zap.Error(err))
	}
}

// watchRegistry is a client's persistent watches, by server path.
type watchRegistry struct {
	count atomic.Int32 // paths: with none, an event or a one-shot watch costs this load

	mu      sync.Mutex
	paths   map[string]*watchedPath
	gen     uint64        // connections: bumped at each connected state
	wake    chan struct{} // the keeper's: something to do
	started bool          // the keeper and its state listener
	closed  bool
}

// watchedPath is one path's watch and its watchers.
type watchedPath struct {
	watchers []*PersistentWatcher
	set      bool   // the watch was set on the servers...
	setGen   uint64 // ...on the connection of this generation...
	setRec   bool   // ...recursive, or not
	stale    bool   // a one-shot watch on the path may have replaced it
	busy     bool   // the keeper's request for the path is under way
	// The generation of the connection a one-shot watch of data (exists,
	// get data) or of children on the path was set on and has not fired
	// yet: 0, or an older generation, for none.
	dataShot, childShot uint64
}

// oneShot reports whether a one-shot watch on p was set on the connection
// of gen and has not fired.
func (p *watchedPath) oneShot(gen uint64) bool { return p.dataShot == gen || p.childShot == gen }

// recursive reports whether a watcher of p wants the whole subtree.
func (p *watchedPath) recursive() bool {
	for _, w := range p.watchers {
		if w.recursive {
			return true
		}
	}
	return false
}

// current reports whether p's watch stands on the connection of gen, as
// its watchers want it.
func (p *watchedPath) current(gen uint64) bool {
	return p.set && p.setGen == gen && !p.stale && (p.setRec || !p.recursive())
}

// add registers w; the first watcher of the client starts the keeper.
func (r *watchRegistry) add(c *Client, w *PersistentWatcher) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if !r.started {
		c.bgMu.Lock()
		closed := c.bgClosed
		if !closed {
			c.bg.Add(1) // under bgMu: Close, which waits for bg, has not begun
		}
		c.bgMu.Unlock()
		if closed {
			return ErrClosed
		}
		r.started = true
		r.paths = map[string]*watchedPath{}
		r.wake = make(chan struct{}, 1)
		go c.keepWatches()
	}
	p := r.paths[w.spath]
	if p == nil {
		p = &watchedPath{}
		r.paths[w.spath] = p
		r.count.Add(1)
	}
	p.watchers = append(p.watchers, w)
	if !p.busy && p.current(r.gen) {
		w.reset() // it stands: events reach w from now on
	} else {
		r.signal()
	}
	return nil
}

// remove unregisters w; the last watcher of a path has the keeper remove
// its watch.
func (r *watchRegistry) remove(w *PersistentWatcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paths[w.spath]
	if p == nil {
		return // the registry closed
	}
	for i, x := range p.watchers {
		if x == w {
			p.watchers = append(p.watchers[:i:i], p.watchers[i+1:]...)
			break
		}
	}
	if len(p.watchers) == 0 {
		r.signal()
	}
}

// connected is told of each connection that has a session, as it begins,
// before any request is sent on it: the watches are gone with the last
// connection, and are set again.
func (r *watchRegistry) connected() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gen++
	r.lapse(nil)
	r.signal()
}

// disconnected is told that the current connection dropped: no watch
// stands.
func (r *watchRegistry) disconnected() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lapse(nil)
}

// lapse tells the watchers of p (all, for nil) whose watch stood that it no
// longer does; r.mu is held.
func (r *watchRegistry) lapse(p *watchedPath) {
	tell := func(p *watchedPath) {
		for _, w := range p.watchers {
			if w.standing {
				w.standing = false
				w.q.Push(WatchEvent{Lapsed: true})
			}
		}
	}
	if p != nil {
		tell(p)
		return
	}
	for _, p := range r.paths {
		tell(p)
	}
}

// reset tells w that its watch stands; the registry's mu is held.
func (w *PersistentWatcher) reset() {
	w.standing = true
	w.q.Push(WatchEvent{Reset: true})
}

// generation returns the generation of the connection a request made now
// is sent on (or of a later one, which bumps it again).
func (r *watchRegistry) generation() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gen
}

// touched is told that the client set a one-shot watch on serverPath,
// which replaces a persistent one there (see NewPersistentWatcher), and
// which the persistent watch's removal would take with it (see next).
func (r *watchRegistry) touched(serverPath string, children bool) {
	if r.count.Load() == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paths[serverPath]
	if p == nil {
		return
	}
	if children {
		p.childShot = r.gen
	} else {
		p.dataShot = r.gen
	}
	if len(p.watchers) > 0 {
		p.stale = true
		r.lapse(p)
		r.signal()
	}
}

// oneShotNow reports whether a one-shot watch set on spath on the current
// connection has not fired yet.
func (r *watchRegistry) oneShotNow(spath string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paths[spath]
	return p != nil && p.oneShot(r.gen)
}

// forget drops p, at spath, from the registry; r.mu is held.
func (r *watchRegistry) forget(spath string) {
	delete(r.paths, spath)
	r.count.Add(-1)
}

// signal wakes the keeper; r.mu is held.
func (r *watchRegistry) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// watchJob is one request of the keeper's: set (or remove) a path's watch.
type watchJob struct {
	spath     string
	remove    bool
	recursive bool
	gen       uint64 // the connection's the watch was set on (set by runWatchJob)
}

// next picks a path that needs its watch set or removed, marks it busy,
// and returns the job; ok is false when none does.
func (r *watchRegistry) next() (j watchJob, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for spath, p := range r.paths {
		switch {
		case p.busy:
		case len(p.watchers) == 0 && p.set && p.setGen == r.gen && !p.oneShot(r.gen):
			p.busy = true
			return watchJob{spath: spath, remove: true}, true
		case len(p.watchers) == 0:
			// Gone with its connection; or left to go with it, while a one-shot
			// watch set on the path on this connection has not fired: removeWatches
			// (of any kind: the only one that reaches a persistent watch on
			// ZooKeeper 3.8) would remove that one too, and its channel would
			// never fire. The servers notify the path until the connection
			// ends; event ignores what no watcher wants.
			r.forget(spath)
		case !p.current(r.gen):
			p.busy, p.stale = true, false
			return watchJob{spath: spath, recursive: p.recursive()}, true
		}
	}
	return watchJob{}, false
}

// done records how j went, and tells the path's watchers that their watch
// stands.
func (r *watchRegistry) done(j watchJob, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.paths[j.spath]
	if p == nil {
		return
	}
	p.busy = false
	switch {
	case j.remove:
		p.set = false
		if len(p.watchers) == 0 {
			r.forget(j.spath)
		}
	case err == nil:
		p.set, p.setGen, p.setRec = true, j.gen, j.recursive
		if p.current(r.gen) { // else a new connection, or a one-shot watch, came meanwhile: set it again first
			for _, w := range p.watchers {
				w.reset()
			}
		}
	}
}

// keepWatchesRetry is how long the keeper waits before it tries again to
// set a watch it could not (the connection's next state wakes it sooner).
const keepWatchesRetry = time.Second

// keepWatches is the keeper: it sets and removes the paths' watches, one
// request at a time, until the client closes.
func (c *Client) keepWatches() {
	defer c.bg.Done()
	r := &c.watches
	var retry <-chan time.Time
	for {
		select {
		case <-c.bgCtx.Done():
			return
		case <-r.wake:
		case <-retry:
		}
		retry = nil
		for {
			j, ok := r.next()
			if !ok {
				break
			}
			err := c.runWatchJob(&j)
			if c.bgCtx.Err() != nil {
				return
			}
			r.done(j, err)
			if err != nil && !j.remove {
				if !c.State().IsConnected() {
					break // the next connection wakes the keeper
				}
				c.log.Warn("could not set a persistent watch; trying again", zap.String("path", c.ns.unfix(j.spath)), zap.Error(err))
				retry = time.After(keepWatchesRetry)
				break
			}
		}
	}
}

// runWatchJob sets j's watch, in the retry loop, or removes it, in one
// attempt, and none while the client is not connected: a watch not removed
// goes with its connection. A watch set is set
// on the connection whose generation the attempt records as it begins.
func (c *Client) runWatchJob(j *watchJob) error {
	path := c.ns.unfix(j.spath)
	if j.remove {
		if !c.State().IsConnected() {
			return nil // the watch went with the connection
		}
		_, err := attemptOnce(c.bgCtx, c, j.spath, attemptFunc[struct{}](func(z *zkconn.Conn, p string) (struct{}, error) {
			if c.watches.oneShotNow(j.spath) {
				return struct{}{}, nil // set since next looked: leave the watch to its connection
			}
			return struct{}{}, z.RemoveWatches(p)
		}), nil)
		return err
	}
	_, err := call(c.bgCtx, c, "add watch", path, j.spath, func(z *zkconn.Conn, p string) (struct{}, error) {
		j.gen = c.watches.generation()
		return struct{}{}, z.AddWatch(p, j.recursive)
	})
	return err
}

// event hears every event the client reads, on go-zookeeper's reader: a
// new connection (connected) or the end of one (disconnected), of the
// client's current connection (not of z, one it gave up), or a node event,
// which it hands to the watchers it concerns:
// those of its path, the recursive ones of the paths above it, and, when the
// servers tell a parent's watch nothing of its children (set recursive for
// another watcher), a children's change to the parent's watchers that are
// not recursive. It runs on go-zookeeper's reader: it only queues.
func (r *watchRegistry) event(c *Client, z *conn, ev zk.Event) {
	if r.count.Load() == 0 {
		return
	}
	if ev.Type == zk.EventSession {
		current := c.sm.isCurrent(z) // as onEvent: a connection just made waits until it is current
		switch {
		case !current: // a connection the client gave up
		case ev.State == zk.StateHasSession:
			r.connected()
		case ev.State == zk.StateDisconnected || ev.State == zk.StateExpired:
			r.disconnected()
		}
		return
	}
	switch ev.Type {
	case zk.EventNodeCreated, zk.EventNodeDataChanged, zk.EventNodeDeleted, zk.EventNodeChildrenChanged:
	default:
		return
	}
	node := ev.Type != zk.EventNodeChildrenChanged
	r.mu.Lock()
	defer r.mu.Unlock()
	tell := func(w *PersistentWatcher, t zk.EventType, spath string) {
		w.q.Push(WatchEvent{Type: t, Path: c.ns.unfix(spath)})
	}
	if p := r.paths[ev.Path]; p != nil {
		// The event fires go-zookeeper's one-shot watches of its kind.
		if ev.Type != zk.EventNodeChildrenChanged {
			p.dataShot = 0
		}
		if ev.Type == zk.EventNodeChildrenChanged || ev.Type == zk.EventNodeDeleted {
			p.childShot = 0
		}
		for _, w := range p.watchers {
			if node || !w.recursive {
				tell(w, ev.Type, ev.Path)
			}
		}
	}
	if !node {
		return
	}
	for at, parent := ev.Path, true; at != "/"; parent = false {
		at = parentOf(at)
		p := r.paths[at]
		if p == nil {
			continue
		}
		for _, w := range p.watchers {
			switch {
			case w.recursive:
				tell(w, ev.Type, ev.Path)
			case parent && p.setRec && ev.Type != zk.EventNodeDataChanged:
				tell(w, zk.EventNodeChildrenChanged, at)
			}
		}
	}
}

// parentOf returns the parent of a server path other than "/".
func parentOf(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// close tells every watcher that the client closed, waits for them to hear
// it (as for the state listeners: not for a call under way), and stops them.
func (r *watchRegistry) close() {
	r.mu.Lock()
	r.closed = true
	var ws []*PersistentWatcher
	for _, p := range r.paths {
		ws = append(ws, p.watchers...)
	}
	r.paths = nil
	r.count.Store(0)
	r.mu.Unlock()
	for _, w := range ws {
		w.q.Push(WatchEvent{Err: ErrClosed})
		w.q.Close()
	}
}
