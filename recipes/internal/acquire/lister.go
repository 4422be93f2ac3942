package acquire

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/go-zookeeper/zk"
)

// A lister coalesces the listings of one lock path that the waiters of one
// client send: many handles of a lock in one process would otherwise each
// list the whole queue when they queue, and each listing grows with the
// queue.
//
// The rule: a waiter may use a listing begun after it asked for one. It
// asks after its node's create returned, or after the event that woke it,
// so such a listing was sent (on the same session, whose requests the
// server handles in order) after its node was created and after that event:
// it shows what the waiter's own listing would have shown, or later. So a
// waiter that asks while no listing is under way begins one; one that asks
// while a listing is under way (begun before it asked, perhaps before its
// node existed) waits for that one to end and then joins the next, which
// the first of them to come begins. However many waiters ask meanwhile, one
// listing serves them all; and a sorted listing is shared, never changed.
//
// The tree, and what other processes see, is unchanged: fewer reads.
type lister struct {
	owner *clientShared
	key   listerKey
	refs  atomic.Int32 // waiters using it; changed under the owner's listersMu, read without it (shared)

	mu       sync.Mutex
	begun    uint64    // listings begun so far
	inflight *listCall // the listing under way, or nil
}

// listerKey is what a lister is shared by, among the client's listers: one
// lock path, and one order of the sorted listing (the drivers' order).
type listerKey struct {
	base  string
	order string
}

// listCall is one listing, shared by the waiters that join it.
type listCall struct {
	n    uint64        // its place among the listings begun
	done chan struct{} // closed when what follows is set
	// sorted is the base's children, in the driver's order (read-only).
	sorted []string
	err    error
	// abandoned: its leader's context ended before it did. It answers
	// nobody: those who joined it ask again.
	abandoned bool
}

const maxSpareListers = 64

// listerFor returns the client's lister of base for d's order, to be given
// back with release.
func (s *clientShared) listerFor(base string, d Driver) *lister {
	k := listerKey{base: base, order: d.Order()}
	s.listersMu.Lock()
	defer s.listersMu.Unlock()
	l := s.listers[k]
	if l == nil {
		if n := len(s.spare); n > 0 {
			l, s.spare = s.spare[n-1], s.spare[:n-1]
		} else {
			l = &lister{owner: s}
		}
		l.key = k
		s.listers[k] = l
	}
	l.refs.Add(1)
	return l
}

// release gives the lister back; the last one out forgets it. Nobody
// holds it then, and no listing of its is under way (each is its leader's,
// who holds the lister until it ends), so it is kept for reuse.
func (l *lister) release() {
	s := l.owner
	s.listersMu.Lock()
	defer s.listersMu.Unlock()
	if l.refs.Add(-1) == 0 {
		delete(s.listers, l.key)
		l.key, l.begun, l.inflight = listerKey{}, 0, nil
		if len(s.spare) < maxSpareListers {
			s.spare = append(s.spare, l)
		}
	}
}

// shared reports whether another waiter uses the lister now. It takes no
// lock: it is asked at every look, and a count a moment old does (a waiter
// that comes meanwhile waits for the listing under way, or begins one).
func (l *lister) shared() bool { return l.refs.Load() > 1 }

// listEvent is what a waiter does in its lister, for listHook.
type listEvent int

const (
	listBegin        listEvent = iota // it begins listing n, which others may join
	listWait                          // it waits for listing n, begun before it asked, to end
	listJoin                          // it joins listing n
	listBehindCreate                  // it takes the listing sent behind its create (createAndList)
	listAlone                         // it lists on its own: nobody shares its lister
)

func (l *Lock) hear(ev listEvent, ctx context.Context, n uint64) {
	if l.listHook != nil {
		l.listHook(ev, ctx, n)
	}
}

// list returns the base's children sorted by d, from a listing begun after
// list was called: its own, or one it shares with other waiters. A missing
// base has no children. The slice is shared: read it, never change it.
func (ls *lister) list(ctx context.Context, l *Lock, d Driver) ([]string, error) {
	if !ls.shared() {
		// Nobody to share with (the uncontended case): a listing of our
		// own, published to nobody. A waiter that comes meanwhile begins
		// its own.
		l.hear(listAlone, ctx, 0)
		return l.listSorted(ctx, d)
	}
	ls.mu.Lock()
	after := ls.begun // a listing numbered above this one begins after now
	for {
		c := ls.inflight
		switch {
		case c == nil:
			c = &listCall{n: ls.begun + 1, done: make(chan struct{})}
			ls.begun, ls.inflight = c.n, c
			ls.mu.Unlock()
			l.hear(listBegin, ctx, c.n)
			c.sorted, c.err = l.listSorted(ctx, d)
			ls.mu.Lock()
			ls.inflight = nil
			c.abandoned = c.err != nil && ctx.Err() != nil
			ls.mu.Unlock()
			close(c.done)
			return c.sorted, c.err
		default:
			// Begun after we asked, join it; begun before, wait for it to
			// end, then take the next one.
			join, ev := c.n > after, listWait
			if join {
				ev = listJoin
			}
			ls.mu.Unlock()
			l.hear(ev, ctx, c.n)
			select {
			case <-c.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if join && !c.abandoned {
				return c.sorted, c.err
			}
		}
		ls.mu.Lock()
	}
}

// listSorted lists the base's children and sorts them by d; a missing base
// has none.
func (l *Lock) listSorted(ctx context.Context, d Driver) ([]string, error) {
	children, _, err := l.client.Children(ctx, l.base)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, err
	}
	return d.Sort(children), nil
}
