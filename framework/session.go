package framework

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocurator/curator/retry"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/zkconn"
)

// conn is one connection through the door to go-zookeeper
// (internal/zkconn), and so one session at a time, with what the framework
// has made ready on it (prepare.go). The client's session machine has one
// current conn. When its clock posts LOST, it gives the session up, as Curator
// does (injectSessionExpiration): it closes the conn at once (so that every
// watch set through it fires, as on expiry) and moves to a new one, and so
// to a new session; and it closes the old session on the servers as soon
// as one answers (zkconn.CloseSession), which deletes the old session's
// ephemeral nodes then, instead of when the servers' own expiry comes to
// them. (go-zookeeper on its own would resume the old session, with lock
// nodes whose holders were told LOST.)
type conn struct {
	*zkconn.Conn

	ready   atomic.Bool // auth sent and namespace made on this conn
	readyMu sync.Mutex
}

// connect starts a new connection; m.mu is held, so that its first events
// wait until the caller has made it current. It does no blocking work.
func (m *sessionMachine) connect() (*conn, error) {
	z := &conn{}
	zc, err := zkconn.Dial(zkconn.Config{
		Servers:        m.servers,
		SessionTimeout: m.cfg.sessionTimeout,
		Dial:           m.cfg.dialer,
		MaxRequest:     m.cfg.juteMaxBuffer,
		OnEvent:        func(_ *zkconn.Conn, ev zk.Event) { m.connEvent(z, ev); m.onEvent(z, ev) },
		Log:            m.logZK,
		OnUntracked: func(why string) {
			m.log.Warn("lost track of the connection's replies: the last renewal stands still until it reconnects, and LOST may come early",
				zap.String("why", why))
		},
	})
	if err != nil {
		return nil, errs.Errorf("connecting to %s: %w", strings.Join(m.servers, ","), err)
	}
	z.Conn = zc
	return z, nil
}

// zk returns the client's current connection.
func (c *Client) zk() *conn { return c.sm.zk() }

// logZK sends go-zookeeper's own messages to zap, at debug level.
func (m *sessionMachine) logZK(format string, args ...any) {
	if m.log.Core().Enabled(zap.DebugLevel) { // the message is built only to be logged
		m.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
	}
}

// abandonSession gives the session up after the local timer has posted
// LOST; m.mu is held. The machine moves to a new connection (a new session).
// The old one is cut before abandonSession returns (zkconn.Conn.Cut): no
// request of the old session reaches a server after that, so that
// go-zookeeper cannot resume it with lock nodes whose holders were told
// LOST. It is then abandoned on a goroutine of the machine's (its watches
// fire), and its session closed on the servers as soon as one answers, but
// not before the servers could have expired it themselves (T after the
// last renewal the client is sure of, expiryBound): the holders told at LOST keep that margin to
// stop before anyone else can take their locks.
func (m *sessionMachine) abandonSession() {
	old := m.zk()
	z, err := m.connect()
	if err != nil { // not expected: connect does no work that can fail
		m.log.Error("cannot open a new connection; the old session may be resumed", zap.Error(err))
		return
	}
	m.conn.Store(z)
	old.Cut()
	s := old.Session()
	notBefore := m.expiryBound(old, s.ID)
	m.emit(Event{Kind: SessionAbandoned, Session: s.ID})
	m.log.Info("closing the abandoned session on the servers when one answers",
		zap.String("session", zkconn.SessionString(s.ID)), zap.Time("not_before", notBefore))
	m.abandons.Add(1)
	go func() {
		defer m.abandons.Done()
		old.Abandon() // not Close: its closeSession would come before notBefore
		if s.ID == 0 || retry.Sleep(m.abandonCtx, time.Until(notBefore)) != nil {
			return
		}
		addr, err := zkconn.CloseSession(m.abandonCtx, m.cfg.dialer, m.servers, s, func(server string, err error) {
			m.log.Debug("closing the abandoned session", zap.String("session", zkconn.SessionString(s.ID)),
				zap.String("server", server), zap.Error(err))
		})
		if err == nil {
			m.log.Info("closed the abandoned session", zap.String("session", zkconn.SessionString(s.ID)), zap.String("server", addr))
		}
	}()
}

// expiryBound is, as far as the client can tell, the earliest moment the
// servers can expire session on z: its negotiated timeout after the last
// renewal of it they surely had (zkconn.Conn.SessionRenewal); zero when they
// have answered none. It is the session's own, whatever z has done since:
// after go-zookeeper moved to a new session, its handshake says nothing of
// the old one's. m.mu is held.
func (m *sessionMachine) expiryBound(z *conn, session int64) time.Time {
	if z == nil {
		return time.Time{}
	}
	last, timeout := z.SessionRenewal(session)
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(timeout)
}

// Session returns the id of the client's current session and a channel closed
// when that session ends. The id is 0 before the first session. The session
// ends for the client at LOST (the server expired it, the client found itself
// in a new one, or gave it up because no server answered before it could
// expire), or at Close. After LOST and until a new session begins, it returns
// the old id and a closed channel.
func (c *Client) Session() (id int64, ended <-chan struct{}) {
	if !c.usable() {
		return 0, closedChan
	}
	return c.sm.Session()
}

// closedChan is a closed channel.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// SessionTimeout returns the session timeout the servers granted the
// current session (after LOST, until a new session begins, the last one's),
// or 0 before they have granted any: what was asked for (WithSessionTimeout)
// is not what the session runs on, as the servers clamp it into their
// [minSessionTimeout, maxSessionTimeout]. It is ZooKeeper's
// getSessionTimeout, which is 0 before the first session too.
func (c *Client) SessionTimeout() time.Duration {
	if !c.usable() {
		return 0
	}
	return c.sm.SessionTimeout()
}

// warnShortTimeout warns, once per session (at its start), when the
// servers granted a shorter session timeout than the one asked for: their
// maxSessionTimeout (by default 20 ticks) caps it, and the session expires,
// and LOST comes, that much sooner. m.mu is held.
func (m *sessionMachine) warnShortTimeout() {
	if m.negotiated < m.cfg.sessionTimeout {
		m.log.Warn("the servers granted a shorter session timeout than asked for (their maxSessionTimeout caps it): the session expires, and LOST comes, sooner",
			zap.Duration("asked", m.cfg.sessionTimeout), zap.Duration("granted", m.negotiated))
	}
}

// endSession closes the current session's ended channel; m.mu is held.
func (m *sessionMachine) endSession() {
	select {
	case <-m.sessionEnded:
	default:
		close(m.sessionEnded)
	}
}
