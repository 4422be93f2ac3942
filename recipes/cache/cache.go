package cache

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
)

var (
	// ErrClosed is the error of AwaitCurrent on a cache that was closed
	// (Close) before or while it waited. A cache whose client closed says
	// so with an error wrapping framework.ErrClosed instead.
	ErrClosed = errors.New("gocurator: cache closed")
	// ErrLapsed is why a cache went stale when its watch lapsed: the
	// connection it stood on dropped (CacheStale's Err).
	ErrLapsed = errors.New("gocurator: the cache's watch lapsed: the connection dropped")
)

// Cache is a local copy of a node and the nodes below it, kept current
// from a persistent recursive watch: Curator's CuratorCache (and, as
// NewNodeCache, NewPathChildrenCache and NewTreeCache make it, its
// NodeCache, PathChildrenCache and TreeCache). It is safe for concurrent
// use. Make one with New (or those); Close it when done.
type Cache struct {
	client  *framework.Client
	path    string
	o       options
	reg     listeners.Registry[Listener]
	heard   atomic.Int32            // listeners: with none, node events are not queued
	out     *listeners.Queue[Event] // to the listeners, in order
	watcher *framework.PersistentWatcher
	in      inbox // the watcher's events, for the engine
	began   time.Time

	ctx    context.Context // the reads'; ends at Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the engine has ended
	reads  readers

	closed atomic.Bool // Close was called: listeners hear nothing more

	mu          sync.RWMutex
	t           tree
	stale       bool          // not current, as the engine knows (Stale also asks the client)
	current     chan struct{} // closed when the cache is current again
	staleCh     chan struct{} // closed when it goes stale again
	initialized chan struct{} // closed at the end of the first load
	ended       error         // why the cache stopped: ErrClosed, or its client's close
	endedCh     chan struct{} // closed when it stopped
}

// options are what New's options set.
type options struct {
	single       bool // the node only (NodeCache)
	childrenOnly bool // its children, not the node (PathChildrenCache)
	maxDepth     int  // -1: no limit
	noData       bool
	listeners    []Listener
}

// Option changes what a cache holds, or adds a listener before it starts.
type Option interface{ apply(*options) error }

type optionFunc func(*options) error

func (f optionFunc) apply(o *options) error { return f(o) }

// SingleNode makes the cache hold the node at its path only, from a watch
// of that node alone (not of its subtree): Curator's
// CuratorCache.Options.SINGLE_NODE_CACHE, and what NewNodeCache makes.
func SingleNode() Option { return optionFunc(func(o *options) error { o.single = true; return nil }) }

// MaxDepth makes the cache hold the nodes at most d levels below its path
// (0: the node itself; 1: it and its children): TreeCache's setMaxDepth.
// Its watch still covers the whole subtree (ZooKeeper's recursive watch
// has no depth): deeper changes reach the client, as events it drops, not
// reads. A negative d is an error.
func MaxDepth(d int) Option {
	return optionFunc(func(o *options) error {
		if d < 0 {
			return errs.Errorf("%w: MaxDepth(%d): want 0 or more", framework.ErrInvalidArgument, d)
		}
		o.maxDepth = d
		return nil
	})
}

// WithoutData makes the cache keep each node's Stat only, not its data:
// PathChildrenCache's and TreeCache's cacheData(false). Its reads are then
// exists requests, whose replies carry no data.
func WithoutData() Option { return optionFunc(func(o *options) error { o.noData = true; return nil }) }

// WithListener adds l before the cache starts, so that it hears the first
// load (Listen, called after New, may come too late for it). A nil l is an
// error.
func WithListener(l Listener) Option {
	return optionFunc(func(o *options) error {
		if listeners.IsNil(l) {
			return errs.Errorf("%w: nil listener", framework.ErrInvalidArgument)
		}
		o.listeners = append(o.listeners, l)
		return nil
	})
}

// New starts a cache of the node at path and every node below it on
// client: Curator's CuratorCache.build(client, path).start(). It does not
// wait: the cache sets its watch and reads the tree in the background (see
// Initialized and AwaitCurrent). The path need not exist: the cache holds
// it once it does. A nil client, a bad path (one ZooKeeper refuses: it
// unwraps to zk.ErrInvalidPath), a nil option's argument or a bad one is an
// error wrapping framework.ErrInvalidArgument; a closed client, one wrapping
// framework.ErrClosed.
func New(client *framework.Client, path string, opts ...Option) (*Cache, error) {
	return newCache(client, path, options{maxDepth: -1}, opts)
}

// NewTreeCache is New: Curator's TreeCache, a tree's copy, is what
// CuratorCache holds (MaxDepth is TreeCache's setMaxDepth).
func NewTreeCache(client *framework.Client, path string, opts ...Option) (*Cache, error) {
	return New(client, path, opts...)
}

// NewNodeCache starts a cache of the node at path alone, from a watch of
// that node: Curator's NodeCache (getCurrentData is Get(path)).
func NewNodeCache(client *framework.Client, path string, opts ...Option) (*Cache, error) {
	return newCache(client, path, options{maxDepth: 0, single: true}, opts)
}

// NewPathChildrenCache starts a cache of the children of the node at path,
// not of the node itself: Curator's PathChildrenCache (getCurrentData is
// Nodes). Its watch covers the whole subtree: the grandchildren's changes
// reach the client, as events it drops.
func NewPathChildrenCache(client *framework.Client, path string, opts ...Option) (*Cache, error) {
	return newCache(client, path, options{maxDepth: 1, childrenOnly: true}, opts)
}

func newCache(client *framework.Client, path string, o options, opts []Option) (*Cache, error) {
	if client == nil {
		return nil, errs.Errorf("cache of %q: %w: nil client", path, framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, errs.Errorf("cache: %w", err)
	}
	shape := o
	for _, opt := range opts {
		if opt == nil {
			return nil, errs.Errorf("cache of %q: %w: nil option", path, framework.ErrInvalidArgument)
		}
		if err := opt.apply(&o); err != nil {
			return nil, errs.Errorf("cache of %q: %w", path, err)
		}
	}
	if shape.single || shape.childrenOnly { // the shape's own depth stands
		o.maxDepth = shape.maxDepth
	}
	if o.single && o.childrenOnly {
		return nil, errs.Errorf("cache of %q: %w: SingleNode with a PathChildrenCache", path, framework.ErrInvalidArgument)
	}
	if o.single {
		o.maxDepth = 0
	}
	c := &Cache{client: client, path: path, o: o, began: time.Now(), t: newTree(path),
		stale: true, current: make(chan struct{}), staleCh: make(chan struct{}), initialized: make(chan struct{}), endedCh: make(chan struct{}),
		done: make(chan struct{})}
	for _, l := range o.listeners {
		c.reg.Add(l)
		c.heard.Add(1)
	}
	c.in.wake = make(chan struct{}, 1)
	c.out = listeners.NewQueue(c.tell, nil, nil)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	w, err := client.NewPersistentWatcher(path, !o.single, c.in.push)
	if err != nil {
		c.cancel()
		c.out.Close()
		return nil, errs.Errorf("cache: %w", err)
	}
	c.watcher = w
	e := &engine{c: c, last: map[string]*op{}}
	go e.run()
	return c, nil
}

// usable reports whether c was made by New.
func (c *Cache) usable() bool { return c != nil && c.client != nil }

// errZero is the error of a call on a nil or zero Cache.
var errZero = errs.Errorf("%w: nil or zero Cache: make one with New", framework.ErrInvalidArgument)

// Path returns the cache's path, as given.
func (c *Cache) Path() string {
	if !c.usable() {
		return ""
	}
	return c.path
}

// Listen adds l, which hears every later event (see Event), and returns a
// function that removes it. Listeners are called in the order they were
// added, one event at a time, on a goroutine of the cache's own, never under
// a lock of the library's; a listener that panics is logged (at ERROR) and
// the others are still called. A nil l (or a nil func as a ListenerFunc) is
// ignored: nothing is added, and remove does nothing.
func (c *Cache) Listen(l Listener) (remove func()) {
	if !c.usable() || listeners.IsNil(l) {
		return func() {}
	}
	c.heard.Add(1)
	remove = c.reg.Add(l)
	return sync.OnceFunc(func() {
		remove()
		c.heard.Add(-1)
	})
}

// tell hands e to the listeners, on the queue's goroutine; nothing after
// Close.
func (c *Cache) tell(e Event) {
	for _, l := range c.reg.Snapshot() {
		if c.closed.Load() {
			return
		}
		if err := listeners.Safe(func() { l.CacheEvent(e) }); err != nil {
			c.client.Logger().Error("cache listener", zap.String("path", c.path), zap.Stringer("event", e), zap.Error(err))
		}
	}
}

// Get returns the node at path as the cache holds it, if it does: Curator's
// get(path) (NodeCache's getCurrentData). While the cache is stale (Stale)
// it is what the cache last knew. A path outside the cache's is never held.
func (c *Cache) Get(path string) (Node, bool) {
	if !c.usable() {
		return Node{}, false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.t.get(path)
}

// Children returns the names of the children of the node at path that the
// cache holds, sorted; none for a path the cache does not hold.
func (c *Cache) Children(path string) []string {
	if !c.usable() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.t.children(path)
}

// Nodes returns every node the cache holds, parents before their children
// and siblings by name: Curator's stream() (PathChildrenCache's
// getCurrentData).
func (c *Cache) Nodes() []Node {
	if !c.usable() {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]Node, 0, c.t.size)
	c.t.walk(func(path string, _ int, n *node) { out = append(out, n.as(path)) })
	return out
}

// Len returns how many nodes the cache holds: Curator's size().
func (c *Cache) Len() int {
	if !c.usable() {
		return 0
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.t.size
}

// Stale reports whether the cache may be behind the servers: it has not
// finished its first load, or its client is not connected (SUSPENDED or
// LOST: from the moment the client posts the state, before the cache's
// CacheStale), or since its last CacheInitialized or CacheCurrent its
// watch lapsed (the connection dropped; changes made meanwhile come with
// no event, and the cache reads its tree again once its watch is set
// again), a read failed, the client closed, or the cache closed. What it
// holds is then what it last knew. Curator's cache has no such signal.
func (c *Cache) Stale() bool {
	if !c.usable() {
		return true
	}
	c.mu.RLock()
	stale := c.stale
	c.mu.RUnlock()
	return stale || !c.client.State().IsConnected()
}

// Initialized returns a channel closed once the first load is complete
// (the CacheInitialized event): the cache then holds every node the tree
// had; or once the cache stops before that (closed, or its client closed),
// so that a wait on it always ends: AwaitCurrent then says why. For a zero
// Cache it is nil.
func (c *Cache) Initialized() <-chan struct{} {
	if !c.usable() {
		return nil
	}
	return c.initialized
}

// AwaitCurrent waits until the cache is current (not Stale) or ctx ends,
// and returns nil, ctx's error, or why the cache stopped: ErrClosed, or an
// error wrapping framework.ErrClosed when its client closed. A nil ctx is an
// error wrapping framework.ErrInvalidArgument.
func (c *Cache) AwaitCurrent(ctx context.Context) error {
	switch {
	case !c.usable():
		return errZero
	case ctx == nil:
		return errs.Errorf("%w: nil context", framework.ErrInvalidArgument)
	}
	for {
		c.mu.RLock()
		stale, current, staleCh, ended, endedCh := c.stale, c.current, c.staleCh, c.ended, c.endedCh
		c.mu.RUnlock()
		switch {
		case ended != nil:
			return ended
		case !stale && c.client.State().IsConnected():
			return nil
		case !stale: // the client lost its connection: the cache goes stale in a moment (its watch lapses)
			current = staleCh
		}
		select {
		case <-current:
		case <-endedCh:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// end records why the cache stopped, once, and marks it stale.
func (c *Cache) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended == nil {
		c.ended = err
		c.stale = true
		close(c.endedCh)
		if !isClosed(c.initialized) { // a wait for the first load ends too
			close(c.initialized)
		}
	}
}

// Close stops the cache: its watch is removed (the client's last watcher
// of the path removes it from the servers), its reads end, it holds nothing
// more (as Curator's close clears it), and its listeners hear nothing more.
// It waits for the cache's goroutines, but never for a listener: one under
// way (it may be the caller) finishes by itself, and the events not yet
// told are dropped. Close is idempotent; on a nil or zero Cache it returns
// an error wrapping framework.ErrInvalidArgument.
func (c *Cache) Close() error {
	if !c.usable() {
		return errZero
	}
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.end(ErrClosed)
	_ = c.watcher.Close()
	c.cancel()
	<-c.done // the engine runs no user code, and ends at once
	c.reads.wait()
	c.mu.Lock()
	c.t.clear()
	c.mu.Unlock()
	c.out.Close()
	return nil
}
