package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// eventLogOf is an event hook that keeps what it hears, for a test to wait
// for. It never blocks the client's events queue: past its buffer it drops,
// and next then fails the test.
type eventLogOf struct {
	heard   chan framework.Event
	dropped atomic.Int64
}

func newEventLog() *eventLogOf { return &eventLogOf{heard: make(chan framework.Event, 1024)} }

func (l *eventLogOf) Event(e framework.Event) {
	select {
	case l.heard <- e:
	default:
		l.dropped.Add(1)
	}
}

// next returns the next n events of recipes (state changes and retries
// skipped), as "kind recipe" strings.
func (l *eventLogOf) next(t *testing.T, n int) []framework.Event {
	t.Helper()
	var got []framework.Event
	for len(got) < n {
		if d := l.dropped.Load(); d > 0 {
			t.Fatalf("the event log dropped %d events: its buffer is too small", d)
		}
		e := testutil.Recv(t, l.heard, fmt.Sprintf("event %d of %d", len(got)+1, n))
		if recipeOf(e) != "" {
			got = append(got, e)
		}
	}
	return got
}

func kinds(es []framework.Event) string {
	var s []string
	for _, e := range es {
		s = append(s, e.Kind.String()+" "+recipeOf(e))
	}
	return strings.Join(s, ", ")
}

// Every recipe tells its client's event hook what happens to it, in order:
// a mutex's acquire (with its place in the queue, behind a holder) and
// release, a lease's, a read-write owner's write lock, downgrade and
// releases, a latch's term, a selector's acquisition and term; and a loss,
// at a fault proxy, after the SUSPENDED that caused it.
func TestEventsOfEveryRecipe(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	log := newEventLog()
	c := newClient(t, "", framework.WithEventHook(log))
	expect := func(want string, n int, check func([]framework.Event) error) {
		t.Helper()
		got := log.next(t, n)
		if kinds(got) != want {
			t.Fatalf("events\n got %s\nwant %s", kinds(got), want)
		}
		if check != nil {
			if err := check(got); err != nil {
				t.Fatal(err)
			}
		}
	}

	holder := mustMutex(t, newClient(t, ""), base+"/mutex").NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	h := mustMutex(t, c, base+"/mutex").NewHandle()
	acquired := make(chan error, 1)
	go func() { acquired <- h.Acquire(ctx) }()
	expect("acquire-started mutex", 1, nil)
	waitForChildren(t, c, base+"/mutex", 2) // queued behind the holder
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, acquired, "the waiter's acquire"); err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	expect("acquired mutex, released mutex", 2, func(es []framework.Event) error {
		if a := es[0]; positionOf(a) != 1 || a.Node == "" || a.Path != base+"/mutex" || a.Session != c.SessionID() || a.Wait <= 0 {
			return fmt.Errorf("acquired: %+v, want position 1 behind the holder, the node, the session, a wait", a)
		}
		if es[1].Hold <= 0 || es[1].Node != es[0].Node {
			return fmt.Errorf("released: %+v", es[1])
		}
		return nil
	})

	lease, err := mustSemaphore(t, c, base+"/sem", 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Close(ctx); err != nil {
		t.Fatal(err)
	}
	expect("acquire-started semaphore, acquired semaphore, released semaphore", 3, nil)

	rw := mustRW(t, c, base+"/rw").NewHandle()
	for _, step := range []func(context.Context) error{rw.WriteLock().Acquire, rw.ReadLock().Acquire, rw.WriteLock().Release, rw.ReadLock().Release} {
		if err := step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	expect("acquire-started write, acquired write, acquire-started read, acquired read, released write, released read", 6, nil)

	latch := mustLatch(t, c, base+"/latch", "x")
	if err := latch.Start(); err != nil {
		t.Fatal(err)
	}
	if err := latch.Await(ctx); err != nil {
		t.Fatal(err)
	}
	if err := latch.Close(); err != nil {
		t.Fatal(err)
	}
	expect("leadership-gained latch, leadership-lost latch", 2, func(es []framework.Event) error {
		if es[1].Err != nil || es[1].Hold <= 0 {
			return fmt.Errorf("a latch closed while it led: %+v, want no error and its term's length", es[1])
		}
		return nil
	})

	led := make(chan struct{})
	sel, err := recipes.NewLeaderSelector(c, base+"/selector", func(context.Context) error { close(led); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, led, "the selector's term")
	expect("acquire-started selector, acquired selector, leadership-gained selector, leadership-lost selector, released selector", 5, nil)
	if err := sel.Close(); err != nil {
		t.Fatal(err)
	}

	// A loss at a fault proxy: SUSPENDED first, then the lock's loss, with
	// the state that caused it.
	proxy := zktest.NewProxy(t, server.Addr())
	plog := newEventLog()
	pc := newClient(t, proxy.Addr(), framework.WithEventHook(plog))
	ph := mustMutex(t, pc, base+"/lost").NewHandle()
	if err := ph.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	proxy.DropConnections()
	var order []string
	for len(order) == 0 || order[len(order)-1] != "lost" {
		e := testutil.Recv(t, plog.heard, "the loss's events")
		switch {
		case e.Kind == framework.StateChanged && e.State == state.Suspended:
			order = append(order, "suspended")
		case recipeOf(e) != "":
			order = append(order, e.Kind.String())
			var se *framework.StateError
			if e.Kind == recipes.Lost && (!errors.As(e.Err, &se) || se.State != state.Suspended || e.Hold <= 0) {
				t.Fatalf("lost: %+v, want the SUSPENDED that caused it and the hold", e)
			}
		}
	}
	if got := strings.Join(order, " "); got != "acquire-started acquired suspended lost" {
		t.Fatalf("events around the loss: %s", got)
	}
	testutil.ErrorIs(t, ph.Release(ctx), recipes.ErrLockLost)
}

// The uncontended cycle of BenchmarkMutexAcquireRelease with an event hook
// set (one that counts what it hears), for the cost of events when someone
// hears them; without a hook they cost a check (BenchmarkMutexAcquireRelease,
// TestUncontendedCycleAllocations).
func BenchmarkMutexAcquireReleaseWithEventHook(b *testing.B) {
	base := testutil.Path(b)
	testutil.CleanupTree(b, server.Addr(), base)
	var heard atomic.Int64
	c := newClient(b, "", framework.WithEventHook(framework.EventFunc(func(framework.Event) { heard.Add(1) })))
	h := mustMutex(b, c, base).NewHandle()
	acquireRelease(b, context.Background(), h)
	acquireReleaseLoop(context.Background(), b, h)
}

// A loss is logged at INFO with nothing but an INFO logger: no hook, no
// DEBUG (Observed is false), and still the holder's loss is told.
func TestALossIsLoggedAtInfoWithoutAHook(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	core, logs := observer.New(zap.InfoLevel)
	c := newClient(t, "", framework.WithLogger(zap.New(core)))
	h := mustMutex(t, c, base).NewHandle()
	testutil.Must(t, h.Acquire(ctx))
	testutil.Must(t, rawConn(t).Delete(h.LockPath(), -1))
	if _, err := h.FencingToken(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("FencingToken of a deleted node = %v, want ErrLockLost", err)
	}
	if err := h.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("Release after the loss = %v, want ErrLockLost", err)
	}
	testutil.Must(t, c.Close()) // what was logged before Close is written by then
	if n := logs.FilterMessage("lost").Len(); n != 1 {
		t.Fatalf("%d INFO lines of the loss, want 1 (all: %v)", n, logs.All())
	}
}

// recipeOf is the recipe kind e, a recipe's event, names ("" for the
// client's own events).
func recipeOf(e framework.Event) string {
	d, _ := recipes.LockEventOf(e)
	return d.Recipe
}

// positionOf is the place in the queue an Acquired event names.
func positionOf(e framework.Event) int {
	d, _ := recipes.LockEventOf(e)
	return d.Position
}
