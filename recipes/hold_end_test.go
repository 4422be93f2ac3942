package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// endCounter is an event hook that counts, per lock node, the events of its
// acquisition (acquired, released, lost), in order, and keeps the gauges a
// metrics backend builds on the events: waiters (started less acquired and
// failed) and holders (acquired less released and lost).
type endCounter struct {
	mu      sync.Mutex
	byNode  map[string][]framework.EventKind
	waiters int
	holders int
}

func newEndCounter() *endCounter { return &endCounter{byNode: map[string][]framework.EventKind{}} }

// blipClient is a client behind a proxy of its own, whose blips (a dropped
// connection) keep its session (10 s), with a recorder of its states and
// an endCounter of its events.
func blipClient(t *testing.T) (*zktest.Proxy, *testutil.StateRecorder, *endCounter, *framework.Client) {
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	count := newEndCounter()
	c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(10*time.Second), framework.WithListener(rec),
		framework.WithEventHook(count))
	return proxy, rec, count, c
}

func (c *endCounter) Event(e framework.Event) {
	if recipeOf(e) == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e.Kind {
	case recipes.AcquireStarted:
		c.waiters++
	case recipes.AcquireFailed:
		c.waiters--
	case recipes.Acquired:
		c.waiters--
		c.holders++
	case recipes.Released, recipes.Lost:
		c.holders--
	default:
		return
	}
	if e.Node != "" {
		c.byNode[e.Node] = append(c.byNode[e.Node], e.Kind)
	}
}

// nodes returns how many lock nodes the events named.
func (c *endCounter) nodes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byNode)
}

// check returns what is wrong with the events heard so far: a node whose
// events are not "acquired" then exactly one of want (of released and lost),
// or gauges not back at zero.
func (c *endCounter) check(want ...framework.EventKind) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var bad []string
	for node, kinds := range c.byNode {
		ok := len(kinds) == 2 && kinds[0] == recipes.Acquired
		if ok {
			ok = false
			for _, w := range want {
				ok = ok || kinds[1] == w
			}
		}
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: %v", node[strings.LastIndex(node, "/")+1:], kinds))
		}
	}
	sort.Strings(bad)
	if c.waiters != 0 || c.holders != 0 {
		bad = append(bad, fmt.Sprintf("gauges: %d waiters, %d holders", c.waiters, c.holders))
	}
	return strings.Join(bad, "; ")
}

// The loss of a lock and its owner's release race (`<-h.Done();
// h.Release(ctx)`, the pattern the README shows): whichever comes first,
// every acquisition ends once, told once, after its Acquired. Each round
// holds 20 locks of one client and drops its connection (a blip: SUSPENDED
// ends the trust, the session is kept); 10 rounds make 200 races. Each
// holder's releaser waits on Done and releases at once, racing the loss's
// follower of the trust, while an observer waits on Done and reads Err:
// both must learn of the loss (Done closes only at the loss), and the hook
// must hear exactly one Lost per node. The gauges built on the events are
// back at zero once the client is closed.
func TestLossRacingReleaseIsToldOnce(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy, rec, count, c := blipClient(t)
	const locks, rounds = 20, 10
	handles := make([]*recipes.Handle, locks)
	for i := range handles {
		handles[i] = mustMutex(t, c, fmt.Sprintf("%s/l%02d", base, i)).NewHandle()
	}
	session := c.SessionID()
	for round := 0; round < rounds; round++ {
		runAll(t, locks, func(i int) error { return handles[i].Acquire(ctx) })
		results := make(chan error, 2*locks)
		var ends sync.WaitGroup
		for _, h := range handles {
			ends.Add(2)
			go func() { // the releaser
				defer ends.Done()
				<-h.Done()
				if err := h.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
					results <- fmt.Errorf("release after the loss = %v, want ErrLockLost", err)
				}
			}()
			go func() { // the observer
				defer ends.Done()
				<-h.Done()
				if err := h.Err(); !errors.Is(err, recipes.ErrLockLost) {
					results <- fmt.Errorf("Err after Done = %v, want ErrLockLost whatever the release did", err)
				}
			}()
		}
		proxy.DropConnections()
		testutil.Wait(t, &ends, "the releasers and observers")
		close(results)
		for err := range results { // reported, and the events still counted
			t.Errorf("round %d: %v", round, err)
		}
		rec.WaitFor(ctx, t, state.Reconnected)
		if c.SessionID() != session {
			t.Fatalf("round %d: the session changed: the test wants blips", round)
		}
	}
	noEphemeralsLeft(t, base, "every lost node deleted in the background after its release")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, "each of the 200 acquisitions ended once, with Lost", func() (bool, string) {
		bad := count.check(recipes.Lost)
		return bad == "" && count.nodes() == locks*rounds, fmt.Sprintf("%d nodes heard; %s", count.nodes(), bad)
	})
}

// Held locks, released, lost and released, and held at Close: the gauges
// built on the events come back to zero, and every acquisition ends once.
func TestGaugesBalanceAfterBlipsReleasesAndClose(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy, rec, count, c := blipClient(t)
	m := mustMutex(t, c, base)
	released, lostOne, atClose := m.NewHandle(), m.NewHandle(), mustMutex(t, c, base+"/other").NewHandle()
	testutil.Must(t, released.Acquire(ctx))
	testutil.Must(t, released.Release(ctx))
	testutil.Must(t, lostOne.Acquire(ctx))
	proxy.DropConnections()
	waitClosed(ctx, t, lostOne.Done(), "Done after the blip")
	rec.WaitFor(ctx, t, state.Reconnected)
	testutil.ErrorIs(t, lostOne.Release(ctx), recipes.ErrLockLost)
	testutil.Must(t, atClose.Acquire(ctx))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	testutil.ErrorIs(t, mustMutex(t, c, base+"/other").NewHandle().Acquire(short), context.DeadlineExceeded) // behind atClose
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Until(t, "every acquisition ended once and the gauges at zero", func() (bool, string) {
		bad := count.check(recipes.Released, recipes.Lost)
		return bad == "" && count.nodes() == 3, fmt.Sprintf("%d nodes heard; %s", count.nodes(), bad)
	})
}

// A holder told of a loss while no server answers releases at once: the
// release says ErrLockLost and sends nothing that waits for a server, even
// under a retry policy that would wait for minutes (today's contract for a
// release of a held lock), and the node is deleted in the background once a
// server answers, before the servers' own expiry would have let it go.
func TestReleaseAfterLossWaitsForNoServer(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	count := newEndCounter()
	rec := testutil.NewStateRecorder()
	c, err := framework.New(proxy.Addr(), retry.NewNTimes(1000, 10*time.Millisecond),
		framework.WithSessionTimeout(20*time.Second), framework.WithConnectionTimeout(2*time.Second),
		framework.WithEventHook(count), framework.WithListener(rec))
	testutil.Must(t, err)
	t.Cleanup(func() { c.Close() })
	testutil.Must(t, c.BlockUntilConnected(ctx))
	for _, k := range ownerKinds() {
		t.Run(k.name, func(t *testing.T) {
			o := k.make(t, c, base+"/"+strings.ReplaceAll(k.name, " ", "-"))
			testutil.Must(t, o.Acquire(ctx))
			session := c.SessionID()
			proxy.BlackHole()
			proxy.DropConnections() // SUSPENDED at once; no server answers from now on
			waitClosed(ctx, t, o.Done(), "Done after SUSPENDED")
			var se *framework.StateError
			if err := o.Err(); !errors.As(err, &se) || !time.Now().Before(se.ExpiryBound) {
				t.Fatalf("Err = %v: the test wants to release before the servers could expire the session", err)
			}
			released := make(chan error, 1)
			go func() { released <- o.Release(context.Background()) }()
			testutil.ErrorIs(t, testutil.Recv(t, released, "the release of the lost lock, while no server answers"), recipes.ErrLockLost)
			testutil.ErrorIs(t, o.Err(), recipes.ErrLockLost)
			proxy.Restore()
			rec.WaitFor(ctx, t, state.Reconnected)
			if c.SessionID() != session {
				t.Fatal("the session changed: the test wants the node to outlive the outage")
			}
			noEphemeralsLeft(t, base, "the lost node deleted once a server answers")
			if !time.Now().Before(se.ExpiryBound) {
				t.Fatalf("the node went %v after the servers could have expired the session: the release did not bring its delete forward",
					time.Since(se.ExpiryBound))
			}
		})
	}
	testutil.Until(t, "one Lost per acquisition", func() (bool, string) {
		bad := count.check(recipes.Lost)
		return bad == "", bad
	})
}

// A hook too slow for the events (here: blocked until the test opens it)
// while thousands of acquisitions come and go: the client drops what it
// must, but never the end of an acquisition whose start it kept, and drops
// every event of an acquisition whose start it dropped. So the gauges built
// on the events are back at zero once the hook catches up.
func TestOverflowingHookKeepsTheGaugesTrue(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	count := newEndCounter()
	open := make(chan struct{})
	c := newClient(t, "", framework.WithEventHook(framework.EventFunc(func(e framework.Event) {
		<-open
		count.Event(e)
	})))
	t.Cleanup(func() {
		select {
		case <-open:
		default:
			close(open) // before the client's Close, which tells what is left
		}
	})
	h := mustMutex(t, c, base).NewHandle()
	const cycles = 3500 // 10,500 events: more than the client keeps for a slow hook
	testutil.Must(t, lockRounds(ctx, h, cycles, func(int) error { return nil }))
	if c.EventsDropped() == 0 {
		t.Fatal("nothing was dropped: the test wants the hook too slow")
	}
	dropped := int(c.EventsDropped()) // each an acquisition's start, and so the whole acquisition
	close(open)
	testutil.Until(t, "every acquisition whose start was kept told whole, and the gauges at zero", func() (bool, string) {
		bad := count.check(recipes.Released)
		n := count.nodes()
		return bad == "" && n == cycles-dropped, fmt.Sprintf("%d of %d acquisitions heard; %s", n, cycles-dropped, bad)
	})
	t.Logf("%d of %d acquisitions told, %d events dropped", cycles-dropped, cycles, dropped)
}
