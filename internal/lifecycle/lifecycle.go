// Package lifecycle is the one Start and Close rule of gocurator's recipe
// values (recipes' LeaderLatch, LeaderSelector, SharedCount and SharedValue;
// recipes/nodes' PersistentNode): Curator's LATENT, STARTED, CLOSED.
//
//   - Start moves LATENT to STARTED; starting twice, or after Close, is an
//     error wrapping ErrInvalidState.
//   - Close moves any state to CLOSED and is idempotent: closing again, or
//     closing what was never started, returns nil (so that a deferred Close
//     is always right). Curator throws IllegalStateException for a latch
//     closed twice; a Go Close that may run twice (defer, and an explicit
//     one) must not fail.
//   - Close never waits for user code: the value calls its listeners (or a
//     selector its leadership function) through a gate (listeners.Gate)
//     that Close shuts first, so that no call begins after Close began.
//     Close then waits for the value's goroutine to end, unless a call was
//     under way as it shut the gate (it may be the caller, or wait for it):
//     the goroutine then ends by itself once that call returns. What the
//     value still tells after Close (a latch's NotLeader in
//     CloseNotifyLeader mode) is told once the goroutine is over, which
//     Close does not wait for.
//
// A Runner is the state and the goroutine; the gate is the value's own
// (a field beside it), which Runner.Close shuts.
package lifecycle

import (
	"context"
	"errors"
	"sync"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
)

// ErrInvalidState is the error of a call that its value's state does not
// allow (Curator's IllegalStateException); recipes.ErrInvalidState is this
// very value.
var ErrInvalidState = errors.New("gocurator: invalid state")

// State is the life of a recipe value: Curator's LATENT, STARTED, CLOSED.
type State int

// The states.
const (
	Latent State = iota
	Started
	Closed
)

// Runner is a value's state and its goroutine. The zero value is LATENT.
type Runner struct {
	mu      sync.Mutex
	state   State
	cancel  context.CancelCauseFunc // ends the goroutine's context
	done    chan struct{}           // closed when the goroutine's run has returned
	running bool                    // the goroutine has not ended (its run, then what run left to tell)
	over    chan struct{}           // closed once closed with no goroutine left (Ended); made when asked for
	isOver  bool                    // over is closed
}

// Start moves LATENT to STARTED and runs run on a goroutine of its own with
// a context that Stop cancels. What run returns, if not nil, is called on
// that goroutine once it is over (done closed): user code told after Close,
// which Close does not wait for. what names the value in the error of a
// second Start.
func (l *Runner) Start(what string, run func(ctx context.Context) (then func())) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != Latent {
		return errs.Errorf("%s: %w: started twice or after Close", what, ErrInvalidState)
	}
	l.state = Started
	ctx, cancel := context.WithCancelCause(context.Background())
	l.cancel, l.done, l.running = cancel, make(chan struct{}), true
	go func() {
		var then func()
		defer func() {
			close(l.done) // Close waits for this, not for then
			defer func() {
				l.mu.Lock()
				l.running = false
				l.settle()
				l.mu.Unlock()
			}()
			if then != nil {
				then()
			}
		}()
		then = run(ctx)
	}()
	return nil
}

// Close is the value's Close: it shuts g, the value's gate (no user code
// begins from now on), runs settle (the value's own part of Close, nil for
// none: it calls no user code), stops the goroutine with cause, and waits
// for it to end, unless a call through g was under way as it was shut. It
// reports whether the goroutine's run is over (or there was none); false
// means a call of user code was under way, and the goroutine ends by
// itself once it returns.
func (l *Runner) Close(g *listeners.Gate, cause error, settle func()) (over bool) {
	mayWait := g.Close()
	if settle != nil {
		settle()
	}
	done := l.Stop(cause)
	if done == nil {
		return true
	}
	if mayWait {
		<-done
		return true
	}
	return false
}

// Stop moves any state to CLOSED and cancels the goroutine's context with
// cause; it returns the channel closed when the goroutine has ended, or nil
// when there is none to wait for (never started, or closed already).
func (l *Runner) Stop(cause error) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev := l.state
	l.state = Closed
	l.settle()
	if prev != Started {
		return nil
	}
	l.cancel(cause)
	return l.done
}

// Ended returns a channel closed once the goroutine has ended after the
// value was closed, what its run left to tell (then) told too: at once for
// a value closed before it ever started, and never before Close.
func (l *Runner) Ended() <-chan struct{} {
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
func (l *Runner) settle() {
	if l.over != nil && !l.isOver && l.state == Closed && !l.running {
		close(l.over)
		l.isOver = true
	}
}

// Current returns the state.
func (l *Runner) Current() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}
