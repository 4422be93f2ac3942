package framework

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
)

// idleRunners is how many runners the client keeps now.
func (c *Client) idleRunners() int {
	c.runners.mu.Lock()
	defer c.runners.mu.Unlock()
	return len(c.runners.idle)
}

// Calls whose context can end run on the client's runners, which are reused:
// one after the other, they all take the same one; at once, each takes one,
// and the pool keeps at most maxIdleRunners of them. Close ends them all
// (CheckLeaks).
func TestRunnersAreReused(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, _, err := c.Exists(ctx, base); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.idleRunners(); n != 1 {
		t.Fatalf("%d idle runners after calls one after the other, want 1", n)
	}
	const many = 2 * maxIdleRunners
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range many {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, _, err := c.Exists(ctx, base); err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := c.idleRunners(); n < 1 || n > maxIdleRunners {
		t.Fatalf("%d idle runners after %d calls at once, want 1 to %d", n, many, maxIdleRunners)
	}
	// a context that cannot end runs the call on the caller's goroutine
	before := c.idleRunners()
	if _, _, err := c.Exists(context.Background(), base); err != nil {
		t.Fatal(err)
	}
	if n := c.idleRunners(); n != before {
		t.Fatalf("a call with context.Background took a runner: %d idle, was %d", n, before)
	}
	c.Close()
	if n := c.idleRunners(); n != 0 {
		t.Fatalf("%d idle runners after Close", n)
	}
}

// A call that its context cuts short returns at once with the context's
// error, while its runner carries on with it; when it ends, its result is
// dropped and whoever waits for it (here, the clean-up of a protected create
// that failed) hears so. The hook that holds the call is a test hook the
// call runs on its runner.
func TestContextCutsACallShort(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	c := newClient(t, "")
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	cut, cancel := context.WithCancel(ctx)
	defer cancel()
	release := make(chan struct{})
	var releaseOnce sync.Once
	letGo := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before the client's Close, which waits for the call, if the test fails first
	c.cfg.beforeParentCreate = func(string) {
		cancel() // the call is under way: cut it short
		<-release
	}
	parent := base + "/a"
	_, err := c.Create(cut, parent+"/lock-", nil, WithMode(EphemeralSequential), WithProtection(), CreatingParentsIfNeeded())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Create cut short = %v, want context.Canceled", err)
	}
	letGo()     // the abandoned create goes on: the parent, then the node
	c.bg.Wait() // then the clean-up, which waited for it, deletes the node
	kids, _, err := raw.Children(parent)
	if err != nil || len(kids) != 0 {
		t.Fatalf("after the clean-up: children %v, %v; want none", kids, err)
	}
	if _, _, err := c.GetData(ctx, parent); err != nil {
		t.Fatalf("GetData after the cut = %v", err)
	}
}

// Contexts that end around the time their calls do: each call returns either
// its result or its context's error, never a result another call wrote, and
// the runners survive it all (the race detector watches the hand-over).
func TestContextsEndingAsCallsDo(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	if _, err := c.Create(ctx, base, []byte("data")); err != nil {
		t.Fatal(err)
	}
	// Each goroutine reads a node of its own, whose data is its number, so
	// a result handed to the wrong call shows.
	for i := range 8 {
		if _, err := c.Create(ctx, base+"/"+strconv.Itoa(i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(i), 1))
			own, want := base+"/"+strconv.Itoa(i), strconv.Itoa(i)
			for range 50 {
				cctx, cancel := context.WithTimeout(ctx, time.Duration(r.IntN(1500))*time.Microsecond)
				data, _, err := c.GetData(cctx, own)
				cancel()
				switch {
				case err == nil && string(data) != want:
					t.Errorf("GetData(%s) = %q, want %q", own, data, want)
				case err != nil && !errors.Is(err, context.DeadlineExceeded):
					t.Errorf("GetData = %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if _, _, err := c.GetData(ctx, base); err != nil {
		t.Fatal(err)
	}
}

// A call whose context can end costs, beyond go-zookeeper's own
// allocations, the job it hands to a runner and little else; with a context
// that cannot end, it runs inline.
func TestCallAllocations(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	raw := testutil.Connect(t, server.Addr())
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	rawAllocs := testing.AllocsPerRun(200, func() {
		if _, _, err := raw.Exists(base); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		extra float64
	}{
		{"a context that cannot end", context.Background(), 0},
		{"a context that can end", ctx, 1}, // the runner's job
	} {
		n := testing.AllocsPerRun(200, func() {
			if _, _, err := c.Exists(tc.ctx, base); err != nil {
				t.Fatal(err)
			}
		})
		if n > rawAllocs+tc.extra {
			t.Errorf("Exists with %s: %.1f allocations, go-zookeeper's own %.1f: want at most %.0f more",
				tc.name, n, rawAllocs, tc.extra)
		}
	}
	// a create by go-zookeeper, then a delete by each
	deletes := func(del func(path string) error) float64 {
		return testing.AllocsPerRun(100, func() {
			p, err := raw.Create(base+"/x", nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
			if err != nil {
				t.Fatal(err)
			}
			if err := del(p); err != nil {
				t.Fatal(err)
			}
		})
	}
	rawDelete := deletes(func(p string) error { return raw.Delete(p, -1) })
	n := deletes(func(p string) error { return c.Delete(context.Background(), p, Guaranteed()) })
	if n > rawDelete {
		t.Errorf("a guaranteed Delete: %.1f allocations, go-zookeeper's own %.1f", n, rawDelete)
	}
}
