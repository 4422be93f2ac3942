package acquire

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/testutil"
)

// The lister's rule, step by step (listHook tells where each waiter is):
// waiters that ask while a listing is under way do not take it, since it
// may have been sent before their nodes existed: they wait for it, then
// share the next one, which the first of them begins. When that one gives
// up before its listing ends (its context ends), the other does not take
// its error: it lists again, queues, and holds in its turn.
func TestListerRule(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	holder := holdAt(t, ctx, base)
	m := NewLock(newClient(t, ""), base)
	type heard struct {
		ev  listEvent
		ctx context.Context
		n   uint64
	}
	var armed atomic.Bool
	events := make(chan heard, 16)
	gates := map[uint64]chan struct{}{}
	m.listHook = func(ev listEvent, ctx context.Context, n uint64) {
		if !armed.Load() {
			return
		}
		select { // never blocks the waiter (but for a gate, below): the test takes each in turn
		case events <- heard{ev, ctx, n}:
		default:
			t.Errorf("the hook's buffer is full: %v of listing %d dropped", ev, n)
		}
		if ev != listBegin {
			return
		}
		if g := gates[n]; g != nil {
			<-g // the listing is under way (about to be sent) until the test says
		}
	}
	next := func(want listEvent, n uint64) heard {
		t.Helper()
		select {
		case h := <-events:
			if h.ev != want || h.n != n {
				t.Fatalf("heard %v of listing %d, want %v of %d", h.ev, h.n, want, n)
			}
			return h
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
		return heard{}
	}
	acquire := func(ctx context.Context) <-chan result { return acquireAsync(ctx, &m, queueAt(&m)) }

	// A first waiter, in the lister while the others ask, so that they
	// share (alone, a waiter lists on its own).
	armed.Store(true)
	firstGot := acquire(ctx)
	next(listBehindCreate, 0)
	armed.Store(false)
	begun := listingsBegun(&m, queue{})
	gates[begun+1], gates[begun+2] = make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { // a listing held at its gate when the test fails goes on, so the client can close
		for _, g := range gates {
			select {
			case <-g:
			default:
				close(g)
			}
		}
	})
	armed.Store(true)

	secondGot := acquire(ctx)
	next(listBegin, begun+1) // its listing is under way...
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	bctx, bcancel := context.WithCancel(ctx)
	defer bcancel()
	aGot, bGot := acquire(actx), acquire(bctx)
	next(listWait, begun+1) // ...so the two that ask now wait for it
	next(listWait, begun+1)
	close(gates[begun+1])
	lead := next(listBegin, begun+2) // then one of them begins the next
	next(listJoin, begun+2)          // and the other joins it
	quitGot, stayGot := aGot, bGot
	if lead.ctx == bctx {
		quitGot, stayGot = bGot, aGot
		bcancel()
	} else {
		acancel()
	}
	close(gates[begun+2]) // the one that began it has given up before it is sent
	if r := testutil.Recv(t, quitGot, "the waiter that gave up"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the waiter that gave up: %v, want context.Canceled", r.err)
	}
	next(listBegin, begun+3) // the other lists again, on its own account
	armed.Store(false)

	for _, got := range []<-chan result{firstGot, secondGot, stayGot} {
		release(t, ctx, holder)
		r := testutil.Recv(t, got, "a waiter's acquire")
		if r.err != nil {
			t.Fatal(r.err)
		}
		holder = r.g
	}
	release(t, ctx, holder)
}

// listingsBegun returns how many listings the lister of l's waiters with
// d's order has begun (and published); one of its waiters must be in the
// lister.
func listingsBegun(l *Lock, d Driver) uint64 {
	s := l.shared
	s.listersMu.Lock()
	ls := s.listers[listerKey{base: l.base, order: d.Order()}]
	s.listersMu.Unlock()
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.begun
}

// An uncontended acquire costs one round trip: its listing goes right
// behind its create (framework.Client.CreateAndList), so one create and one
// listing pass the proxy, and nothing else, and the waiter takes that
// listing (listBehindCreate) rather than one of its own. The base is a
// persistent node the test makes, so no parent is created (nor reaped
// between acquires) and the listing is behind the lock node's create. When
// the listing's reply is lost (the connection drops after the create's
// reply came), the acquire lists again and holds, with its one node.
func TestListsBehindTheCreate(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	if _, err := rawConn(t).Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	proxy := zktest.NewProxy(t, server.Addr())
	m := NewLock(newClient(t, proxy.Addr()), base)
	var behind atomic.Int64
	m.listHook = func(ev listEvent, _ context.Context, _ uint64) {
		if ev == listBehindCreate {
			behind.Add(1)
		}
	}
	creates, lists, reads := proxy.Requests(zktest.OpCreate), proxy.Requests(zktest.OpGetChildren2), proxy.Requests(zktest.OpGetData)
	g, err := m.Acquire(ctx, queueAt(&m))
	if err != nil {
		t.Fatal(err)
	}
	if c, l, r := proxy.Requests(zktest.OpCreate)-creates, proxy.Requests(zktest.OpGetChildren2)-lists, proxy.Requests(zktest.OpGetData)-reads; c != 1 || l != 1 || r != 0 {
		t.Fatalf("an uncontended acquire sent %d creates, %d listings, %d reads; want 1, 1, 0", c, l, r)
	}
	if n := behind.Load(); n != 1 {
		t.Fatalf("the acquire took the listing behind its create %d times, want 1", n)
	}
	release(t, ctx, g)
	lost := proxy.LoseNextReply(zktest.OpGetChildren2)
	if g, err = m.Acquire(ctx, queueAt(&m)); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, lost, "the lost listing reply")
	if kids := children(t, base); len(kids) != 1 || base+"/"+kids[0] != g.Path() {
		t.Fatalf("tree %v, held %s: want our one node", kids, g.Path())
	}
	release(t, ctx, g)
}

// A guarded lease's first look at the leases is sent right behind its
// create (framework.Client.CreateAndList), not after the create's reply,
// and serves (listHook hears it taken): an uncontended lease lists twice,
// the guard lock once and the leases once, as Curator's semaphore does.
// (The test makes P, P/locks and P/leases persistent, so that the server
// reaps no container parent between the leases: one reaped would fail a
// create and the listing behind it, and cost a listing more once made
// again.)
func TestGuardedLeasesListBehindTheCreate(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	for _, p := range []string{base, base + "/locks", base + "/leases"} {
		if _, err := rawConn(t).Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	proxy := zktest.NewProxy(t, server.Addr())
	leases, a := guarded(newClient(t, proxy.Addr()), base, 2)
	var behind atomic.Int32
	leases.listHook = func(ev listEvent, _ context.Context, _ uint64) {
		if ev == listBehindCreate {
			behind.Add(1)
		}
	}
	const n = 5
	listed := proxy.Requests(zktest.OpGetChildren2)
	for range n {
		g, err := leases.Acquire(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		release(t, ctx, g)
	}
	// The guard's and the leases' listings, each sent behind its create.
	if got := proxy.Requests(zktest.OpGetChildren2) - listed; got != 2*n {
		t.Fatalf("%d listings for %d leases, want 2 each: the guard's and the leases' sent behind the create", got, n)
	}
	if got := behind.Load(); got != n {
		t.Fatalf("%d of %d leases took the listing sent behind their create", got, n)
	}
}

// The reply to the listing sent behind a guarded lease's create is lost,
// and the connection with it: the lease is still granted, by a listing
// that shows its node, and is the only one.
func TestGuardedLeaseListingLost(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	leases, a := guarded(newClient(t, proxy.Addr()), base, 1)
	// The guard's listing comes first; once the guard has taken it (the
	// hook, on the acquiring goroutine), the next listing is the leases',
	// behind the lease's create: its reply is lost.
	var lost <-chan struct{}
	armed := make(chan struct{})
	var arm sync.Once
	a.Guard.Lock.listHook = func(ev listEvent, _ context.Context, _ uint64) {
		if ev == listBehindCreate {
			arm.Do(func() {
				lost = proxy.LoseNextReply(zktest.OpGetChildren2)
				close(armed)
			})
		}
	}
	r := testutil.Recv(t, acquireAsync(ctx, leases, a), "the lease")
	if r.err != nil {
		t.Fatal(r.err)
	}
	testutil.Recv(t, armed, "the guard's listing")
	select {
	case <-lost:
	default:
		t.Fatal("no listing reply was lost")
	}
	if kids := children(t, base+"/leases"); len(kids) != 1 || base+"/leases/"+kids[0] != r.g.Path() {
		t.Fatalf("leases %v, ours %s", kids, r.g.Path())
	}
	release(t, ctx, r.g)
}

// guarded returns the lock of the leases at base/leases and the attempt of
// a lease behind the guard lock at base/locks, as a semaphore of max leases
// takes one (Curator's InterProcessSemaphoreV2).
func guarded(c *framework.Client, base string, max int) (*Lock, Attempt) {
	locks, leases := NewLock(c, base+"/locks"), NewLock(c, base+"/leases")
	return &leases, Attempt{Path: leases.joinPath(locktree.LeaseName), Mode: framework.EphemeralSequential,
		Driver: counting{max}, Guard: &Guard{Lock: &locks, Attempt: queueAt(&locks)}}
}
