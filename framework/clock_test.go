package framework

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/internal/zkconn"
	"github.com/gocurator/curator/state"
)

// The client's clock on its session (clock.go), measured at several session
// timeouts, on idle and busy clients. Each case runs in parallel with the
// others: they wait, mostly.
var clockTimeouts = []time.Duration{2 * time.Second, 4 * time.Second, 10 * time.Second}

// beginParallel is testutil.Begin for a subtest run in parallel with
// others: its parent checks for leaks (testutil.CheckLeaks, in the parent,
// before its subtests), as goroutines of the other subtests are still
// running when this one ends.
func beginParallel(t *testing.T) context.Context {
	t.Helper()
	t.Parallel()
	testutil.CleanupTree(t, server.Addr(), testutil.Path(t))
	return testutil.Context(t)
}

// timedStates is a state listener that keeps when it heard each state.
type timedStates struct {
	mu      sync.Mutex
	states  []state.ConnectionState
	at      []time.Time
	changed chan struct{}
}

func newTimedStates() *timedStates { return &timedStates{changed: make(chan struct{})} }

func (r *timedStates) StateChanged(s state.ConnectionState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states, r.at = append(r.states, s), append(r.at, time.Now())
	close(r.changed)
	r.changed = make(chan struct{})
}

// wait waits for the n-th state heard (from 1) and returns it with its time.
func (r *timedStates) wait(ctx context.Context, t *testing.T, n int) (state.ConnectionState, time.Time) {
	t.Helper()
	for {
		r.mu.Lock()
		if len(r.states) >= n {
			s, at := r.states[n-1], r.at[n-1]
			r.mu.Unlock()
			return s, at
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for state #%d: %v; heard %v", n, ctx.Err(), r.String())
		}
	}
}

// String lists the states with their times since the first.
func (r *timedStates) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := ""
	for i := range r.states {
		s += fmt.Sprintf(" %v@%v", r.states[i], r.at[i].Sub(r.at[0]).Round(time.Millisecond))
	}
	return s
}

// load is how a clock case keeps its client busy, or not.
type load string

const (
	idle load = "idle" // the client sends nothing of its own: pings only
	busy load = "busy" // a read after another, all along
)

// keepBusy reads "/" through c, one read after another, until the test
// ends; the reads' errors (once the proxy is cut off) do not matter.
func keepBusy(t *testing.T, c *Client) {
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

// idleFor waits until the proxy has forwarded n more pings than it had:
// the client has been idle, but for its pings, for about n heartbeats, and
// a ping has just gone to the server (its answer is on its way).
func idleFor(ctx context.Context, t *testing.T, proxy *zktest.Proxy, n int64) {
	t.Helper()
	if err := proxy.WaitRequests(ctx, zktest.OpPing, proxy.Requests(zktest.OpPing)+n); err != nil {
		t.Fatal(err)
	}
}

// Under the Standard policy a holder is told of a silence at least T/3
// before the servers could expire its session (the grant's StateError's
// ExpiryBound: a lock lost then has its node deleted no sooner), however
// idle its client, and no later than go-zookeeper's read timeout (⅔ T
// after the last bytes heard) would have told it. Black-holed right after
// a ping went to the server (its answer is lost), the worst moment for an
// idle client: its last sure renewal is the heartbeat before.
func TestClockToldAThirdBeforeExpiry(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, T := range clockTimeouts {
		for _, l := range []load{idle, busy} {
			t.Run(fmt.Sprintf("T=%v/%s", T, l), func(t *testing.T) {
				ctx := beginParallel(t)
				proxy := zktest.NewProxy(t, server.Addr())
				c := newClient(t, proxy.Addr(), WithSessionTimeout(T))
				pings := int64(12) // idle: a little more than T at the heartbeat's pace
				if l == busy {
					keepBusy(t, c)
					pings = 4 // go-zookeeper's own, T/3 apart: the heartbeat sends none
				}
				idleFor(ctx, t, proxy, pings)
				trust, _ := c.Trust()
				proxy.BlackHole()
				lastReply := proxy.LastReply()
				<-trust.Done()
				told := time.Now()
				var se *StateError
				if !errors.As(context.Cause(trust), &se) || se.State != state.Suspended || se.ExpiryBound.IsZero() {
					t.Fatalf("the trust ended with %v, want SUSPENDED with an expiry bound", context.Cause(trust))
				}
				margin, sinceReply := se.ExpiryBound.Sub(told), told.Sub(lastReply)
				t.Logf("T=%v %s: told %v after the last reply (go-zookeeper: %v), %v (%.2f T) before the servers could expire the session",
					T, l, sinceReply.Round(time.Millisecond), (2 * T / 3).Round(time.Millisecond), margin.Round(time.Millisecond), float64(margin)/float64(T))
				if margin < T/3 {
					t.Errorf("told %v before the servers could expire the session, want at least T/3 = %v", margin, T/3)
				}
				if sinceReply > 2*T/3 {
					t.Errorf("told %v after the last reply, later than go-zookeeper's read timeout (%v)", sinceReply, 2*T/3)
				}
				proxy.Restore()
			})
		}
	}
}

// A blip of T/2 on an idle client, the network back at its end, does not
// end the session, under either policy: SUSPENDED, then RECONNECTED in the
// same session, no LOST, and under the Session policy the trust lives on.
// Black-holed right after a ping went to the server (its answer lost), the
// worst moment: the last sure renewal is the heartbeat before, and LOST
// would come soonest.
func TestClockIdleSessionOutlivesABlip(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, T := range clockTimeouts {
		for _, policy := range []state.ErrorPolicy{state.StandardErrorPolicy{}, state.SessionErrorPolicy{}} {
			t.Run(fmt.Sprintf("T=%v/%T", T, policy), func(t *testing.T) {
				ctx := beginParallel(t)
				proxy := zktest.NewProxy(t, server.Addr())
				rec := newTimedStates()
				c := newClient(t, proxy.Addr(), WithSessionTimeout(T), WithErrorPolicy(policy), WithListener(rec))
				rec.wait(ctx, t, 1)
				session := c.SessionID()
				idleFor(ctx, t, proxy, 12)
				trust, _ := c.Trust()
				proxy.BlackHole()
				start := time.Now()
				blip := time.NewTimer(T / 2) // the fault's length: the scenario, not a wait for the library
				select {
				case <-blip.C:
				case <-ctx.Done():
					blip.Stop()
					t.Fatal(ctx.Err())
				}
				proxy.Restore()
				s2, suspended := rec.wait(ctx, t, 2)
				s3, back := rec.wait(ctx, t, 3)
				t.Logf("T=%v %T: blip of %v; states%s; SUSPENDED %v into the blip, RECONNECTED %v after it",
					T, policy, T/2, rec, suspended.Sub(start).Round(time.Millisecond), back.Sub(start.Add(T/2)).Round(time.Millisecond))
				if s2 != state.Suspended || s3 != state.Reconnected {
					t.Fatalf("states%s, want CONNECTED SUSPENDED RECONNECTED", rec)
				}
				if c.SessionID() != session {
					t.Fatalf("the blip changed the session from %x to %x", session, c.SessionID())
				}
				if _, ok := policy.(state.SessionErrorPolicy); ok && trust.Err() != nil {
					t.Fatalf("the blip ended the trust under the Session policy: %v", context.Cause(trust))
				}
				if _, _, err := c.Exists(ctx, "/"); err != nil {
					t.Fatal(err)
				}
				if err := statesAre(rec, state.Connected, state.Suspended, state.Reconnected); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// A server whose answers all come late (a slow server: replies delayed by
// T/2) leaves the client no sure renewal recent enough for the Standard
// policy's margin: the clock says SUSPENDED, though go-zookeeper, which
// still reads bytes, keeps the connection. Once the answers come in time
// again, the clock says RECONNECTED on that same connection, in the same
// session, and neither LOST nor a new connection came in between.
func TestClockSuspendsASlowServerAndTakesItBack(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, T := range clockTimeouts[:2] {
		t.Run(fmt.Sprint("T=", T), func(t *testing.T) {
			ctx := beginParallel(t)
			proxy := zktest.NewProxy(t, server.Addr())
			rec := newTimedStates()
			c := newClient(t, proxy.Addr(), WithSessionTimeout(T), WithErrorPolicy(state.SessionErrorPolicy{}), WithListener(rec))
			rec.wait(ctx, t, 1)
			session, dials := c.SessionID(), c.zk().Dials().Count
			trust, _ := c.Trust()
			proxy.SetDelays(0, T/2)
			rec.wait(ctx, t, 2)
			proxy.SetDelays(0, 0)
			undelayed := time.Now()
			_, back := rec.wait(ctx, t, 3)
			t.Logf("T=%v: states%s; RECONNECTED %v after the delay ended", T, rec, back.Sub(undelayed).Round(time.Millisecond))
			if err := statesAre(rec, state.Connected, state.Suspended, state.Reconnected); err != nil {
				t.Fatal(err)
			}
			if c.SessionID() != session || c.zk().Dials().Count != dials {
				t.Fatalf("session %x (was %x), %d dials ended (was %d): want the same session on the same connection",
					c.SessionID(), session, c.zk().Dials().Count, dials)
			}
			if trust.Err() != nil {
				t.Fatalf("the slow server ended the trust under the Session policy: %v", context.Cause(trust))
			}
		})
	}
}

// statesAre reports whether r heard exactly want.
func statesAre(r *timedStates, want ...state.ConnectionState) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if fmt.Sprint(r.states) != fmt.Sprint(want) {
		return fmt.Errorf("states %v, want %v", r.states, want)
	}
	return nil
}

// The heartbeat goes only where nothing else did: an idle client's pings
// come about every tenth of the session timeout, a busy client's no more
// often than go-zookeeper's own (a third of it).
func TestClockHeartbeatOnlyWhenIdle(t *testing.T) {
	testutil.CheckLeaks(t)
	const T = 2 * time.Second
	for _, l := range []load{idle, busy} {
		t.Run(string(l), func(t *testing.T) {
			ctx := beginParallel(t)
			proxy := zktest.NewProxy(t, server.Addr())
			c := newClient(t, proxy.Addr(), WithSessionTimeout(T))
			if l == busy {
				keepBusy(t, c)
				if err := proxy.WaitRequests(ctx, zktest.OpExists, proxy.Requests(zktest.OpExists)+10); err != nil {
					t.Fatal(err)
				}
			}
			pings, reads := proxy.Requests(zktest.OpPing), proxy.Requests(zktest.OpExists)
			window := time.NewTimer(2 * T) // the span measured: the scenario, not a wait for the library
			<-window.C
			pings, reads = proxy.Requests(zktest.OpPing)-pings, proxy.Requests(zktest.OpExists)-reads
			t.Logf("%s for 2T: %d pings, %d reads (heartbeat every %v, go-zookeeper's ping every %v)",
				l, pings, reads, zkconn.HeartbeatInterval(T), T/3)
			switch l {
			case idle:
				if want := int64(2*T/zkconn.HeartbeatInterval(T)) - 3; pings < want {
					t.Fatalf("an idle client sent %d pings in 2T, want at least %d (one a heartbeat interval)", pings, want)
				}
			case busy:
				if most := int64(2*T/(T/3)) + 1; pings > most {
					t.Fatalf("a busy client (%d reads) sent %d pings in 2T, more than go-zookeeper's own (%d)", reads, pings, most)
				}
			}
		})
	}
}
