package recipes_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

var leaseNode = regexp.MustCompile(`^_c_` + uuidRE + `-lease-[0-9]{10}$`)

func mustSemaphore(t testing.TB, c *framework.Client, path string, max int, opts ...recipes.SemaphoreOption) *recipes.InterProcessSemaphoreV2 {
	t.Helper()
	s, err := recipes.NewInterProcessSemaphoreV2(c, path, max, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// 10 contenders over 3 clients on a semaphore of 3, 5 rounds each: never
// more than 3 holders; the first 3 are shown to hold at once.
func TestSemaphoreLimitsHolders(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	clients := []*framework.Client{newClient(t, ""), newClient(t, ""), newClient(t, "")}
	const contenders, rounds, max = 10, 5, 3
	var holders, grants atomic.Int32
	var over atomic.Int32
	threeIn := make(chan struct{})
	sems := make([]*recipes.InterProcessSemaphoreV2, contenders)
	for i := range sems {
		sems[i] = mustSemaphore(t, clients[i%len(clients)], base, max)
	}
	runAll(t, contenders, func(i int) error {
		c, s := clients[i%len(clients)], sems[i]
		for r := 0; r < rounds; r++ {
			l, err := s.Acquire(ctx)
			if err != nil {
				return err
			}
			if n := holders.Add(1); n > max {
				over.Store(n)
			}
			switch g := grants.Add(1); {
			case g == max:
				close(threeIn)
			case g < max: // the first holders wait, holding, until 3 hold at once
				select {
				case <-threeIn:
				case <-ctx.Done():
				}
			}
			// work under the lease: a round trip to the server, long
			// enough for a contender that wrongly got in to be counted
			_, _, err = c.Exists(ctx, base)
			holders.Add(-1)
			if err := errors.Join(err, l.Close(ctx)); err != nil {
				return err
			}
		}
		return nil
	})
	if n := over.Load(); n != 0 {
		t.Fatalf("%d holders at once, max %d", n, max)
	}
	if g := grants.Load(); g != contenders*rounds {
		t.Fatalf("%d grants, want %d", g, contenders*rounds)
	}
	if kids := children(t, base+"/leases"); len(kids) != 0 {
		t.Fatalf("leases left: %v", kids)
	}
	if kids := children(t, base+"/locks"); len(kids) != 0 {
		t.Fatalf("internal lock nodes left: %v", kids)
	}
}

// A multi-lease acquire that cannot complete before its deadline returns
// every lease it took and its internal lock node.
func TestSemaphoreAcquireNTimesOut(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2 := newClient(t, ""), newClient(t, "")
	s1, s2 := mustSemaphore(t, c1, base, 3), mustSemaphore(t, c2, base, 3)
	held, err := s1.AcquireN(ctx, 2)
	if err != nil || len(held) != 2 {
		t.Fatalf("AcquireN(2) = %v, %v", held, err)
	}
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	got, err := s2.AcquireN(dctx, 2) // one is free, the second never comes
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("AcquireN beyond availability = %v, %v; want DeadlineExceeded", got, err)
	}
	leases := children(t, base+"/leases")
	if len(leases) != 2 || !sameSet(leases, []string{held[0].NodeName(), held[1].NodeName()}) {
		t.Fatalf("leases %v, want only the holder's", leases)
	}
	if kids := children(t, base+"/locks"); len(kids) != 0 {
		t.Fatalf("internal lock nodes left: %v", kids)
	}
	parts, err := s2.ParticipantNodes(ctx)
	if err != nil || !sameSet(parts, leases) {
		t.Fatalf("ParticipantNodes = %v, %v", parts, err)
	}

	// try forms and bad quantities
	if _, err := s2.TryAcquireN(ctx, 2); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquireN(2) with 1 free = %v", err)
	}
	if n := len(children(t, base+"/leases")); n != 2 {
		t.Fatalf("a failed TryAcquireN left leases: %d", n)
	}
	for _, q := range []int{0, -1} {
		if _, err := s2.AcquireN(ctx, q); !errors.Is(err, framework.ErrInvalidArgument) {
			t.Fatalf("AcquireN(%d) = %v", q, err)
		}
	}
	l, err := s2.TryAcquire(ctx)
	if err != nil {
		t.Fatalf("TryAcquire with 1 free = %v", err)
	}
	if err := recipes.ReturnAll(ctx, append(held, l, nil)); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("second Close = %v, want ErrNotHeld", err)
	}
	if err := recipes.ReturnAll(ctx, held); err != nil {
		t.Fatalf("ReturnAll of returned leases = %v", err)
	}
	assertClosed(t, l.Done(), "Lost of a closed lease")
}

// A count changed from 1 to 2 lets the second waiter in.
func TestSemaphoreSharedCount(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	countPath := base + "/count"
	c1, c2 := newClient(t, ""), newClient(t, "")
	count1, count2 := mustCount(t, c1, countPath, 1), mustCount(t, c2, countPath, 7)
	if count2.Count() != 1 {
		t.Fatalf("second count = %d, want the node's 1, not its own seed", count2.Count())
	}
	raw := testutil.Connect(t, server.Addr())
	data, stat, err := raw.Get(countPath)
	if err != nil || len(data) != 4 || binary.BigEndian.Uint32(data) != 1 || stat.EphemeralOwner != 0 {
		t.Fatalf("count node %x %+v (%v), want a persistent 4-byte big-endian 1", data, stat, err)
	}
	heard := make(chan int, 10)
	remove := count2.AddListener(func(n int) { heard <- n })
	defer remove()

	s1, err := recipes.NewInterProcessSemaphoreV2WithCount(c1, base+"/sem", count1)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := recipes.NewInterProcessSemaphoreV2WithCount(c2, base+"/sem", count2)
	if err != nil {
		t.Fatal(err)
	}
	l1, err := s1.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *recipes.Lease, 1)
	errc := make(chan error, 1)
	go func() {
		l, err := s2.Acquire(ctx)
		errc <- err
		got <- l
	}()
	waitForChildren(t, c1, base+"/sem/leases", 2) // the second waits: 2 leases > 1
	if _, err := s2.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire while another waits = %v", err)
	}
	if err := count1.SetCount(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, errc, "the second Acquire"); err != nil {
		t.Fatal(err)
	}
	l2 := testutil.Recv(t, got, "the second lease")
	if n := testutil.Recv(t, heard, "the count listener"); n != 2 {
		t.Fatalf("listener heard %d", n)
	}
	if s2.MaxLeases() != 2 || count2.Count() != 2 {
		t.Fatalf("max %d, count %d", s2.MaxLeases(), count2.Count())
	}

	// compare-and-set
	n, v := count1.VersionedCount()
	if n != 2 {
		t.Fatalf("count1 = %d", n)
	}
	if ok, err := count1.TrySetCount(ctx, 5, v-1); ok || err != nil {
		t.Fatalf("TrySetCount at a stale version = %v, %v", ok, err)
	}
	if ok, err := count1.TrySetCount(ctx, 5, v); !ok || err != nil {
		t.Fatalf("TrySetCount = %v, %v", ok, err)
	}
	if n := testutil.Recv(t, heard, "the count listener"); n != 5 {
		t.Fatalf("listener heard %d", n)
	}
	if err := recipes.ReturnAll(ctx, []*recipes.Lease{l1, l2}); err != nil {
		t.Fatal(err)
	}
	if err := count2.Start(ctx); !errors.Is(err, recipes.ErrInvalidState) || errors.Is(err, framework.ErrInvalidArgument) {
		t.Fatalf("second Start = %v, want ErrInvalidState", err)
	}
	if err := count2.SetCount(ctx, 1<<40); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Fatalf("out of range = %v", err)
	}
	count2.Close()
	if err := count2.SetCount(ctx, 1); !errors.Is(err, recipes.ErrInvalidState) {
		t.Fatalf("SetCount after Close = %v, want ErrInvalidState", err)
	}
	if err := count2.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustCount(t testing.TB, c *framework.Client, path string, seed int) *recipes.SharedCount {
	t.Helper()
	sc, err := recipes.NewSharedCount(c, path, seed)
	if err != nil {
		t.Fatal(err)
	}
	if err := sc.Start(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	return sc
}

func TestSemaphoreMutex(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2 := newClient(t, ""), newClient(t, "")
	m1, err := recipes.NewInterProcessSemaphoreMutex(c1, base)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := recipes.NewInterProcessSemaphoreMutex(c2, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := m1.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("Release when not held = %v", err)
	}
	if err := m1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if !m1.IsHeld() || m2.IsHeld() || tokenOf(t, m1) == 0 || m1.LockPath() == "" {
		t.Fatal("introspection wrong while held")
	}
	if err := m1.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire while held (not reentrant) = %v", err)
	}
	if err := m2.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire elsewhere while held = %v", err)
	}
	if kids := children(t, base+"/leases"); len(kids) != 1 {
		t.Fatalf("leases %v", kids)
	}
	waiting := make(chan error, 1)
	go func() { waiting <- m2.Acquire(ctx) }()
	waitForChildren(t, c1, base+"/leases", 2)
	released := make(chan error)
	go func() { released <- m1.Release(ctx) }() // any goroutine may release
	if err := testutil.Recv(t, released, "Release on another goroutine"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, waiting, "the waiter's Acquire"); err != nil {
		t.Fatal(err)
	}
	if m1.IsHeld() || m1.LockPath() != "" {
		t.Fatal("m1 still looks held")
	}
	if _, err := m1.FencingToken(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("token of a released mutex: %v, want ErrNotHeld", err)
	}
	assertClosed(t, m1.Done(), "Lost of an unheld mutex")
	var l recipes.Locker = m2
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m2.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("second Release = %v", err)
	}
}

func TestSemaphoreBadArguments(t *testing.T) {
	testutil.CheckLeaks(t)
	c := newClient(t, "")
	if _, err := recipes.NewInterProcessSemaphoreV2(c, "/a", 0); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Errorf("max 0: %v", err)
	}
	if _, err := recipes.NewInterProcessSemaphoreV2(nil, "/a", 1); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
	if _, err := recipes.NewInterProcessSemaphoreV2(c, "a/", 1); !errors.Is(err, zk.ErrInvalidPath) {
		t.Errorf("bad path: %v", err)
	}
	if _, err := recipes.NewInterProcessSemaphoreV2WithCount(c, "/a", nil); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Errorf("nil count: %v", err)
	}
	if _, err := recipes.NewInterProcessSemaphoreMutex(c, "/a/"); !errors.Is(err, zk.ErrInvalidPath) {
		t.Errorf("bad path: %v", err)
	}
	if _, err := recipes.NewSharedCount(c, "/a", 1<<40); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Errorf("seed out of range: %v", err)
	}
	if _, err := recipes.NewSharedCount(c, "//a", 1); !errors.Is(err, zk.ErrInvalidPath) {
		t.Errorf("bad path: %v", err)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, x := range a {
		seen[x]++
	}
	for _, x := range b {
		seen[x]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

// The semaphore as cmd/gocurator-bench's scenario 4 runs it: sessions (each
// a client of its own, all through one proxy) take a lease and return it in
// a loop, more of them than there are leases; each iteration is 20 leases
// per session; the last case delays every packet by 2 ms at the proxy.
// Reports leases per second and, per lease, the requests the
// clients sent by kind (creates, deletes, listings, data reads and watches,
// exists) and in all, and the CPU time and allocations of the process (the
// proxy's included, which are the same for the same requests).
func BenchmarkSemaphoreLeases(b *testing.B) {
	for _, tc := range []struct {
		sessions, leases int
		delay            time.Duration
	}{{1, 1, 0}, {16, 3, 0}, {16, 3, 2 * time.Millisecond}} {
		b.Run(fmt.Sprintf("sessions=%d/leases=%d/delay=%s", tc.sessions, tc.leases, tc.delay), func(b *testing.B) {
			ctx, cancel := context.WithCancel(testutil.Context(b))
			defer cancel()
			base := testutil.Path(b)
			testutil.CleanupTree(b, server.Addr(), base)
			proxy := zktest.NewProxy(b, server.Addr())
			sems := make([]*recipes.InterProcessSemaphoreV2, tc.sessions)
			for i := range sems {
				sems[i] = mustSemaphore(b, newClient(b, proxy.Addr()), base, tc.leases)
			}
			cycle := func(s *recipes.InterProcessSemaphoreV2) {
				l, err := s.Acquire(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if err := l.Close(ctx); err != nil {
					b.Error(err)
				}
			}
			for _, s := range sems { // the parents, and a warm-up
				cycle(s)
			}
			// A delay on every packet makes the round trips, rather than the
			// load on the machine, set the pace: leases/s then counts the
			// round trips on the path from one grant to the next.
			proxy.SetDelay(tc.delay)
			ops := []struct {
				name string
				op   int32
			}{
				{"creates", zktest.OpCreate}, {"deletes", zktest.OpDelete}, {"listings", zktest.OpGetChildren2},
				{"reads", zktest.OpGetData}, {"exists", zktest.OpExists},
			}
			before := make([]int64, len(ops))
			for i, o := range ops {
				before[i] = proxy.Requests(o.op)
			}
			var leases atomic.Int64
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			c0 := cpuTime(b)
			start := time.Now()
			for b.Loop() {
				var wg sync.WaitGroup
				for _, s := range sems {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 20 {
							cycle(s)
							leases.Add(1)
						}
					}()
				}
				wg.Wait()
			}
			elapsed := time.Since(start)
			b.StopTimer()
			cpu := cpuTime(b) - c0
			runtime.ReadMemStats(&m1)
			n := float64(leases.Load())
			b.ReportMetric(n/elapsed.Seconds(), "leases/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/lease")
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/lease")
			var all float64
			for i, o := range ops {
				per := float64(proxy.Requests(o.op)-before[i]) / n
				all += per
				b.ReportMetric(per, o.name+"/lease")
			}
			b.ReportMetric(all, "requests/lease")
		})
	}
}

// WithLock holds a Lease as it holds a Locker: fn runs while the lease
// holds (no other lease is granted), its context ends with a cause
// wrapping ErrLockLost when the lease is lost (SUSPENDED here), and the
// lease is returned whatever fn does; a lease returned already does not
// run fn, and says why.
func TestWithLockHoldsALease(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	sem, err := recipes.NewInterProcessSemaphoreV2(c, base, 1)
	testutil.Must(t, err)
	lease, err := sem.Acquire(ctx)
	testutil.Must(t, err)
	err = recipes.WithLock(ctx, lease, func(ctx context.Context) error {
		_, err := sem.TryAcquire(ctx)
		if !errors.Is(err, recipes.ErrLocked) {
			t.Errorf("a second lease while WithLock holds the one: %v, want ErrLocked", err)
		}
		return nil
	})
	testutil.Must(t, err)
	if err := lease.Err(); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("the lease's Err after WithLock: %v, want ErrNotHeld (returned)", err)
	}

	ran := false
	err = recipes.WithLock(ctx, lease, func(context.Context) error { ran = true; return nil })
	if ran {
		t.Fatal("fn ran under a lease returned already")
	}
	if !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("WithLock of a returned lease: %v, want ErrNotHeld", err)
	}

	lease, err = sem.Acquire(ctx)
	testutil.Must(t, err)
	err = recipes.WithLock(ctx, lease, func(ctx context.Context) error {
		proxy.DropConnections() // SUSPENDED: the standard policy stops trusting the lease
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, recipes.ErrLockLost) || !errors.Is(lease.Err(), recipes.ErrLockLost) {
		t.Fatalf("WithLock of a lease lost while fn ran: %v, the lease's Err %v; want ErrLockLost", err, lease.Err())
	}
	testutil.Must(t, c.BlockUntilConnected(ctx))
	again, err := sem.Acquire(ctx) // the lost lease's node is gone: WithLock returned it
	testutil.Must(t, err)
	testutil.Must(t, again.Close(ctx))
}
