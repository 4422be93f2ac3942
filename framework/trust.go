package framework

import (
	"context"
	"time"

	"github.com/gocurator/curator/state"
)

// StateError is the cause (context.Cause) of a trust context that a
// connection-state change ended.
type StateError struct {
	// State is the state that ended it: SUSPENDED or LOST under the
	// default error policy, LOST only under state.SessionErrorPolicy.
	State state.ConnectionState
	// ExpiryBound is, as far as the client could tell when the state came,
	// the earliest moment the servers could expire the session: the
	// negotiated session timeout after the last renewal of it the servers'
	// leader surely had (an answer followed by another a twentieth of the
	// timeout later, or a handshake: not the newest answer, which a
	// follower cut off from its leader may still give). Until then no server can have given the session's ephemeral nodes
	// (and so its locks) to anyone else. Zero when the client had not heard
	// from the servers in that session.
	ExpiryBound time.Time
}

// Error returns "gocurator: connection <STATE>".
func (e *StateError) Error() string { return "gocurator: connection " + e.State.String() }

// A stretch is a stretch of trust: the time from one error state (or the
// client's start) to the next, within one session. Its context ends at the
// first connection-state change the client's error policy counts as an
// error, at any LOST, when the client moves to another session, and at
// Close; the cause is a *StateError, or ErrClosed. Every field is guarded by
// the session machine's mu.
type stretch struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	session int64
}

// begin starts a new stretch in session.
func (s *stretch) begin(session int64) {
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.session = session
}

// end ends the stretch with cause and begins the next, in the same session.
// After Close (cause ErrClosed) the next has ended already.
func (s *stretch) end(cause error) {
	s.cancel(cause)
	s.begin(s.session)
	if cause == ErrClosed {
		s.cancel(cause)
	}
}

// Trust returns the context of the client's current stretch of trust, and
// the session it vouches for. Until the context ends, the client has had
// that one session all along and, as far as the error policy asks, has
// stayed connected: an ephemeral node the client made meanwhile in that
// session is still there unless someone deleted it. The context ends at the
// first later connection-state change the client's error policy counts as
// an error (SUSPENDED or LOST by default; the state current when Trust is
// called does not count), at any LOST, when the client finds itself in
// another session, and at Close; context.Cause then says why: a
// *StateError, or an error wrapping ErrClosed. A lock recipe derives each
// grant from it (context.WithCancelCause), so that a grant ends when the
// trust does. The session is 0 before the client's first.
//
// The context is shared by every caller in the stretch: do not cancel it
// (it cannot be, from outside), derive from it.
func (c *Client) Trust() (ctx context.Context, session int64) {
	if !c.usable() {
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(errUnusable)
		return ctx, 0
	}
	return c.sm.Trust()
}

// endTrust ends the current stretch of trust because of state s; m.mu is
// held.
func (m *sessionMachine) endTrust(s state.ConnectionState) {
	m.trust.end(&StateError{State: s, ExpiryBound: m.expiryBound(m.zk(), m.trust.session)})
}
