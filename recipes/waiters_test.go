package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// waitersRun is what runWaiters saw.
type waitersRun struct {
	formed        time.Duration // from the first Acquire until every waiter waits
	formListings  int64         // listings sent meanwhile
	drained       time.Duration // from the holder's release until the last waiter has released
	drainListings int64         // listings sent meanwhile
}

// runWaiters queues n handles of one mutex, on one client, each on a
// goroutine of its own, behind a holder on another client; then the holder
// releases and each waiter releases as soon as it holds. The waiters' client
// goes through a proxy, which counts their requests and, while the queue
// forms, delays every packet by delay. It fails tb unless all acquire, in
// queue order.
func runWaiters(tb testing.TB, ctx context.Context, base string, n int, delay time.Duration) waitersRun {
	tb.Helper()
	proxy := zktest.NewProxy(tb, server.Addr())
	holder := mustMutex(tb, newClient(tb, ""), base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		tb.Fatal(err)
	}
	m := mustMutex(tb, newClient(tb, proxy.Addr()), base)
	listings, watches := proxy.Requests(zktest.OpGetChildren2), proxy.Requests(zktest.OpGetData)
	proxy.SetDelay(delay)
	var (
		mu    sync.Mutex
		order []int64 // the holders' sequence numbers, in the order they held
		wg    sync.WaitGroup
		errs  = make(chan error, n)
	)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := m.NewHandle()
			if err := h.Acquire(ctx); err != nil {
				errs <- err
				return
			}
			p := h.LockPath()
			seq, err := strconv.ParseInt(p[len(p)-10:], 10, 64)
			mu.Lock()
			order = append(order, seq)
			mu.Unlock()
			if err == nil {
				err = h.Release(ctx)
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	// Every waiter watches its predecessor, and all but the first (which
	// the holder hands off to) the node two ahead too, which its
	// predecessor watches: the client's waiters share one watch per node
	// (the engine's shared watches), so n watches are set when the queue is formed, one on
	// the holder's node and one on each waiter's but the last.
	if err := proxy.WaitRequests(ctx, zktest.OpGetData, watches+int64(n)); err != nil {
		tb.Fatalf("the queue did not form: %v", err)
	}
	r := waitersRun{formed: time.Since(start), formListings: proxy.Requests(zktest.OpGetChildren2) - listings}
	proxy.SetDelay(0)
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		tb.Fatal(err)
	}
	wg.Wait()
	r.drained = time.Since(released)
	r.drainListings = proxy.Requests(zktest.OpGetChildren2) - listings - r.formListings
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	if len(order) != n {
		tb.Fatalf("%d of %d waiters held the lock", len(order), n)
	}
	for i := 1; i < n; i++ {
		if order[i] <= order[i-1] {
			tb.Fatalf("waiter %d held with sequence %d after %d: not in queue order", i, order[i], order[i-1])
		}
	}
	return r
}

// Many handles of one lock on one client queue behind a holder and then
// take it in turn. Reports the time to form the queue and to drain it, and
// the listings the waiters sent per waiter in each phase.
func BenchmarkManyWaiters(b *testing.B) {
	for _, n := range []int{100, 1000, 4000} {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			base := testutil.Path(b)
			testutil.CleanupTree(b, server.Addr(), base)
			var r waitersRun
			runs := 0
			for b.Loop() {
				runs++
				r = runWaiters(b, testutil.Context(b), base+"/run-"+strconv.Itoa(runs), n, 0)
			}
			b.ReportMetric(float64(r.formed.Milliseconds()), "form-ms")
			b.ReportMetric(float64(r.formListings)/float64(n), "form-listings/waiter")
			b.ReportMetric(float64(r.drained.Milliseconds()), "drain-ms")
			b.ReportMetric(float64(r.drainListings)/float64(n), "drain-listings/waiter")
		})
	}
}

// Handles of one lock on one client share their listings while they queue:
// a listing serves every waiter whose node was created before it was sent,
// so the listings do not grow with the waiters (without sharing, each lists
// once: 50 and 200). A delay on every packet makes every listing take long
// enough for the creates to land meanwhile. All acquire, in queue order.
func TestLocalWaitersShareListings(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	for _, n := range []int{50, 200} {
		r := runWaiters(t, ctx, base+"/"+strconv.Itoa(n), n, 20*time.Millisecond)
		t.Logf("%d waiters: %d listings while queueing, %d while draining", n, r.formListings, r.drainListings)
		if r.formListings > 8 {
			t.Errorf("%d waiters sent %d listings while queueing, want a handful (at most 8)", n, r.formListings)
		}
		// Draining, each waiter but the first lists once, while its
		// predecessor holds (the lookahead): nobody else's listing can
		// serve it, since it must be sent after the node two ahead went.
		if r.drainListings > int64(n) {
			t.Errorf("%d waiters sent %d listings while draining, want at most one each", n, r.drainListings)
		}
	}
}

// A waiter whose shared listing was begun by another waiter that then gave
// up (its context ended while the listing was under way) lists again, and
// queues; the one that gave up leaves nothing behind. Either of the two may
// be the one that began the listing, so each gives up in turn.
func TestSharedListingOfAWaiterThatGivesUp(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	direct := newClient(t, "")
	holder := mustMutex(t, direct, base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	m := mustMutex(t, newClient(t, proxy.Addr()), base)
	for round := range 4 {
		proxy.SetDelay(50 * time.Millisecond)
		listed := proxy.Requests(zktest.OpGetChildren2)
		quitting, cancel := context.WithCancel(ctx)
		quitter, stayer := make(chan error, 1), make(chan error, 1)
		q, s := m.NewHandle(), m.NewHandle()
		go func() { quitter <- q.Acquire(quitting) }()
		go func() { stayer <- s.Acquire(ctx) }()
		if err := proxy.WaitRequests(ctx, zktest.OpGetChildren2, listed+1); err != nil {
			t.Fatal(err)
		}
		cancel() // while the first listing is under way
		if err := testutil.Recv(t, quitter, "the waiter that gave up"); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: the waiter that gave up: %v, want context.Canceled", round, err)
		}
		proxy.SetDelay(0)
		waitForChildren(t, direct, base, 2) // the holder's and the stayer's
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if err := testutil.Recv(t, stayer, "the waiter that stayed"); err != nil {
			t.Fatalf("round %d: the waiter that stayed: %v", round, err)
		}
		holder = s // it holds now; the next round queues behind it
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
