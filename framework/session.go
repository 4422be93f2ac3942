package framework

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
)

// conn is one go-zookeeper connection, and so one session at a time. The
// client has one current conn. When the local timer posts LOST, the client
// abandons the session, as Curator does (injectSessionExpiration): it moves
// to a new conn, and so to a new session, and keeps the old conn only to
// close the old session on the server as soon as a server answers it. That
// deletes the old session's ephemeral nodes at once, instead of when the
// server's own expiry comes to them (go-zookeeper would otherwise resume
// the old session, with its lock nodes, which the application was told are
// lost).
type conn struct {
	*zk.Conn
	events <-chan zk.Event // go-zookeeper's lossy channel: read only to learn when its loop has ended

	ready   atomic.Bool // auth sent and namespace made on this conn
	readyMu sync.Mutex

	mu  sync.Mutex
	tcp net.Conn // the current TCP connection, closed on close to unblock a handshake
}

// connect starts a new go-zookeeper connection; c.mu is held, so that its
// first events wait until the caller has made it current.
func (c *Client) connect() (*conn, error) {
	z := &conn{}
	dial := c.cfg.dialer
	if dial == nil {
		dial = net.DialTimeout
	}
	zc, events, err := zk.Connect(c.servers, c.cfg.sessionTimeout,
		zk.WithEventCallback(func(ev zk.Event) { c.onEvent(z, ev) }),
		zk.WithLogger(zkLogger{c, z}),
		zk.WithMaxConnBufferSize(max(goZKSendBuffer, c.cfg.juteMaxBuffer+4)), // room for the largest request
		zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
			nc, err := dial(network, address, timeout)
			if err == nil {
				z.mu.Lock()
				z.tcp = nc
				z.mu.Unlock()
			}
			return nc, err
		}))
	if err != nil {
		return nil, err
	}
	z.Conn, z.events = zc, events
	return z, nil
}

// close closes the connection (sending closeSession if it is connected) and
// waits until go-zookeeper's goroutines for it have ended.
func (z *conn) close() {
	z.Conn.Close()
	z.mu.Lock()
	if z.tcp != nil {
		z.tcp.Close() // unblocks a handshake go-zookeeper may be stuck in
	}
	z.mu.Unlock()
	for range z.events { // closed when go-zookeeper's loop has ended
	}
}

// zk returns the current go-zookeeper connection.
func (c *Client) zk() *conn { return c.conn.Load() }

// abandonSession moves the client to a new connection, and so to a new
// session, after the local timer has posted LOST; c.mu is held. The old
// connection is kept, retired, until a server answers it: then its session
// is closed (see onRetiredEvent), or it is found expired already.
func (c *Client) abandonSession() {
	old := c.zk()
	z, err := c.connect()
	if err != nil {
		c.log.Error("cannot open a new connection; the old session may be resumed", zap.Error(err))
		return
	}
	c.retired[old] = struct{}{}
	c.conn.Store(z)
	c.log.Info("abandoned the lost session; its nodes go when a server answers again",
		zap.String("session", sessionString(c.sessionID)))
}

// onRetiredEvent handles an event of a retired connection; c.mu is held.
// Once it reaches a server, the session it carries is closed: that deletes
// the session's ephemeral nodes at once. If the server says the session
// expired, there is nothing left to close.
func (c *Client) onRetiredEvent(z *conn, ev zk.Event) {
	if ev.Type != zk.EventSession || (ev.State != zk.StateHasSession && ev.State != zk.StateExpired) {
		return
	}
	if _, ok := c.retired[z]; !ok {
		return
	}
	delete(c.retired, z)
	c.log.Info("closing the abandoned session", zap.String("session", sessionString(z.SessionID())),
		zap.Stringer("state", ev.State))
	c.bg.Add(1)
	go func() { // not on go-zookeeper's goroutine, which Close needs
		defer c.bg.Done()
		z.close()
	}()
}

// Session returns the id of the client's current session (0 before the
// first) and a channel that is closed when that session ends for the
// client: at LOST (the server expired it, the client found itself in a new
// one, or gave it up because the session timeout passed while SUSPENDED),
// or at Close. After LOST and until a new session begins, it returns the
// old id and a closed channel.
func (c *Client) Session() (id int64, ended <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID, c.sessionEnded
}

// SessionTimeout returns the session timeout the server granted (Curator's
// getSessionTimeout; the server clamps the one asked for into its
// [minSessionTimeout, maxSessionTimeout]), or the one asked for before the
// first session.
func (c *Client) SessionTimeout() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.negotiated
}

// endSession closes the current session's ended channel; c.mu is held.
func (c *Client) endSession() {
	select {
	case <-c.sessionEnded:
	default:
		close(c.sessionEnded)
	}
}
