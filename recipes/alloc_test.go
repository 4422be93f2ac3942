package recipes_test

import (
	"context"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// What an uncontended acquire + release allocates beyond go-zookeeper's own
// allocations for the textbook cycle (create, list, delete): the grant and
// its context (3: the grant, the context, its cancel func), the protected
// create's state and its path (2), the listing sent behind the create, its
// call included (1), the sorted queue (1); less the 2 of the textbook
// cycle's own code (its path, its error values), counted in its number.
// Nothing per call for the retry machinery, options or paths; with a
// context that can end, one job for each ZooKeeper call that is not the
// listing (2: the create, the delete).
func TestUncontendedCycleAllocations(t *testing.T) {
	const ours = 5
	ctx, base := testutil.Begin(t, server.Addr())
	raw := rawConn(t)
	floor := floorParent(t, raw, base)
	floorAllocs := fewestAllocs(func() { floorCycle(t, raw, floor) })
	h := mustMutex(t, newClient(t, ""), base+"/ours").NewHandle()
	for _, tc := range []struct {
		name  string
		ctx   context.Context
		extra float64
	}{
		{"context.Background", context.Background(), ours},
		{"a context that can end", ctx, ours + 2},
	} {
		n := fewestAllocs(func() { acquireRelease(t, tc.ctx, h) })
		t.Logf("%s: %.0f allocations per cycle, go-zookeeper's textbook cycle %.0f", tc.name, n, floorAllocs)
		if n > floorAllocs+tc.extra {
			t.Errorf("with %s an acquire + release allocates %.0f times, go-zookeeper's cycle %.0f: want at most %.0f more",
				tc.name, n, floorAllocs, tc.extra)
		}
	}
}

// fewestAllocs returns what f allocates per run, as testing.AllocsPerRun
// counts it, in the quietest of a few rounds: it counts every goroutine's
// allocations, and a client's background work (a ping, a timer) that falls
// in a round only adds to it.
func fewestAllocs(f func()) float64 {
	fewest := testing.AllocsPerRun(50, f)
	for range 2 {
		fewest = min(fewest, testing.AllocsPerRun(50, f))
	}
	return fewest
}
