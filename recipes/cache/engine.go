package cache

import (
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// The engine: one goroutine per cache that turns the watch's events into
// reads and applies the reads' results to the tree, in the order it issued
// them (the ops' FIFO), whatever order they are answered in. The reads run
// on a few goroutines of the cache's (readers), so that many are in flight
// at once; the reads of one path run one after the other, in the order
// issued (op.prev), so that what is applied for a path never goes back in
// time. Why the tree ends equal to the servers' once quiet:
//
//   - a change made while the watch stands comes with an event, and the
//     event's read is issued after it, so it reads the change or a later
//     state; the reads of a path are applied in the order they ran, so the
//     last applied for a path is the last it changed to;
//   - a change made while the watch does not stand (before it is set, or
//     between a lapse and the next reset) is read by the build that the
//     reset starts: the build's reads are issued after the watch is set
//     again, and read the node itself and every node the cache holds (each
//     gone one answers NoNode, and goes), and, for every node that has
//     children, its listing, whose children the cache does not hold are
//     read in turn;
//   - a read that fails other than by NoNode fails the build (and a read of
//     an event's, the cache's faith): the cache goes stale and builds again
//     a second later, or at the next reset.
//
// A build is complete when every op it issued, and those its results
// issued, is applied; the cache is then current, unless the watch lapsed
// meanwhile or an op failed.

// inbox is the watch's events, pushed on the watcher's goroutine and taken
// by the engine.
type inbox struct {
	mu   sync.Mutex
	evs  []framework.WatchEvent
	wake chan struct{} // one token: something to take
}

func (b *inbox) push(ev framework.WatchEvent) {
	b.mu.Lock()
	b.evs = append(b.evs, ev)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

func (b *inbox) take() []framework.WatchEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	evs := b.evs
	b.evs = nil
	return evs
}

// opKind is what an op does.
type opKind uint8

const (
	opRead   opKind = iota // the node's data and Stat (NoNode: it is gone)
	opList                 // the node's children's names
	opDelete               // an event said the node is gone: nothing to read
)

// op is one thing the engine issued, and, once done is closed, its result.
type op struct {
	kind opKind
	path string
	gen  uint64        // the build it counts for; 0: an event's
	prev *op           // the read of the same path issued before it, which runs first
	done chan struct{} // closed when it has run
	data []byte
	stat *zk.Stat
	kids []string
	err  error
}

// ran is the done of an op that runs nothing.
var ran = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// engine is the state of the engine's goroutine; only it touches it.
type engine struct {
	c    *Cache
	fifo []*op               // issued, not yet applied, in the order issued
	last map[string]*op      // the last read issued of each path, while not applied
	seen map[string]struct{} // the paths the current build has read, or issued a read of

	gen      uint64 // the current build's (0: none yet)
	pending  int    // its ops not yet applied
	failed   error  // why it failed, nil if it did not
	standing bool   // the watch stands: a reset, and no lapse since
	lapses   uint64 // lapses so far
	atBuild  uint64 // lapses when the current build began
	since    time.Time
	retry    <-chan time.Time // a build again, after a failure
	over     bool             // the client closed: the engine ends
}

// buildRetry is how long the engine waits to build again after a read
// failed while the watch stood.
const buildRetry = time.Second

// run is the engine's goroutine, until the cache closes or its client does.
func (e *engine) run() {
	c := e.c
	defer close(c.done)
	e.since = c.began
	for {
		for _, ev := range c.in.take() {
			e.handle(ev)
		}
		if e.over {
			return
		}
		for len(e.fifo) > 0 && isClosed(e.fifo[0].done) {
			o := e.fifo[0]
			e.fifo[0] = nil
			e.fifo = e.fifo[1:]
			e.apply(o)
		}
		if len(e.fifo) == 0 {
			e.fifo = nil // let a build's array go
			if len(e.last) == 0 {
				e.last = map[string]*op{} // and its map (a map never shrinks)
			}
		}
		var head <-chan struct{}
		if len(e.fifo) > 0 {
			head = e.fifo[0].done
		}
		select {
		case <-c.in.wake:
		case <-head:
		case <-e.retry:
			e.retry = nil
			if e.standing {
				e.build()
			}
		case <-c.ctx.Done():
			return
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// handle takes one event of the watch.
func (e *engine) handle(ev framework.WatchEvent) {
	c := e.c
	switch {
	case ev.Err != nil: // the client closed: the last event, told even if stale already
		err := errs.Errorf("cache of %s: %w", c.path, ev.Err)
		c.end(err)
		c.out.Push(Event{Type: CacheStale, Err: err})
		e.over = true
	case ev.Lapsed:
		e.standing = false
		e.lapses++
		e.stale(ErrLapsed)
	case ev.Reset:
		e.standing = true
		e.build()
	case !c.inScope(ev.Path):
	case ev.Type == zk.EventNodeCreated || ev.Type == zk.EventNodeDataChanged:
		e.issue(opRead, ev.Path, 0)
	case ev.Type == zk.EventNodeDeleted:
		e.issue(opDelete, ev.Path, 0)
	}
}

// build reads the tree again: the node at the cache's path (or its
// listing, for a cache of its children only) and every node the cache
// holds; their results issue the rest (apply).
func (e *engine) build() {
	c := e.c
	e.gen++
	e.pending, e.failed, e.atBuild, e.retry = 0, nil, e.lapses, nil
	e.seen = map[string]struct{}{c.path: {}}
	if c.o.childrenOnly {
		e.issue(opList, c.path, e.gen)
	} else {
		e.issue(opRead, c.path, e.gen)
	}
	var held []string
	c.mu.RLock() // the engine is the tree's only writer; the lock is for the walk's sake
	c.t.walk(func(path string, depth int, _ *node) {
		if depth > 0 {
			held = append(held, path)
		}
	})
	c.mu.RUnlock()
	for _, p := range held {
		e.seen[p] = struct{}{}
		e.issue(opRead, p, e.gen)
	}
}

// issue queues an op of kind on path, for the build gen (0: none), and
// hands a read or a listing to the readers.
func (e *engine) issue(kind opKind, path string, gen uint64) {
	o := &op{kind: kind, path: path, gen: gen, done: ran}
	if kind != opDelete {
		o.done = make(chan struct{})
		if kind == opRead {
			o.prev = e.last[path]
			e.last[path] = o
		}
		e.c.reads.submit(e.c, o)
	}
	e.fifo = append(e.fifo, o)
	if gen != 0 {
		e.pending++
	}
}

// apply applies an op's result to the tree, tells the listeners what
// changed, and issues what a build's result calls for.
func (e *engine) apply(o *op) {
	c := e.c
	if o.kind == opRead && e.last[o.path] == o {
		delete(e.last, o.path)
	}
	counted := o.gen != 0 && o.gen == e.gen
	var evs []Event
	switch {
	case o.kind == opDelete || o.err != nil && errors.Is(o.err, zk.ErrNoNode) && o.kind == opRead:
		c.mu.Lock()
		evs = c.t.remove(o.path)
		c.mu.Unlock()
	case o.err != nil && errors.Is(o.err, zk.ErrNoNode): // a listing of a node gone: its read says so
	case o.err != nil:
		e.fail(o.err)
	case o.kind == opRead:
		data := o.data
		if c.o.noData {
			data = nil
		}
		c.mu.Lock()
		ev, ok := c.t.put(o.path, data, o.stat)
		c.mu.Unlock()
		if ok {
			evs = append(evs, ev)
		}
		if counted && o.stat.NumChildren > 0 && c.canList(o.path) {
			e.issue(opList, o.path, o.gen)
		}
	case o.kind == opList && counted: // (an earlier build's listing is dropped: the current build lists again)
		for _, name := range o.kids {
			p := framework.JoinPath(o.path, name)
			if _, ok := e.seen[p]; ok || !c.inScope(p) {
				continue // this build reads it already; a node an event's read put in is read (and listed) all the same
			}
			e.seen[p] = struct{}{}
			e.issue(opRead, p, o.gen)
		}
	}
	if c.heard.Load() > 0 { // else a first load of many nodes queues nothing
		for _, ev := range evs {
			c.out.Push(ev)
		}
	}
	if counted {
		if e.pending--; e.pending == 0 {
			e.finish()
		}
	}
}

// fail records that a read failed: the cache goes stale, and builds again
// a second later (or at the next reset).
func (e *engine) fail(err error) {
	if e.c.ctx.Err() != nil {
		return // closing
	}
	e.failed = err
	e.stale(err)
	if e.standing && e.retry == nil {
		e.retry = time.After(buildRetry)
	}
}

// finish ends a build whose ops are all applied: the cache is current
// unless the watch lapsed or an op failed meanwhile.
func (e *engine) finish() {
	e.seen = nil
	if e.failed != nil || !e.standing || e.lapses != e.atBuild {
		return
	}
	c := e.c
	c.mu.Lock()
	if !c.stale || c.ended != nil {
		c.mu.Unlock()
		return
	}
	c.stale = false
	close(c.current)
	c.staleCh = make(chan struct{})
	first := !isClosed(c.initialized)
	if first {
		close(c.initialized)
	}
	c.mu.Unlock()
	typ := CacheCurrent
	if first {
		typ = CacheInitialized
	}
	c.out.Push(Event{Type: typ})
	c.client.Emit(framework.Event{Kind: WentCurrent, Path: c.path, Wait: time.Since(e.since), Detail: HookEvent{}})
}

// stale marks the cache stale, telling so if it was current.
func (e *engine) stale(why error) {
	c := e.c
	c.mu.Lock()
	if c.stale {
		c.mu.Unlock()
		return
	}
	c.stale = true
	c.current = make(chan struct{})
	close(c.staleCh)
	c.mu.Unlock()
	e.since = time.Now()
	c.out.Push(Event{Type: CacheStale, Err: why})
	c.client.Emit(framework.Event{Kind: WentStale, Path: c.path, Err: why, Detail: HookEvent{}})
}

// inScope reports whether the cache holds the node at path, if it exists.
func (c *Cache) inScope(path string) bool {
	d := c.t.depth(path)
	switch {
	case d < 0:
		return false
	case d == 0:
		return !c.o.childrenOnly
	}
	return c.o.maxDepth < 0 || d <= c.o.maxDepth
}

// canList reports whether the cache holds the children of the node at
// path.
func (c *Cache) canList(path string) bool {
	return c.o.maxDepth < 0 || c.t.depth(path) < c.o.maxDepth
}

// readers are the goroutines that run the cache's reads: as many as reads
// wait, up to maxReaders, each ending when none waits.
type readers struct {
	mu      sync.Mutex
	queue   []*op
	head    int
	running int
	wg      sync.WaitGroup
}

// maxReaders bounds the reads of one cache in flight at once.
const maxReaders = 32

func (r *readers) submit(c *Cache, o *op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queue = append(r.queue, o)
	if r.running < maxReaders {
		r.running++
		r.wg.Add(1)
		go r.work(c)
	}
}

func (r *readers) work(c *Cache) {
	defer r.wg.Done()
	for {
		r.mu.Lock()
		if r.head == len(r.queue) {
			r.queue, r.head = nil, 0 // let a build's array go
			r.running--
			r.mu.Unlock()
			return
		}
		o := r.queue[r.head]
		r.queue[r.head] = nil
		r.head++
		r.mu.Unlock()
		c.read(o)
	}
}

// wait waits for the readers to end (at Close, their reads' context has
// ended).
func (r *readers) wait() { r.wg.Wait() }

// read runs o, after the read of its path issued before it.
func (c *Cache) read(o *op) {
	defer close(o.done)
	if o.prev != nil {
		<-o.prev.done
		o.prev = nil
	}
	switch {
	case o.kind == opList:
		o.kids, _, o.err = c.client.Children(c.ctx, o.path)
	case c.o.noData:
		var ok bool
		ok, o.stat, o.err = c.client.Exists(c.ctx, o.path)
		if o.err == nil && !ok {
			o.err = zk.ErrNoNode
		}
	default:
		o.data, o.stat, o.err = c.client.GetData(c.ctx, o.path)
	}
}
