package acquire

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// A wait that gives up leaves nothing behind: thousands of acquires of a
// held lock, each giving up (its context ends) while it waits on the
// holder's node, share one watch on that node, so the client's memory
// stays flat however many give up. go-zookeeper cannot remove a watch: with
// a watch per waiter, each would stay registered (about 180 bytes) until
// the holder let go.
func TestAbandonedWaitsLeaveNothingBehind(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	holder := holdAt(t, ctx, base)
	m := NewLock(newClient(t, ""), base)
	giveUp := func(waits int) {
		t.Helper()
		const workers = 16
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range waits / workers {
					wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
					_, err := m.Acquire(wctx, queueAt(&m))
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("an acquire of the held lock = %v, want it to give up", err)
						return
					}
				}
			}()
		}
		testutil.Wait(t, &wg, "the waiters")
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// The waiters' nodes go and their watches settle as the acquires that
	// gave up finish their clean-up (in the background when it is slow, as
	// on a loaded machine): nothing signals that, so poll, bounded, before
	// the heap is read.
	settled := func() {
		t.Helper()
		testutil.WaitChildren(t, rawConn(t), base, 1) // the holder's alone
		testutil.Until(t, "the one shared watch on the holder's node", func() (bool, string) {
			n := m.shared.liveWatches()
			return n == 1, fmt.Sprintf("%d shared watches live", n)
		})
	}
	giveUp(320) // warm up: runners, listers, the watch
	settled()
	before := heap()
	const waits = 2000
	giveUp(waits)
	settled()
	grew := int64(heap()) - int64(before)
	t.Logf("%d abandoned waits: the heap grew by %d bytes (%.1f a wait); shared watches live: %d",
		waits, grew, float64(grew)/waits, m.shared.liveWatches())
	if grew > 100*1024 {
		t.Errorf("%d abandoned waits grew the heap by %d bytes, %.0f a wait: want it flat", waits, grew, float64(grew)/waits)
	}
	release(t, ctx, holder)
	// Nobody waits on that watch now: its collector takes the event and
	// forgets it, as go-zookeeper forgets its registration.
	testutil.Until(t, "the holder's watch forgotten once it fired", func() (bool, string) {
		n := m.shared.liveWatches()
		return n == 0, fmt.Sprintf("%d shared watches live", n)
	})
}

// A shared watch that could not be set in time is asked for again while
// its waiter's own context lives: the setter's bound is its own, not the
// waiter's, so a waiter with time left never fails for it. Here the
// servers are out of reach (black-holed) for longer than the setter's
// bound; the waiter must wait on, and get its watch once they answer.
func TestAWatchSetTooLateIsAskedForAgain(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.ConnectString())
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	old := setWatchTimeout
	setWatchTimeout = 200 * time.Millisecond
	t.Cleanup(func() { setWatchTimeout = old })

	s := sharedOf(c)
	k := watchKey{base, true}
	proxy.BlackHole()
	type watched struct {
		w   *Watch
		err error
	}
	got := make(chan watched, 1)
	go func() {
		w, _, err := s.watchChildren(ctx, base)
		got <- watched{w, err}
	}()
	// Wait until a setter has given up and another has taken its place.
	var first *Watch
	testutil.Until(t, "a setter that gave up, replaced", func() (bool, string) {
		select {
		case r := <-got:
			t.Fatalf("the waiter gave up while its context lived: %v", r.err)
		default:
		}
		s.watchesMu.Lock()
		w := s.watches[k]
		s.watchesMu.Unlock()
		if first == nil {
			first = w
		}
		return w != nil && w != first, "the first setter still there"
	})
	proxy.Restore()
	r := testutil.Recv(t, got, "the watch, once the servers answer")
	if r.err != nil {
		t.Fatalf("the waiter = %v, want its watch", r.err)
	}
	// The watch fires (and is forgotten) with the base's next change.
	if _, err := c.Create(ctx, base+"/child", nil); err != nil {
		t.Fatal(err)
	}
	r.w.Enter()
	defer r.w.Leave()
	select {
	case ev, ok := <-r.w.Events():
		if typ := r.w.Take(ev, ok); typ != zk.EventNodeChildrenChanged {
			t.Fatalf("the watch's event: %v, want a change of the children", typ)
		}
	case <-time.After(testutil.Timeout):
		t.Fatal("no event of the watch")
	}
}

// A waiter that claimed the watch it asked for (claimData) and gave up
// before the watch was set gives its claim up: the watch, once set, is
// collected when it fires, as one nobody waits on. Here the servers are
// out of reach while the waiter asks, so its context ends first.
func TestAClaimGivenUpBeforeTheWatchIsSetLeavesNothingBehind(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.ConnectString())
	node := base + "/node"
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, node, nil); err != nil {
		t.Fatal(err)
	}
	s := sharedOf(c)
	k := watchKey{node, false}
	proxy.BlackHole()
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	_, _, claimed, err := s.claimData(wctx, node, true)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || claimed {
		t.Fatalf("a claim while the servers are out of reach = %v (claimed %v), want the context's end", err, claimed)
	}
	proxy.Restore()
	testutil.Until(t, "the watch set once the servers answer", func() (bool, string) {
		return s.liveWatch(k) != nil, "not set yet"
	})
	if err := c.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, "the watch collected once it fired", func() (bool, string) {
		n := s.liveWatches()
		return n == 0, fmt.Sprintf("%d shared watches live", n)
	})
}
