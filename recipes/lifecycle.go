package recipes

import (
	"context"

	life "github.com/gocurator/curator/internal/lifecycle"
	"github.com/gocurator/curator/internal/listeners"
)

// lifecycle is a recipe value's life (LeaderLatch, LeaderSelector,
// SharedCount, SharedValue) under the module's one Start and Close rule,
// internal/lifecycle's (its package doc says it): Curator's LATENT,
// STARTED, CLOSED, and a Close that never waits for user code, which the
// value calls through gate (call), shut first at Close.
type lifecycle struct {
	gate listeners.Gate // the user code the value calls: shut at Close
	run  life.Runner
}

// runState is the life of a recipe value: Curator's LATENT, STARTED,
// CLOSED.
type runState = life.State

const (
	latent  = life.Latent
	started = life.Started
	closed  = life.Closed
)

// start moves LATENT to STARTED and runs run on a goroutine of its own with
// a context that stop cancels. What run returns, if not nil, is called on
// that goroutine once it is over: user code told after Close, which Close
// does not wait for.
func (l *lifecycle) start(what string, run func(ctx context.Context) (then func())) error {
	return l.run.Start(what, run)
}

// call runs f, user code, as listeners.Call does, unless Close has begun:
// it reports whether f ran, and the panic f raised, as an error, or nil.
func (l *lifecycle) call(f func()) (ran bool, panicked error) { return listeners.Call(&l.gate, f) }

// close is the value's Close: it shuts the gate (no user code begins from
// now on), runs settle (the value's own part of Close, nil for none: it
// calls no user code), stops the goroutine with cause, and waits for it to
// end, unless a call through the gate was under way as it was shut. It
// reports whether the goroutine's run is over (false: it ends once that
// call returns).
func (l *lifecycle) close(cause error, settle func()) (over bool) {
	return l.run.Close(&l.gate, cause, settle)
}

// ended returns a channel closed once the goroutine has ended after the
// value was closed: at once for a value closed before it ever started, and
// never before Close.
func (l *lifecycle) ended() <-chan struct{} { return l.run.Ended() }

// current returns the state.
func (l *lifecycle) current() runState { return l.run.Current() }
