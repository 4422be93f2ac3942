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
// channel, which drops events past six:
//
//	HasSession    first ever: CONNECTED. With a session id other than the
//	              last one: LOST first (unless already LOST), then
//	              RECONNECTED. After SUSPENDED or LOST: RECONNECTED.
//	Disconnected  SUSPENDED, unless already SUSPENDED or LOST (or never
//	              connected); starts the timer that posts LOST, while still
//	              SUSPENDED, before the servers could expire the session
//	              (lostDeadline), and then gives the session up (see conn),
//	              and the timer that warns when no server has answered for
//	              the connection timeout.
//	Expired       LOST, unless already LOST (or never connected); stops
//	              the LOST timer.
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
	case zk.StateDisconnected:
		if c.cur.IsConnected() {
			c.post(state.Suspended)
			c.startLostTimer(z)
			c.startSilentTimer()
		}
	case zk.StateExpired:
		c.stopLostTimer()
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
func (c *Client) lostDeadline(last time.Time) time.Time {
	share := c.negotiated * time.Duration(c.cfg.expirationPercent) / 100
	return last.Add(min(share, c.negotiated-lostMargin(c.negotiated)))
}

// lostMargin is how much sooner than the servers' earliest expiry LOST
// comes at the latest: a twentieth of the session timeout, for the timer's
// own lateness, the servers' clock, and the lag of a follower that
// answered behind the leader (docs/guarantees.md, the loss signal).
func lostMargin(t time.Duration) time.Duration { return t / 20 }

// startLostTimer starts the timer that posts LOST at lostDeadline and gives
// the session up; c.mu is held. Without a renewal (no request of the
// connection answered yet) the deadline counts from now.
func (c *Client) startLostTimer(z *conn) {
	c.stopLostTimer()
	gen := c.lostGen
	last := z.LastRenewal()
	if last.IsZero() {
		last = time.Now()
	}
	c.lostTimer = time.AfterFunc(time.Until(c.lostDeadline(last)), func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || gen != c.lostGen || c.cur != state.Suspended {
			return
		}
		c.log.Warn("no server has answered since before the session could expire; the session is presumed lost",
			zap.Duration("since_last_renewal", time.Since(last)), zap.Duration("session_timeout", c.negotiated))
		c.post(state.Lost)
		c.abandonSession()
	})
}

func (c *Client) stopLostTimer() {
	c.lostGen++
	if c.lostTimer != nil {
		c.lostTimer.Stop()
		c.lostTimer = nil
	}
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

// stopTimers stops both timers: a session is there, or the client closes;
// c.mu is held.
func (c *Client) stopTimers() {
	c.stopLostTimer()
	c.stopSilentTimer()
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
