package listeners_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/testutil"
)

// bound is how long a test's user code waits for Close to return before it
// says that Close waited for it (Close that waits for no user code returns
// at once).
const bound = 10 * time.Second

// A call that would begin after Close began is refused, whether or not a
// call was under way when Close came: so a Close that found none under way
// may wait for the goroutine, which will call no user code again.
func TestGateRefusesCallsAfterClose(t *testing.T) {
	testutil.CheckLeaks(t)
	var g listeners.Gate
	if !g.Call(func() {}) {
		t.Fatal("a call before Close was refused")
	}
	if !g.Close() {
		t.Fatal("Close with no call under way: may not wait")
	}
	ran := false
	if g.Call(func() { ran = true }) || ran {
		t.Fatal("a call that began after Close ran: Close, which found none under way, would wait for it")
	}
	if g.Close() {
		t.Fatal("a second Close may wait")
	}

	var under listeners.Gate
	inside, leave := make(chan struct{}), make(chan struct{})
	done := make(chan bool)
	go func() { done <- under.Call(func() { close(inside); <-leave }) }()
	testutil.Recv(t, inside, "the call under way")
	if under.Close() {
		t.Fatal("Close while a call is under way (it may be the caller's): may wait")
	}
	close(leave)
	if !testutil.Recv(t, done, "the call under way returning") {
		t.Fatal("the call under way reported it did not run")
	}
}

// Close waits for no delivery: a value pushed just before Close (its
// delivery has not begun, or has) is delivered after Close returned, even
// when its delivery waits for Close to return. Tried twenty times: without
// the rule, Close found no delivery under way most of those times, and
// waited for the one that began after it.
func TestQueueCloseWaitsForNoDelivery(t *testing.T) {
	testutil.CheckLeaks(t)
	for i := range 20 {
		returned := make(chan struct{})
		delivered := make(chan string, 1)
		q := listeners.NewQueue(func(v int) {
			select {
			case <-returned:
				delivered <- ""
			case <-time.After(bound):
				delivered <- "Close waited for a delivery that began after it"
			}
		}, nil, nil)
		q.Push(i)
		q.Close()
		close(returned)
		if why := testutil.Recv(t, delivered, "the value pushed before Close"); why != "" {
			t.Fatalf("try %d: %s", i, why)
		}
	}
}

// A value pushed after Close is delivered on the queue's goroutine (started
// again for it), never on the pusher's, which may hold a lock the delivery
// takes; the values pushed after Close are delivered one at a time, in
// order, and the goroutine ends once none is left.
func TestQueuePushAfterCloseDeliversOnItsGoroutine(t *testing.T) {
	testutil.CheckLeaks(t)
	lock := make(chan struct{}, 1) // a lock of the pusher's, that the delivery takes
	var mu sync.Mutex
	var got []int
	var why string
	busy := false
	all := make(chan struct{})
	q := listeners.NewQueue(func(v int) {
		mu.Lock()
		if busy {
			why = "two deliveries at once"
		}
		busy = true
		mu.Unlock()
		if v == 0 {
			select {
			case lock <- struct{}{}:
				<-lock
			case <-time.After(bound):
				mu.Lock()
				why = "delivered under the pusher's lock, on the pusher's goroutine"
				mu.Unlock()
			}
		}
		mu.Lock()
		busy = false
		got = append(got, v)
		if len(got) == 100 {
			close(all)
		}
		mu.Unlock()
	}, nil, nil)
	q.Close()
	lock <- struct{}{}
	for i := range 100 {
		q.Push(i)
	}
	<-lock
	testutil.Recv(t, all, "the values pushed after Close")
	mu.Lock()
	defer mu.Unlock()
	if why != "" {
		t.Fatal(why)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("delivered %v, want 0..99 in order", got)
		}
	}
}
