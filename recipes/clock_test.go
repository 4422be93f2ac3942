package recipes_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// The promises of the client's clock (framework/clock.go) as a holder and a
// rival see them, at several session timeouts T, for idle and busy
// holders, through a black hole and a slow server. The cases run in
// parallel: they mostly wait.
var clockTimeouts = []time.Duration{2 * time.Second, 4 * time.Second, 10 * time.Second}

// beginParallel is testutil.Begin for a subtest run in parallel with
// others: its parent checks for leaks (testutil.CheckLeaks, in the parent),
// since the other subtests' goroutines still run when this one ends.
func beginParallel(t *testing.T) (context.Context, string) {
	t.Helper()
	t.Parallel()
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	return testutil.Context(t), base
}

// holderLoad is what the holder's client does while it holds, and the
// fault that then cuts it off.
type holderLoad struct {
	name  string
	busy  bool // reads one after another while it holds; else idle (pings only)
	fault func(p *zktest.Proxy, T time.Duration) (heal func())
}

var holderLoads = []holderLoad{
	{"idle/black hole", false, blackHole},
	{"busy/black hole", true, blackHole},
	{"idle/slow server", false, slowServer},
}

// blackHole cuts the proxy off; the heal restores it.
func blackHole(p *zktest.Proxy, _ time.Duration) func() {
	p.BlackHole()
	return p.Restore
}

// slowServer delays every answer by T/2: the requests still reach the
// server, which renews the session, but the client learns of it too late
// to be sure of its margin.
func slowServer(p *zktest.Proxy, T time.Duration) func() {
	p.SetDelays(0, T/2)
	return func() { p.SetDelays(0, 0) }
}

// readOn reads "/" through c, one read after another, until the test ends.
func readOn(t *testing.T, c *framework.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for ctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(ctx, 20*time.Millisecond)
			_, _, _ = c.Exists(rctx, "/")
			rcancel()
		}
	}()
	t.Cleanup(func() {
		cancel()
		testutil.Wait(t, &wg, "the busy reader")
	})
}

// settle lets the holder's client run as it will for a while before the
// fault: until the proxy has forwarded pings, a ping having just gone
// (idle: about 1.2 T of heartbeats; busy: four of go-zookeeper's own).
func settle(ctx context.Context, t *testing.T, p *zktest.Proxy, busy bool) {
	t.Helper()
	n := int64(12)
	if busy {
		n = 4
	}
	if err := p.WaitRequests(ctx, zktest.OpPing, p.Requests(zktest.OpPing)+n); err != nil {
		t.Fatal(err)
	}
}

// A holder under the Standard policy is told of trouble at least T/3
// before a rival on another client holds its lock, however idle its client
// (the docs' promise; before the client kept its own clock, an idle holder
// was told milliseconds before). The network comes back as soon as the
// holder is told; the library deletes the lost lock's node once the
// servers could have expired the session, and the rival, waiting all
// along, holds then.
func TestHolderToldAThirdBeforeARivalHolds(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, T := range clockTimeouts {
		for _, l := range holderLoads {
			t.Run(fmt.Sprintf("T=%v/%s", T, l.name), func(t *testing.T) {
				ctx, base := beginParallel(t)
				proxy := zktest.NewProxy(t, server.Addr())
				c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(T))
				h := mustMutex(t, c, base).NewHandle()
				if err := h.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
				rival := mustMutex(t, newClient(t, ""), base).NewHandle()
				held := make(chan time.Time, 1)
				go func() { // ends with the test's context at the latest
					if err := rival.Acquire(ctx); err == nil {
						held <- time.Now()
					}
					close(held)
				}()
				testutil.WaitChildren(t, rawConn(t), base, 2)
				if l.busy {
					readOn(t, c)
				}
				settle(ctx, t, proxy, l.busy)
				heal := l.fault(proxy, T)
				faulted := time.Now()
				<-h.Done()
				told := time.Now()
				heal()
				heldAt, ok := <-held
				if !ok {
					t.Fatalf("the rival never held: %v", ctx.Err())
				}
				margin := heldAt.Sub(told)
				t.Logf("T=%v %s: told %v after the fault began; the rival held %v later (%.2f T)",
					T, l.name, told.Sub(faulted).Round(time.Millisecond), margin.Round(time.Millisecond), float64(margin)/float64(T))
				if margin < T/3 {
					t.Errorf("the rival held %v after the holder was told, want at least T/3 = %v", margin, T/3)
				}
				if err := rival.Release(ctx); err != nil {
					t.Fatal(err)
				}
				releaseLost(ctx, t, h)
			})
		}
	}
}

// A blip of T/2 on an idle client under the Session policy, the network
// back at its end, keeps the session, and so the client's lock and its
// latch's leadership: a rival waiting on another client neither holds nor
// leads (Curator's behaviour; before the client kept its own clock it gave
// the session up at every such blip). Black-holed just after a ping went
// to the server, the worst moment.
func TestSessionPolicyKeepsLockAndLeadershipThroughABlip(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, T := range clockTimeouts {
		t.Run(fmt.Sprint("T=", T), func(t *testing.T) {
			ctx, base := beginParallel(t)
			proxy := zktest.NewProxy(t, server.Addr())
			rec := testutil.NewStateRecorder()
			c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(T),
				framework.WithErrorPolicy(state.SessionErrorPolicy{}), framework.WithListener(rec))
			h := mustMutex(t, c, base+"/lock").NewHandle()
			if err := h.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			latch := startLatch(t, c, base+"/latch")
			if err := latch.Await(ctx); err != nil {
				t.Fatal(err)
			}
			other := newClient(t, "")
			rivalLatch := startLatch(t, other, base+"/latch")
			rival := mustMutex(t, other, base+"/lock").NewHandle()
			rivalCtx, stopRival := context.WithCancel(ctx)
			rivalDone := make(chan error, 1)
			go func() { rivalDone <- rival.Acquire(rivalCtx) }()
			testutil.WaitChildren(t, rawConn(t), base+"/lock", 2)
			session := c.SessionID()

			settle(ctx, t, proxy, false)
			proxy.BlackHole()
			blip := time.NewTimer(T / 2) // the fault's length: the scenario, not a wait for the library
			<-blip.C
			proxy.Restore()
			rec.WaitFor(ctx, t, state.Suspended)
			rec.WaitFor(ctx, t, state.Reconnected)
			if err := rec.Equal(state.Connected, state.Suspended, state.Reconnected); err != nil {
				t.Fatal(err)
			}
			if c.SessionID() != session {
				t.Fatalf("the blip changed the session from %x to %x", session, c.SessionID())
			}
			if err := h.Err(); err != nil {
				t.Fatalf("the lock was lost in a blip of T/2: %v", err)
			}
			if err := latch.Err(); err != nil || rivalLatch.HasLeadership() {
				t.Fatalf("the latch lost its leadership in a blip of T/2: %v (the rival leads: %v)", err, rivalLatch.HasLeadership())
			}
			select {
			case err := <-rivalDone:
				t.Fatalf("the rival's acquire ended (%v) while the lock was kept", err)
			default:
			}
			t.Logf("T=%v: lock and leadership kept through a blip of %v", T, T/2)
			stopRival()
			<-rivalDone
			if err := h.Release(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// startLatch starts a latch at path on c and closes it when the test ends.
func startLatch(t *testing.T, c *framework.Client, path string) *recipes.LeaderLatch {
	t.Helper()
	l, err := recipes.NewLeaderLatch(c, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
