package framework

import (
	"errors"

	"github.com/gocurator/curator/state"
)

// ErrStopped is what ErrorSignal.Err returns once the signal was stopped by
// its holder (ErrorSignal.Stop) rather than ended by the connection.
var ErrStopped = errors.New("gocurator: stopped by its holder")

// StateError is what ErrorSignal.Err returns when a connection state change
// ended the signal.
type StateError struct {
	// State is the state that ended it: SUSPENDED or LOST under the
	// default error policy.
	State state.ConnectionState
}

// Error returns "gocurator: connection <STATE>".
func (e *StateError) Error() string { return "gocurator: connection " + e.State.String() }

// ErrorSignal tells its holder when the client can no longer vouch for the
// session it had when the signal was made: the first later connection-state
// change that the client's error policy counts as an error (SUSPENDED or
// LOST by default), any LOST whatever the policy (the session is gone), or
// Close. Until then the client has had that one session all along, and (as
// far as the policy asks) has been connected: this is what a lock recipe
// needs to trust a node it made in between. Lock recipes hold one per
// acquisition, and stop it when they release.
//
// Its Done and Err work as a context.Context's: Done is closed once, when
// the signal ends for any reason; Err is nil until then, and afterwards says
// why. It is safe for concurrent use.
type ErrorSignal struct {
	c       *Client
	session int64
	done    chan struct{}
	err     error // set under c.mu before done is closed
}

// NotifyErrorState returns a signal that ends at the first error state from
// now on (see ErrorSignal). The current state does not count, only later
// changes. A signal made on a closed client has already ended, with ErrClosed.
func (c *Client) NotifyErrorState() *ErrorSignal {
	s := &ErrorSignal{c: c, done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	s.session = c.sessionID
	if c.closed {
		s.end(ErrClosed)
		return s
	}
	c.signals[s] = struct{}{}
	return s
}

// end ends the signal with err; c.mu is held (or the signal is not yet
// registered).
func (s *ErrorSignal) end(err error) {
	if s.err != nil {
		return
	}
	s.err = err
	close(s.done)
}

// Done returns a channel that is closed when the signal ends.
func (s *ErrorSignal) Done() <-chan struct{} { return s.done }

// Err returns nil while the signal has not ended. Afterwards it returns a
// *StateError naming the state that ended it, an error wrapping ErrClosed if
// the client was closed, or ErrStopped if its holder stopped it.
func (s *ErrorSignal) Err() error {
	select {
	case <-s.done:
		return s.err // written before done was closed
	default:
		return nil
	}
}

// Session returns the id of the client's session when the signal was made
// (0 if it had none yet). While the signal has not ended, it is the
// client's session still, unless it was 0 or LOST then.
func (s *ErrorSignal) Session() int64 { return s.session }

// Stop ends the signal, if it has not ended yet, with ErrStopped, and
// forgets it. It is idempotent.
func (s *ErrorSignal) Stop() {
	s.c.mu.Lock()
	defer s.c.mu.Unlock()
	if s.c.signals != nil {
		delete(s.c.signals, s)
	}
	s.end(ErrStopped)
}

// endSignals ends every registered signal with err; c.mu is held.
func (c *Client) endSignals(err error) {
	for s := range c.signals {
		s.end(err)
		delete(c.signals, s)
	}
}
