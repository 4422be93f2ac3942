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
	mu      sync.Mutex
	state   runState
	cancel  context.CancelCauseFunc // ends the goroutine's context
	done    chan struct{}           // closed when the goroutine has ended
	running bool                    // the goroutine has not ended
	over    chan struct{}           // closed once closed with no goroutine left (ended); made when asked for
	isOver  bool                    // over is closed
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
	l.cancel, l.done, l.running = cancel, make(chan struct{}), true
	go func() {
		defer func() {
			l.mu.Lock()
			l.running = false
			l.settle()
			l.mu.Unlock()
			close(l.done)
		}()
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
	l.settle()
	if prev != started {
		return nil
	}
	l.cancel(cause)
	return l.done
}

// ended returns a channel closed once the goroutine has ended after the
// value was closed: at once for a value closed before it ever started, and
// never before Close.
func (l *lifecycle) ended() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over == nil {
		l.over = make(chan struct{})
		l.settle()
	}
	return l.over
}

// settle closes over once the value is closed and its goroutine, if any,
// has ended; l.mu is held.
func (l *lifecycle) settle() {
	if l.over != nil && !l.isOver && l.state == closed && !l.running {
		close(l.over)
		l.isOver = true
	}
}

// current returns the state.
func (l *lifecycle) current() runState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}
