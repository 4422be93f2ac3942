package recipes

import "context"

// A turn is held by one call at a time, across calls to ZooKeeper, and
// taken only as long as the taker's context allows: a handle's acquisition
// under way (a second Acquire waits for it), a semaphore mutex's one
// acquisition (from Acquire to Release), a read-write owner's downgrade
// against the release of its write lock. It is a channel of one, so that a
// wait for it honours a context.
type turn chan struct{}

func newTurn() turn { return make(turn, 1) }

// take waits for the turn as long as ctx allows.
func (t turn) take(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// try takes the turn if it is free now.
func (t turn) try() bool {
	select {
	case t <- struct{}{}:
		return true
	default:
		return false
	}
}

// give gives the turn back.
func (t turn) give() { <-t }
