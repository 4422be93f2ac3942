package acquire

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// trackedTrust is a context, as the client's trust is one, that keeps the
// functions registered on it (context.AfterFunc, and the contexts derived
// from it) and not stopped, so that a test can count them, and, once it
// has ended (end), run each when it says (run).
type trackedTrust struct {
	done  chan struct{}
	mu    sync.Mutex
	err   error
	next  int
	funcs map[int]func()
}

func newTrackedTrust() *trackedTrust {
	return &trackedTrust{done: make(chan struct{}), funcs: map[int]func(){}}
}

func (c *trackedTrust) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c *trackedTrust) Done() <-chan struct{}       { return c.done }
func (c *trackedTrust) Value(any) any               { return nil }

func (c *trackedTrust) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc is what context.AfterFunc and context.WithCancelCause call on a
// parent that is not one of the context package's own.
func (c *trackedTrust) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	c.funcs[id] = f
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.funcs[id]
		delete(c.funcs, id)
		return ok
	}
}

func (c *trackedTrust) registered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.funcs)
}

// end ends the trust with err (its cause, as context.Cause reads it), and
// runs none of the functions registered on it: run does, one at a time.
func (c *trackedTrust) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	close(c.done)
}

// run runs, once, the function registered id-th (from 0), which must still
// be registered.
func (c *trackedTrust) run(t testing.TB, id int) {
	t.Helper()
	c.mu.Lock()
	f, ok := c.funcs[id]
	delete(c.funcs, id)
	c.mu.Unlock()
	if !ok {
		t.Fatalf("no function %d registered on the trust", id)
	}
	f()
}

// A grant of an older stretch of trust, held just after one of a newer
// stretch (its acquisition began before the blip, and ended after the
// newer one's): it is settled as lost at once, and the newer stretch keeps
// its follower and the clean-up that stops the follower once the holdings
// are collected. That clean-up used to be cancelled there, leaving the
// follower registered on the client's trust for as long as it lasted.
func TestHoldingsOfAnOlderStretchLeaveTheNewersCleanUp(t *testing.T) {
	testutil.CheckLeaks(t)
	newer := newTrackedTrust()
	older, end := context.WithCancelCause(context.Background())
	end(errors.New("the older stretch ended"))
	func() { // the holdings, and the grants, are dropped when it returns
		l := &Lock{}
		grantOf := func(trust context.Context) *Grant {
			return newGrant(l, &node{path: "/x", name: "x", trust: trust}, nil, true)
		}
		gNew, gOld := grantOf(newer), grantOf(older)
		gNew.hold()
		gOld.hold() // held just after
		testutil.Until(t, "the older stretch's grant settled as lost", func() (bool, string) {
			return gOld.end.fin.Load() != nil, "not settled"
		})
		if _, first := gNew.Release(); !first {
			t.Fatal("the newer grant released before")
		}
	}()
	testutil.Until(t, "the newer stretch's follower stopped once the holdings are collected", func() (bool, string) {
		runtime.GC()
		n := newer.registered()
		return n == 0, fmt.Sprintf("%d function(s) still registered on the newer stretch", n)
	})
}
