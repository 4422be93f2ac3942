package recipes

import (
	"context"
	"sync"

	"github.com/gocurator/curator/internal/errs"
)

// The lifecycle of every recipe value with Start and Close (LeaderLatch,
// LeaderSelector, SharedCount), Curator's LATENT, STARTED, CLOSED, with one
// rule for all of them:
//
//   - Start moves LATENT to STARTED; starting twice, or after Close, is an
//     error wrapping ErrInvalidState.
//   - Close moves any state to CLOSED and is idempotent: closing again, or
//     closing what was never started, returns nil (so that a deferred Close
//     is always right). Curator throws IllegalStateException for a latch
//     closed twice; a Go Close that may run twice (defer, and an explicit
//     one) must not fail.
type lifecycle struct {
	mu     sync.Mutex
	state  runState
	cancel context.CancelCauseFunc // ends the goroutine's context
	done   chan struct{}           // closed when the goroutine has ended
}

// runState is the life of a recipe value: Curator's LATENT, STARTED,
// CLOSED.
type runState int

const (
	latent runState = iota
	started
	closed
)

// start moves LATENT to STARTED and runs run on a goroutine of its own with
// a context that stop cancels.
func (l *lifecycle) start(what string, run func(ctx context.Context)) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != latent {
		return errs.Errorf("%s: %w: started twice or after Close", what, ErrInvalidState)
	}
	l.state = started
	ctx, cancel := context.WithCancelCause(context.Background())
	l.cancel, l.done = cancel, make(chan struct{})
	go func() {
		defer close(l.done)
		run(ctx)
	}()
	return nil
}

// stop moves any state to CLOSED and cancels the goroutine's context with
// cause; it returns the channel closed when the goroutine has ended, or nil
// when there is none to wait for (never started, or closed already).
func (l *lifecycle) stop(cause error) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.state
	l.state = closed
	if prev != started {
		return nil
	}
	l.cancel(cause)
	return l.done
}

// current returns the state.
func (l *lifecycle) current() runState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}
