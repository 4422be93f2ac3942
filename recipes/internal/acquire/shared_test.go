package acquire

import (
	"fmt"
	"runtime"
	"testing"
	"weak"

	"github.com/gocurator/curator/internal/testutil"
)

// What the waiters of one client share is the client's, and nobody else's:
// two clients' lock values on one path share no lister and no watch; the
// lock values of one client share one value; and once no lock value of the
// client (nor a waiter, nor a watch under way) refers to it, it is
// collected and its entry goes, while the client itself goes on.
func TestSharedStateIsPerClientAndGoes(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c, other := newClient(t, ""), newClient(t, "")
	k := weak.Make(c)
	func() {
		l1, l2, lo := NewLock(c, base), NewLock(c, base+"/b"), NewLock(other, base)
		if l1.shared != l2.shared || l1.shared == lo.shared {
			t.Fatal("one client's lock values do not share one value, or two clients share one")
		}
		g, err := l1.Acquire(ctx, queueAt(&l1))
		testutil.Must(t, err)
		release(t, ctx, g)
	}()
	testutil.Until(t, "the client's shared value collected and its entry gone", func() (bool, string) {
		runtime.GC()
		sharingMu.Lock()
		defer sharingMu.Unlock()
		_, ok := sharing[k]
		return !ok, fmt.Sprintf("%d entries", len(sharing))
	})
	if c.IsClosed() {
		t.Fatal("the client closed")
	}
}
