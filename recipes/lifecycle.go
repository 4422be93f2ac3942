package recipes

import (
	"context"
	"sync"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
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
//   - Close never waits for user code: the value calls its listeners, or a
//     selector its leadership function, through the lifecycle's gate
//     (call), which Close shuts first, so that no call begins after Close
//     began (listeners.Gate). Close then waits for the value's goroutine to
//     end, unless a call was under way as it shut the gate (it may be the
//     caller, or wait for it): the goroutine then ends by itself once that
//     call returns. What the value still tells after Close (a latch's
//     NotLeader in CloseNotifyLeader mode) is told once the goroutine is
//     over, which Close does not wait for.
type lifecycle struct {
	gate listeners.Gate // the user code the value calls: shut at Close

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
// a context that stop cancels. What run returns, if not nil, is called on
// that goroutine once it is over (done closed): user code told after Close,
// which Close does not wait for.
func (l *lifecycle) start(what string, run func(ctx context.Context) (then func())) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != latent {
		return errs.Errorf("%s: %w: started twice or after Close", what, ErrInvalidState)
	}
	l.state = started
	ctx, cancel := context.WithCancelCause(context.Background())
	l.cancel, l.done, l.running = cancel, make(chan struct{}), true
	go func() {
		var then func()
		defer func() {
			l.mu.Lock()
			l.running = false
			l.settle()
			l.mu.Unlock()
			close(l.done)
			if then != nil {
				then()
			}
		}()
		then = run(ctx)
	}()
	return nil
}

// call runs f, user code, as listeners.Call does, unless Close has begun:
// it reports whether f ran, and the panic f raised, as an error, or nil.
func (l *lifecycle) call(f func()) (ran bool, panicked error) {
	return listeners.Call(&l.gate, f)
}

// close is the value's Close: it shuts the gate (no user code begins from
// now on), runs settle (the value's own part of Close, nil for none: it
// calls no user code), stops the goroutine with cause, and waits for it to
// end, unless a call through the gate was under way as it was shut.
func (l *lifecycle) close(cause error, settle func()) {
	mayWait := l.gate.Close()
	if settle != nil {
		settle()
	}
	if done := l.stop(cause); done != nil && mayWait {
		<-done
	}
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
