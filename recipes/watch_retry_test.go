package recipes

import (
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// A shared watch that could not be set in time is asked for again while
// its waiter's own context lives: the setter's bound is its own, not the
// waiter's, so a waiter with time left never fails for it. Here the
// servers are out of reach (black-holed) for longer than the setter's
// bound; the waiter must wait on, and get its watch once they answer.
func TestAWatchSetTooLateIsAskedForAgain(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.ConnectString())
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	old := setWatchTimeout
	setWatchTimeout = 200 * time.Millisecond
	t.Cleanup(func() { setWatchTimeout = old })

	k := watchKey{c, base, true}
	proxy.BlackHole()
	type result struct {
		w   *sharedWatch
		err error
	}
	got := make(chan result, 1)
	go func() {
		w, _, err := watchChildren(ctx, c, base)
		got <- result{w, err}
	}()
	// Wait until a setter has given up and another has taken its place.
	var first *sharedWatch
	testutil.Until(t, "a setter that gave up, replaced", func() (bool, string) {
		select {
		case r := <-got:
			t.Fatalf("the waiter gave up while its context lived: %v", r.err)
		default:
		}
		watchesMu.Lock()
		w := watches[k]
		watchesMu.Unlock()
		if first == nil {
			first = w
		}
		return w != nil && w != first, "the first setter still there"
	})
	proxy.Restore()
	r := testutil.Recv(t, got, "the watch, once the servers answer")
	if r.err != nil {
		t.Fatalf("the waiter = %v, want its watch", r.err)
	}
	// The watch fires (and is forgotten) with the base's next change.
	if _, err := c.Create(ctx, base+"/child", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, r.w.fired, "the watch's event")
}
