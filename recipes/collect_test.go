package recipes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// Curator's advice on LOST (close the client, build a new one), followed
// ten times: each client holds a lock, loses it at a blip, releases it and
// is closed. Nothing of the library keeps a closed client reachable: all
// ten are collected (each holds go-zookeeper's buffers, about 1.5 MiB).
func TestClosedClientsAreCollected(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	var clients []weak.Pointer[framework.Client]
	for i := range 10 {
		rec := testutil.NewStateRecorder()
		c, err := framework.New(proxy.Addr(), retry.NewNTimes(3, 10*time.Millisecond),
			framework.WithSessionTimeout(10*time.Second), framework.WithListener(rec))
		testutil.Must(t, err)
		clients = append(clients, weak.Make(c))
		h := mustMutex(t, c, fmt.Sprintf("%s/l%d", base, i)).NewHandle()
		testutil.Must(t, h.Acquire(ctx))
		proxy.DropConnections()
		waitClosed(ctx, t, h.Done(), "Done after the blip")
		rec.WaitFor(ctx, t, state.Reconnected)
		testutil.ErrorIs(t, h.Release(ctx), ErrLockLost)
		testutil.Must(t, c.Close())
	}
	testutil.Until(t, "every closed client collected", func() (bool, string) {
		live := reachable(clients)
		return live == 0, fmt.Sprintf("%d of %d still reachable", live, len(clients))
	})
}

// A lock value per key, as a program that locks per request builds them:
// each acquired and released on one client that stays connected. Once the
// program drops them, nothing of the library keeps them reachable while the
// client's trust goes on (the holdings follow its end only while they
// hold something).
func TestReleasedLockValuesAreCollected(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	var locks []weak.Pointer[InterProcessMutex]
	for i := range 20 {
		m := mustMutex(t, c, fmt.Sprintf("%s/k%d", base, i))
		locks = append(locks, weak.Make(m))
		h := m.NewHandle()
		testutil.Must(t, h.Acquire(ctx))
		testutil.Must(t, h.Release(ctx))
	}
	testutil.Until(t, "every released lock value collected", func() (bool, string) {
		live := reachable(locks)
		return live == 0, fmt.Sprintf("%d of %d still reachable", live, len(locks))
	})
}

// reachable collects garbage, and returns how many of ps point to a value
// still reachable.
func reachable[T any](ps []weak.Pointer[T]) int {
	runtime.GC()
	live := 0
	for _, p := range ps {
		if p.Value() != nil {
			live++
		}
	}
	return live
}

// Semaphores built per key on one long-lived SharedCount, each used and
// dropped: the count's listener does not keep them reachable (with their
// holdings), and goes once its semaphore is collected.
func TestSemaphoresOnACountAreCollected(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	count := mustCount(t, c, base+"/count", 1)
	var sems []weak.Pointer[InterProcessSemaphoreV2]
	for i := range 20 {
		s, err := NewInterProcessSemaphoreV2WithCount(c, fmt.Sprintf("%s/k%d", base, i), count)
		testutil.Must(t, err)
		sems = append(sems, weak.Make(s))
		lease, err := s.Acquire(ctx)
		testutil.Must(t, err)
		testutil.Must(t, lease.Close(ctx))
	}
	testutil.Until(t, "every dropped semaphore collected, and its listener gone from the count", func() (bool, string) {
		live := reachable(sems)
		n := len(count.listeners.Snapshot())
		return live == 0 && n == 0, fmt.Sprintf("%d of %d still reachable, %d listeners on the count", live, len(sems), n)
	})
}

// trackedTrust is a context, as the client's trust is one, that keeps the
// functions registered on it (context.AfterFunc, and the contexts derived
// from it) and not stopped, so that a test can count them.
type trackedTrust struct {
	done  chan struct{}
	mu    sync.Mutex
	next  int
	funcs map[int]func()
}

func newTrackedTrust() *trackedTrust {
	return &trackedTrust{done: make(chan struct{}), funcs: map[int]func(){}}
}

func (c *trackedTrust) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *trackedTrust) Done() <-chan struct{}       { return c.done }
func (c *trackedTrust) Err() error                  { return nil } // it never ends
func (c *trackedTrust) Value(any) any               { return nil }

// AfterFunc is what context.AfterFunc and context.WithCancelCause call on a
// parent that is not one of the context package's own.
func (c *trackedTrust) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.funcs[id] = f
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.funcs[id]
		delete(c.funcs, id)
		return ok
	}
}

func (c *trackedTrust) registered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.funcs)
}

// A grant of an older stretch of trust, held just after one of a newer
// stretch (its acquisition began before the blip, and ended after the
// newer one's): it is settled as lost at once, and the newer stretch keeps
// its follower and the clean-up that stops the follower once the holdings
// are collected. That clean-up used to be cancelled there, leaving the
// follower registered on the client's trust for as long as it lasted.
func TestHoldingsOfAnOlderStretchLeaveTheNewersCleanUp(t *testing.T) {
	testutil.CheckLeaks(t)
	newer := newTrackedTrust()
	older, end := context.WithCancelCause(context.Background())
	end(errors.New("the older stretch ended"))
	func() { // the holdings, and the grants, are dropped when it returns
		li := &lockInternals{}
		grantOf := func(trust context.Context) *grant {
			g := &grant{li: li, trust: trust}
			g.ctx, g.cancel = context.WithCancelCause(trust)
			return g
		}
		gNew, gOld := grantOf(newer), grantOf(older)
		gNew.hold()
		gOld.hold() // held just after
		testutil.Until(t, "the older stretch's grant settled as lost", func() (bool, string) {
			return gOld.fin.Load() != nil, "not settled"
		})
		if _, first := gNew.release(); !first {
			t.Fatal("the newer grant released before")
		}
	}()
	testutil.Until(t, "the newer stretch's follower stopped once the holdings are collected", func() (bool, string) {
		runtime.GC()
		n := newer.registered()
		return n == 0, fmt.Sprintf("%d function(s) still registered on the newer stretch", n)
	})
}
