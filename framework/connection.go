package framework

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/state"
)

// The connection-state machine. It follows Curator (curator-lock-trees.md
// §6.2–6.3) and is driven from go-zookeeper's event callback, which sees
// every event, unlike its event channel, which drops events past six:
//
//	HasSession    first ever: CONNECTED. With a session id other than the
//	              last one: LOST first (unless already LOST), then
//	              RECONNECTED. After SUSPENDED or LOST: RECONNECTED.
//	Disconnected  SUSPENDED, unless already SUSPENDED or LOST; starts the
//	              timer that posts LOST when the negotiated session timeout ×
//	              percent / 100 passes while still SUSPENDED, and then
//	              abandons the session (see conn).
//	Expired       LOST, unless already LOST.
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
	if c.closed {
		return
	}
	if z != c.zk() {
		return // a connection the client gave up, being closed
	}
	switch ev.State {
	case zk.StateHasSession:
		sid := z.SessionID()
		if c.sessionID != 0 && sid != c.sessionID && c.cur != state.Lost {
			c.post(state.Lost)
		}
		if sid != c.sessionID {
			c.endSession()
			c.sessionID = sid
			c.sessionEnded = make(chan struct{})
		}
		c.stopLostTimer()
		switch {
		case c.cur == 0:
			c.post(state.Connected)
		case !c.cur.IsConnected():
			c.post(state.Reconnected)
		}
	case zk.StateDisconnected:
		if c.cur.IsConnected() {
			c.post(state.Suspended)
			c.startLostTimer()
		}
	case zk.StateExpired:
		c.stopLostTimer()
		if c.cur != 0 && c.cur != state.Lost {
			c.post(state.Lost)
		}
	}
}

// post records a transition; c.mu is held. The error signals the error
// policy (and, for LOST, the end of the session) calls for end here, before
// any listener hears of it.
func (c *Client) post(s state.ConnectionState) {
	c.log.Info("connection state change", zap.Stringer("state", s), zap.String("session", sessionString(c.sessionID)))
	c.cur = s
	close(c.changed)
	c.changed = make(chan struct{})
	c.queue = append(c.queue, s)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if s == state.Lost {
		c.endSession()
	}
	if s == state.Lost || c.cfg.errorPolicy.IsErrorState(s) {
		c.endSignals(&StateError{State: s})
	}
}

func (c *Client) startLostTimer() {
	c.timerGen++
	gen := c.timerGen
	d := c.negotiated * time.Duration(c.cfg.expirationPercent) / 100
	c.lostTimer = time.AfterFunc(d, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed || gen != c.timerGen || c.cur != state.Suspended {
			return
		}
		c.log.Warn("session timeout has elapsed while SUSPENDED; the session is presumed lost",
			zap.Duration("after", d))
		c.post(state.Lost)
		c.abandonSession()
	})
}

func (c *Client) stopLostTimer() {
	c.timerGen++
	if c.lostTimer != nil {
		c.lostTimer.Stop()
		c.lostTimer = nil
	}
}

// dispatch gives queued transitions to the listeners, in order, on its own
// goroutine, so that the connection goroutine never waits for a listener.
// After Close it delivers what was posted before Close, then ends.
func (c *Client) dispatch() {
	defer close(c.dispatched)
	for range c.wake {
		for {
			c.mu.Lock()
			q := c.queue
			c.queue = nil
			ls := make([]state.Listener, 0, len(c.listeners))
			for _, l := range c.listeners {
				ls = append(ls, l)
			}
			c.mu.Unlock()
			if len(q) == 0 {
				break
			}
			for _, s := range q {
				for _, l := range ls {
					c.gate.Call(func() { l.StateChanged(s) })
				}
			}
		}
	}
}

// waitConnected waits up to the connection timeout for a connection, as
// Curator does before each attempt. A client still not connected then fails
// the attempt with connection loss (zk.ErrNoServer), which the retry policy
// may retry.
func (c *Client) waitConnected(ctx context.Context) error {
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		closed, connected, changed := c.closed, c.cur.IsConnected(), c.changed
		c.mu.Unlock()
		switch {
		case closed:
			return ErrClosed
		case connected:
			return nil
		}
		if timeout == nil {
			t := time.NewTimer(c.cfg.connectionTimeout)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-changed:
		case <-timeout:
			return errs.Errorf("no connection within %v: %w", c.cfg.connectionTimeout, zk.ErrNoServer)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
