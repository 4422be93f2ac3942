package recipes_test

import (
	"context"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

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
