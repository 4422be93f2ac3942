package recipes

import (
	"context"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/testutil"
)

// Where a waiter may hold as soon as the node it watches is deleted, without
// listing again — and, as important, where it may not.
func TestHandoffDecisions(t *testing.T) {
	mutex := lockNameDriver(locktree.MutexName, 1)
	writer := newWriteDriver()
	reader := readDriver{}
	for _, tc := range []struct {
		name   string
		d      handoffDriver
		sorted []string
		our    string
		watch  string
		want   bool
	}{
		{"mutex second in line", mutex, []string{"a-lock-1", "b-lock-2"}, "b-lock-2", "a-lock-1", true},
		{"mutex third in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "b-lock-2", false},
		{"semaphore v1 with two leases", lockNameDriver(locktree.MutexName, 2), []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "a-lock-1", false},
		// the holder of __WRIT__1 may downgrade: its read node __READ__1 would
		// take the write node's place before the write node goes
		{"writer behind a writer", writer, []string{"a-__WRIT__1", "b-__WRIT__2"}, "b-__WRIT__2", "a-__WRIT__1", false},
		{"writer behind one reader", writer, []string{"a-__READ__1", "b-__WRIT__2"}, "b-__WRIT__2", "a-__READ__1", true},
		{"writer behind two readers", writer, []string{"a-__READ__1", "c-__READ__2", "b-__WRIT__3"}, "b-__WRIT__3", "c-__READ__2", false},
		{"reader behind its only writer", reader, []string{"r-__READ__1", "w-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "w-__WRIT__2", true},
		{"reader behind two writers", reader, []string{"w-__WRIT__1", "x-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "x-__WRIT__2", false},
		{"downgrading reader", readDriver{ownWrite: "w-__WRIT__1"}, []string{"w-__WRIT__1", "o-__READ__1"}, "o-__READ__1", "w-__WRIT__1", false},
	} {
		if got := tc.d.handsOff(tc.sorted, tc.our, tc.watch); got != tc.want {
			t.Errorf("%s: handsOff = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Which node a waiter further back also watches, so that it lists again
// while its predecessor holds (lookahead).
func TestLookaheadDecisions(t *testing.T) {
	mutex := lockNameDriver(locktree.MutexName, 1)
	writer := newWriteDriver()
	for _, tc := range []struct {
		name   string
		d      handoffDriver
		sorted []string
		our    string
		watch  string
		want   string
	}{
		{"mutex third in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "b-lock-2", "a-lock-1"},
		{"mutex fourth in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3", "d-lock-4"}, "d-lock-4", "c-lock-3", "b-lock-2"},
		{"mutex second in line (hands off already)", mutex, []string{"a-lock-1", "b-lock-2"}, "b-lock-2", "a-lock-1", ""},
		{"semaphore v1 with two leases", lockNameDriver(locktree.MutexName, 2), []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "a-lock-1", ""},
		{"writer behind readers", writer, []string{"a-__READ__1", "b-__READ__2", "c-__WRIT__3"}, "c-__WRIT__3", "b-__READ__2", "a-__READ__1"},
		// second in line behind a writer, it would still have to list again
		{"writer behind a writer", writer, []string{"a-__READ__1", "b-__WRIT__2", "c-__WRIT__3"}, "c-__WRIT__3", "b-__WRIT__2", ""},
		{"reader", readDriver{}, []string{"w-__WRIT__1", "x-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "x-__WRIT__2", ""},
	} {
		if got := tc.d.lookahead(tc.sorted, tc.our, tc.watch); got != tc.want {
			t.Errorf("%s: lookahead = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// A mutex waiter third in line lists again when the node two ahead of it
// goes (its predecessor now holds), while that predecessor holds; then it
// holds the moment the predecessor's node is deleted, with no listing after
// that delete: the round trip Curator pays after every hand-off is off the
// critical path.
func TestLookaheadListsBeforeTheHandoff(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c1, c2, c3 := newClient(t, ""), newClient(t, ""), newClient(t, proxy.Addr())
	holder := mustMutex(t, c1, base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	second, third := mustMutex(t, c2, base).NewHandle(), mustMutex(t, c3, base).NewHandle()
	secondGot, thirdGot := make(chan error, 1), make(chan error, 1)
	go func() { secondGot <- second.Acquire(ctx) }()
	waitForChildren(t, c1, base, 2)
	go func() { thirdGot <- third.Acquire(ctx) }()
	// The third has listed once and watches the second and, looking ahead,
	// the holder.
	bounded, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := proxy.WaitRequests(bounded, zktest.OpGetData, 2); err != nil {
		t.Fatal(err)
	}
	listed := proxy.Requests(zktest.OpGetChildren2)
	if listed != 1 {
		t.Fatalf("the third waiter listed %d times before waiting, want 1", listed)
	}

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, secondGot, "the second waiter's Acquire"); err != nil {
		t.Fatal(err)
	}
	if err := proxy.WaitRequests(bounded, zktest.OpGetChildren2, listed+1); err != nil {
		t.Fatalf("the third waiter did not list again while the second held: %v", err)
	}
	if err := second.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, thirdGot, "the third waiter's Acquire"); err != nil {
		t.Fatal(err)
	}
	if n := proxy.Requests(zktest.OpGetChildren2); n != listed+1 {
		t.Fatalf("the third waiter listed %d times in all, want %d: none after the second's release", n, listed+1)
	}
	if err := third.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// planWait puts the rules together: a waiter that is handed off looks no
// further ahead, one further back does, and a counting driver (the
// semaphore's leases) watches no node.
func TestPlanWait(t *testing.T) {
	mutex := lockNameDriver(locktree.MutexName, 1)
	for _, tc := range []struct {
		name   string
		d      driver
		sorted []string
		our    string
		watch  string
		want   waitPlan
	}{
		{"second in line", mutex, []string{"a-lock-1", "b-lock-2"}, "b-lock-2", "a-lock-1",
			waitPlan{watch: "a-lock-1", handsOff: true}},
		{"third in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "b-lock-2",
			waitPlan{watch: "b-lock-2", lookahead: "a-lock-1"}},
		{"leases", leaseDriver{}, []string{"a-lease-1", "b-lease-2"}, "b-lease-2", "", waitPlan{}},
	} {
		if got := planWait(tc.d, tc.sorted, tc.our, tc.watch); got != tc.want {
			t.Errorf("%s: planWait = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
