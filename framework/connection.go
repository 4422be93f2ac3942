package framework

import (
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/listeners"
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
func (c *Client) onEvent(z *conn, ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || z != c.zk() {
		return // closed, or a connection the client gave up, being closed
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := z.SessionID()
		if t := z.Session().Timeout; t > 0 {
			c.negotiated, c.granted = t, t
		}
		if c.sessionID != 0 && sid != c.sessionID && c.cur != state.Lost {
			c.post(state.Lost)
		}
		if sid != c.sessionID {
			c.endSession()
			c.sessionID = sid
			c.sessionEnded = make(chan struct{})
			c.warnShortTimeout()
		}
		if c.trust.session != sid {
			if c.trust.session != 0 {
				c.endTrust(state.Lost) // the stretch's session is gone
			}
			c.trust.session = sid
		}
		c.stopTimers()
		switch {
		case c.cur == 0:
			c.post(state.Connected)
		case !c.cur.IsConnected():
			c.post(state.Reconnected)
		}
		c.startClock(z)
	case zk.StateDisconnected:
		c.stopClock() // a SUSPENDED of the clock is go-zookeeper's from now on: a reconnect ends it
		if c.cur.IsConnected() {
			c.post(state.Suspended)
			c.startLostTimer(z)
			c.startSilentTimer()
		}
	case zk.StateExpired:
		c.stopLostTimer()
		c.stopClock()
		if c.cur != 0 && c.cur != state.Lost {
			c.post(state.Lost)
		}
	}
}

// post records a transition; c.mu is held. The trust the error policy (and,
// for LOST, the end of the session) calls for ends here, before any
// listener hears of it.
func (c *Client) post(s state.ConnectionState) {
	c.Emit(Event{Kind: StateChanged, State: s, Session: c.sessionID})
	c.cur = s
	if s == state.Lost {
		c.endSession()
	}
	if s == state.Lost || c.cfg.errorPolicy.IsErrorState(s) {
		c.endTrust(s)
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.states.Push(s) // last: a listener, on the states goroutine, finds all of the above done
}

// startSilentTimer starts, unless it runs already, the timer that warns
// once no server has answered for the connection timeout; c.mu is held.
func (c *Client) startSilentTimer() {
	if c.silentTimer != nil {
		return
	}
	c.silentGen++
	gen, since := c.silentGen, time.Now()
	c.silentTimer = time.AfterFunc(c.cfg.connectionTimeout, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || gen != c.silentGen {
			return
		}
		c.log.Warn("no ZooKeeper server has answered", zap.Duration("for", time.Since(since).Round(time.Millisecond)),
			zap.Stringer("servers", c.dials()))
	})
}

func (c *Client) stopSilentTimer() {
	c.silentGen++
	if c.silentTimer != nil {
		c.silentTimer.Stop()
		c.silentTimer = nil
	}
}

// stopTimers stops the LOST timer, the silent timer and the clock: a
// session is there, or the client closes; c.mu is held.
func (c *Client) stopTimers() {
	c.stopLostTimer()
	c.stopSilentTimer()
	c.stopClock()
}

// tell gives a transition to the listeners, in the order they were added,
// on the states queue's goroutine, so that the connection goroutine never
// waits for a listener.
func (c *Client) tell(s state.ConnectionState) {
	for _, l := range c.listeners.Snapshot() {
		if err := listeners.Safe(func() { l.StateChanged(s) }); err != nil {
			c.log.Error("connection state listener", zap.Stringer("state", s), zap.Error(err))
		}
	}
}
