package recipes

import (
	"context"
	"sync"
)

// A turn is held by one call at a time, across calls to ZooKeeper, and
// taken only as long as the taker's context allows: a handle's acquisition
// under way (a second Acquire waits for it), a semaphore mutex's one
// acquisition (from Acquire to Release), a read-write owner's downgrade
// against the release of its write lock. Its zero value is free. A channel
// to wait on is made only when a taker must wait (rare: a value's own
// calls overlapping), so that a handle, one per waiter of a queue, costs no
// channel.
type turn struct {
	mu   sync.Mutex
	held bool
	free chan struct{} // closed when the turn is given back, for takers that wait; nil while none does
}

// take waits for the turn as long as ctx allows.
func (t *turn) take(ctx context.Context) error {
	for {
		t.mu.Lock()
		if !t.held {
			t.held = true
			t.mu.Unlock()
			return nil
		}
		if t.free == nil {
			t.free = make(chan struct{})
		}
		free := t.free
		t.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// try takes the turn if it is free now.
func (t *turn) try() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		return false
	}
	t.held = true
	return true
}

// give gives the turn back, and wakes the takers that wait.
func (t *turn) give() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = false
	if t.free != nil {
		close(t.free)
		t.free = nil
	}
}
