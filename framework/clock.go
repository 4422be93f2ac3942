package framework

import (
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/zkconn"
	"github.com/gocurator/curator/state"
)

// The client's clock on its session. Every deadline below counts from one
// instant, the last renewal of the session the servers' leader surely had
// (zkconn.Conn.LastRenewal, R), in the negotiated session timeout T: no
// server can expire the session before R + T. zkconn's heartbeat keeps R
// recent on an idle connection (a ping wherever nothing was written for
// h = T/10: R is then at most about 2h old), so that these deadlines are
// the library's own, not consequences of go-zookeeper's timers:
//
//	R + silenceAfter(T) = R + ⅔T − T/20   SUSPENDED, while still connected:
//	                                       the servers have renewed nothing
//	                                       for that long (Standard: lost)
//	R + lostDeadline                       LOST, still SUSPENDED: T × percent,
//	    = R + min(T × percent, T − T/20)   at most 0.95 T (Session: lost);
//	                                       the session is given up
//	R + T                                  the servers may expire the session:
//	                                       StateError.ExpiryBound, and a lost
//	                                       lock's node is deleted then
//
// So a holder under the Standard policy is told at least T/3 + T/20 before
// the servers could expire its session, however idle its client, and under
// the Session policy at least T/20 before. go-zookeeper still drops a
// connection it has heard nothing on for ⅔ T (internal/zkconn, assumption
// 10), after the clock's SUSPENDED: that is what makes it dial again, and
// it comes at once when the connection ends otherwise.
//
// A SUSPENDED of the clock is taken back on the same connection
// (RECONNECTED, same session) as soon as renewals come again and R is at
// most resumeWithin(T) = silenceAfter(T) − 2h old. An idle client's R moves
// in steps of h: under answers that all come late by D (a slow server), R
// is h + D old just after an answer and 2h + D just before the next, so the
// clock says SUSPENDED for D ≥ silenceAfter − 2h and takes it back only for
// D ≤ silenceAfter − 3h: a band of h where the client stays as it is,
// instead of flapping at every heartbeat when D wavers around one
// threshold. What the clock promises holds either way, since it looks
// again at every RECONNECTED.

// silenceAfter is how old the last sure renewal may grow, on a connected
// client, before the clock posts SUSPENDED: two thirds of the timeout, less
// lostMargin, so that a holder told then keeps at least a third of it.
func silenceAfter(t time.Duration) time.Duration { return 2*t/3 - lostMargin(t) }

// resumeWithin is how recent the last sure renewal must be for the clock
// to take its SUSPENDED back on the same connection.
func resumeWithin(t time.Duration) time.Duration {
	return silenceAfter(t) - 2*zkconn.HeartbeatInterval(t)
}

// lostDeadline is when a client SUSPENDED since the servers last surely
// renewed its session, last, posts LOST: the share of the negotiated
// session timeout T that WithSimulatedSessionExpirationPercent sets,
// counted from last, and never later than T less lostMargin. The servers'
// leader expires the session no sooner than T after the last renewal it was
// told of, which was no sooner than last (zkconn.Conn.LastRenewal: not the
// newest answer, which a follower cut off from its leader may give for a
// while, renewing nothing there): so LOST comes before any server can have
// given the session's locks to someone else, whatever the error policy.
// (Curator counts the share from SUSPENDED instead, which comes up to ⅔ T
// after the last contact: later than the servers' expiry.)
func (m *sessionMachine) lostDeadline(last time.Time) time.Time {
	share := m.negotiated * time.Duration(m.cfg.expirationPercent) / 100
	return last.Add(min(share, m.negotiated-lostMargin(m.negotiated)))
}

// lostMargin is how much sooner than the servers' earliest expiry LOST
// comes at the latest: a twentieth of the session timeout, for the timer's
// own lateness, the servers' clock, and the lag of a follower that
// answered behind the leader (docs/guarantees.md, the loss signal).
func lostMargin(t time.Duration) time.Duration { return t / 20 }

// startClock starts the clock's watch over z's session, which the client
// has just found connected: it posts SUSPENDED at silenceAfter; m.mu is
// held.
func (m *sessionMachine) startClock(z *conn) {
	m.stopClock()
	gen := m.clockGen
	last := z.LastRenewal()
	if last.IsZero() {
		last = time.Now()
	}
	m.clockTimer = time.AfterFunc(time.Until(last.Add(silenceAfter(m.negotiated))), func() { m.clockTick(z, gen) })
}

// stopClock stops the clock's watch; m.mu is held. A SUSPENDED of the
// clock is no longer its own to take back.
func (m *sessionMachine) stopClock() {
	m.clockGen++
	m.clockSuspended = false
	if m.clockTimer != nil {
		m.clockTimer.Stop()
		m.clockTimer = nil
	}
}

// clockTick is the clock's timer of generation gen, over z: connected, it
// posts SUSPENDED once the last sure renewal is silenceAfter old (or looks
// again when that will be); SUSPENDED by the clock, it posts RECONNECTED
// once renewals have come again (or waits for the next).
func (m *sessionMachine) clockTick(z *conn, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || gen != m.clockGen || z != m.zk() {
		return
	}
	t := m.clockTimer // the timer of generation gen
	last := z.LastRenewal()
	switch {
	case m.cur.IsConnected():
		if wait := time.Until(last.Add(silenceAfter(m.negotiated))); wait > 0 {
			t.Reset(wait) // renewed meanwhile
			return
		}
		m.log.Warn("no answer has renewed the session for too long: SUSPENDED, though the connection is still open",
			zap.Duration("since_last_renewal", time.Since(last).Round(time.Millisecond)),
			zap.Duration("session_timeout", m.negotiated))
		m.post(state.Suspended)
		m.clockSuspended = true
		m.startLostTimer(z)
		m.startSilentTimer()
		z.WhenRenewed(func() { t.Reset(0) })
	case m.clockSuspended && m.cur == state.Suspended:
		if time.Since(last) > resumeWithin(m.negotiated) || z.State() != zk.StateHasSession {
			z.WhenRenewed(func() { t.Reset(0) })
			return
		}
		m.log.Info("the servers renew the session again, on the same connection",
			zap.Duration("since_last_renewal", time.Since(last).Round(time.Millisecond)))
		m.stopTimers()
		m.post(state.Reconnected)
		m.startClock(z)
	}
}

// startLostTimer starts the timer that posts LOST at lostDeadline and gives
// the session up; m.mu is held. Without a renewal (no request of the
// connection answered yet) the deadline counts from now. Should renewals
// come again on a connection that stayed open (a SUSPENDED of the clock),
// the deadline moves with them.
func (m *sessionMachine) startLostTimer(z *conn) {
	m.stopLostTimer()
	gen := m.lostGen
	from := time.Now()
	last := func() time.Time {
		if r := z.LastRenewal(); !r.IsZero() {
			return r
		}
		return from
	}
	var t *time.Timer
	t = time.AfterFunc(time.Until(m.lostDeadline(last())), func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed || gen != m.lostGen || m.cur != state.Suspended {
			return
		}
		r := last()
		if wait := time.Until(m.lostDeadline(r)); wait > 0 {
			t.Reset(wait)
			return
		}
		m.log.Warn("no server has answered since before the session could expire; the session is presumed lost",
			zap.Duration("since_last_renewal", time.Since(r)), zap.Duration("session_timeout", m.negotiated))
		m.post(state.Lost)
		m.abandonSession()
	})
	m.lostTimer = t
}

func (m *sessionMachine) stopLostTimer() {
	m.lostGen++
	if m.lostTimer != nil {
		m.lostTimer.Stop()
		m.lostTimer = nil
	}
}
