package recipes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

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
	holder := mustMutex(t, newClient(t, ""), base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	m := mustMutex(t, newClient(t, ""), base)
	giveUp := func(waits int) {
		t.Helper()
		const workers = 16
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				h := m.NewHandle()
				for range waits / workers {
					wctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
					err := h.Acquire(wctx)
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
			n := liveWatches()
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
		waits, grew, float64(grew)/waits, liveWatches())
	if grew > 100*1024 {
		t.Errorf("%d abandoned waits grew the heap by %d bytes, %.0f a wait: want it flat", waits, grew, float64(grew)/waits)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Nobody waits on that watch now: its collector takes the event and
	// forgets it, as go-zookeeper forgets its registration.
	testutil.Until(t, "the holder's watch forgotten once it fired", func() (bool, string) {
		n := liveWatches()
		return n == 0, fmt.Sprintf("%d shared watches live", n)
	})
}
