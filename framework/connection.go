package framework

import (
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/state"
)

// The connection-state machine. It follows Curator and is driven from
// go-zookeeper's event callback, which sees every event, unlike its event
// channel, which drops events past six, and from the client's clock on the
// session (clock.go):
//
//	HasSession    first ever: CONNECTED. With a session id other than the
//	              last one: LOST first (unless already LOST), then
//	              RECONNECTED. After SUSPENDED or LOST: RECONNECTED. Starts
//	              the clock.
//	Disconnected  SUSPENDED, unless already SUSPENDED or LOST (or never
//	              connected); starts the timer that posts LOST, while still
//	              SUSPENDED, before the servers could expire the session
//	              (lostDeadline), and then gives the session up (see conn),
//	              and the timer that warns when no server has answered for
//	              the connection timeout.
//	Expired       LOST, unless already LOST (or never connected); stops
//	              the LOST timer.
//	the clock     SUSPENDED, with the same two timers, when the servers have
//	              surely renewed nothing for silenceAfter, though
//	              go-zookeeper has not yet dropped the connection; then
//	              RECONNECTED, same session, if renewals come again on it.
//
// go-zookeeper keeps one Conn across sessions and learns of expiry only when
// it reconnects, so the session-id comparison and the timer are what tell a
// partitioned client that its session is gone. Events of a connection the
// client gave up do not move the machine.
func (m *sessionMachine) onEvent(z *conn, ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || z != m.zk() {
		return // closed, or a connection the client gave up, being closed
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := z.SessionID()
		if t := z.Session().Timeout; t > 0 {
			m.negotiated, m.granted = t, t
		}
		if m.sessionID != 0 && sid != m.sessionID && m.cur != state.Lost {
			m.post(state.Lost)
		}
		if sid != m.sessionID {
			m.endSession()
			m.sessionID = sid
			m.sessionEnded = make(chan struct{})
			m.warnShortTimeout()
		}
		if m.trust.session != sid {
			if m.trust.session != 0 {
				m.endTrust(state.Lost) // the stretch's session is gone
			}
			m.trust.session = sid
		}
		m.stopTimers()
		switch {
		case m.cur == 0:
			m.post(state.Connected)
		case !m.cur.IsConnected():
			m.post(state.Reconnected)
		}
		m.startClock(z)
	case zk.StateDisconnected:
		m.stopClock() // a SUSPENDED of the clock is go-zookeeper's from now on: a reconnect ends it
		if m.cur.IsConnected() {
			m.post(state.Suspended)
			m.startLostTimer(z)
			m.startSilentTimer()
		}
	case zk.StateExpired:
		m.stopLostTimer()
		m.stopClock()
		if m.cur != 0 && m.cur != state.Lost {
			m.post(state.Lost)
		}
	}
}

// post records a transition; m.mu is held. The trust the error policy (and,
// for LOST, the end of the session) calls for ends here, before any
// listener hears of it.
func (m *sessionMachine) post(s state.ConnectionState) {
	m.emit(Event{Kind: StateChanged, State: s, Session: m.sessionID})
	m.cur = s
	if s == state.Lost {
		m.endSession()
	}
	if s == state.Lost || m.cfg.errorPolicy.IsErrorState(s) {
		m.endTrust(s)
	}
	close(m.changed)
	m.changed = make(chan struct{})
	m.states.Push(s) // last: a listener, on the states goroutine, finds all of the above done
}

// startSilentTimer starts, unless it runs already, the timer that warns
// once no server has answered for the connection timeout; m.mu is held.
func (m *sessionMachine) startSilentTimer() {
	if m.silentTimer != nil {
		return
	}
	m.silentGen++
	gen, since := m.silentGen, time.Now()
	m.silentTimer = time.AfterFunc(m.cfg.connectionTimeout, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.closed || gen != m.silentGen {
			return
		}
		m.log.Warn("no ZooKeeper server has answered", zap.Duration("for", time.Since(since).Round(time.Millisecond)),
			zap.Stringer("servers", toServerDials(m.zk().Dials())))
	})
}

func (m *sessionMachine) stopSilentTimer() {
	m.silentGen++
	if m.silentTimer != nil {
		m.silentTimer.Stop()
		m.silentTimer = nil
	}
}

// stopTimers stops the LOST timer, the silent timer and the clock: a
// session is there, or the client closes; m.mu is held.
func (m *sessionMachine) stopTimers() {
	m.stopLostTimer()
	m.stopSilentTimer()
	m.stopClock()
}
