package recipes_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
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
		testutil.ErrorIs(t, h.Release(ctx), recipes.ErrLockLost)
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
	var locks []weak.Pointer[recipes.InterProcessMutex]
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
	var sems []weak.Pointer[recipes.InterProcessSemaphoreV2]
	for i := range 20 {
		s, err := recipes.NewInterProcessSemaphoreV2WithCount(c, fmt.Sprintf("%s/k%d", base, i), count)
		testutil.Must(t, err)
		sems = append(sems, weak.Make(s))
		lease, err := s.Acquire(ctx)
		testutil.Must(t, err)
		testutil.Must(t, lease.Close(ctx))
	}
	testutil.Until(t, "every dropped semaphore collected, and its listener gone from the count", func() (bool, string) {
		live := reachable(sems)
		n := recipes.CountListeners(count)
		return live == 0 && n == 0, fmt.Sprintf("%d of %d still reachable, %d listeners on the count", live, len(sems), n)
	})
}
