package framework

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/zkwire"
	"github.com/gocurator/curator/retry"
)

// conn is one go-zookeeper connection, and so one session at a time. The
// client has one current conn. When the local timer posts LOST, the client
// gives the session up, as Curator does (injectSessionExpiration): it closes
// the conn at once (so that every watch set through it fires, as on expiry)
// and moves to a new one, and so to a new session; and it closes the old
// session on the server as soon as a server answers (closeAbandoned), which
// deletes the old session's ephemeral nodes then, instead of when the
// server's own expiry comes to them. (go-zookeeper on its own would resume
// the old session, with lock nodes whose holders were told LOST.)
type conn struct {
	*zk.Conn
	events <-chan zk.Event // go-zookeeper's lossy channel: read only to learn when its loop has ended
	sent   *sentHooks      // the client's: told of every request written

	ready   atomic.Bool // auth sent and namespace made on this conn
	readyMu sync.Mutex

	mu      sync.Mutex
	tcp     net.Conn // the current TCP connection, closed on close to unblock a handshake
	closing bool     // close has begun: a connection dialled now is closed at once
	creds   session  // the session of the last handshake, as the server gave it

	containers inflight // container creates under way (container_create.go)
}

// session is what it takes to attach to a session: its id, password and
// timeout, from the server's connect response.
type session struct {
	id      int64
	passwd  []byte
	timeout int32
}

// connect starts a new go-zookeeper connection; c.mu is held, so that its
// first events wait until the caller has made it current. It does no
// blocking work: the servers are given to go-zookeeper as they are (see
// staticHosts), and resolved when dialled.
func (c *Client) connect() (*conn, error) {
	z := &conn{sent: &c.sent}
	zc, events, err := zk.Connect(c.servers, c.cfg.sessionTimeout,
		zk.WithHostProvider(&staticHosts{}),
		zk.WithEventCallback(func(ev zk.Event) { c.onEvent(z, ev) }),
		zk.WithLogger(zkLogger{c, z}),
		zk.WithMaxConnBufferSize(max(goZKSendBuffer, c.cfg.juteMaxBuffer+4)), // room for the largest request
		zk.WithDialer(z.dialer(c.dial)))
	if err != nil {
		return nil, err
	}
	z.Conn, z.events = zc, events
	c.conns.Store(zc, z)
	return z, nil
}

// dial dials a server with the client's dialer.
func (c *Client) dial(network, address string, timeout time.Duration) (net.Conn, error) {
	if c.cfg.dialer != nil {
		return c.cfg.dialer(network, address, timeout)
	}
	return net.DialTimeout(network, address, timeout)
}

// dialer wraps dial for go-zookeeper: it keeps the TCP connection (to close
// it on close), closes one dialled once close has begun, and learns the
// session's credentials from the server's connect response.
func (z *conn) dialer(dial zk.Dialer) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		z.mu.Lock()
		defer z.mu.Unlock()
		if z.closing {
			nc.Close()
			return nil, zk.ErrClosing
		}
		z.tcp = nc
		return &handshakeConn{Conn: nc, z: z}, nil
	}
}

// handshakeConn reads the server's connect response (the first frame it
// sends) as it passes, for the session's password, which go-zookeeper keeps
// to itself; after that it only forwards. It tells the client's sentHooks
// of every request it writes.
type handshakeConn struct {
	net.Conn
	z    *conn
	done bool
	buf  []byte
}

func (h *handshakeConn) Write(p []byte) (int, error) {
	n, err := h.Conn.Write(p)
	if err == nil {
		h.z.sent.written(p)
	}
	return n, err
}

func (h *handshakeConn) Read(p []byte) (int, error) {
	n, err := h.Conn.Read(p)
	if !h.done && n > 0 {
		h.buf = append(h.buf, p[:n]...)
		var hdr [zkwire.FrameHeaderLen]byte
		if len(h.buf) >= len(hdr) {
			copy(hdr[:], h.buf)
			if size, ok := zkwire.FrameLen(hdr); !ok {
				h.done, h.buf = true, nil
			} else if len(h.buf) >= len(hdr)+size {
				if timeout, id, passwd, ok := zkwire.ParseConnectResponse(h.buf[:len(hdr)+size]); ok && id != 0 {
					h.z.mu.Lock()
					h.z.creds = session{id: id, passwd: passwd, timeout: timeout}
					h.z.mu.Unlock()
				}
				h.done, h.buf = true, nil
			}
		}
	}
	return n, err
}

// close closes the connection (sending closeSession if it is connected) and
// waits until go-zookeeper's goroutines for it have ended; every watch set
// through it has fired (EventNotWatching) by then.
func (z *conn) close(c *Client) {
	z.mu.Lock()
	z.closing = true
	z.mu.Unlock()
	z.containers.drain(containerDrainWait)
	z.Conn.Close()
	z.mu.Lock()
	if z.tcp != nil {
		z.tcp.Close() // unblocks a handshake go-zookeeper may be stuck in
	}
	z.mu.Unlock()
	for range z.events { // closed when go-zookeeper's loop has ended
	}
	c.conns.Delete(z.Conn)
}

// zk returns the current go-zookeeper connection.
func (c *Client) zk() *conn { return c.conn.Load() }

// abandonSession gives the session up after the local timer has posted
// LOST; c.mu is held. The client moves to a new connection (a new session);
// the old one is closed on a goroutine of the client's, and then its
// session on the server, as soon as a server answers (closeAbandoned).
func (c *Client) abandonSession() {
	old := c.zk()
	z, err := c.connect()
	if err != nil { // not expected: connect does no work that can fail
		c.log.Error("cannot open a new connection; the old session may be resumed", zap.Error(err))
		return
	}
	c.conn.Store(z)
	old.mu.Lock()
	creds := old.creds
	old.mu.Unlock()
	c.log.Info("gave the lost session up; closing it on the server when one answers",
		zap.String("session", sessionString(creds.id)))
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		old.close(c)
		c.closeAbandoned(creds)
	}()
}

// closeAbandonedWait is the wait between two tries to close an abandoned
// session, while no server answers.
const closeAbandonedWait = 500 * time.Millisecond

// closeAbandoned closes the session s on the server, from a connection of
// its own, trying each server in turn until one answers (closed, or
// already expired) or the client closes.
func (c *Client) closeAbandoned(s session) {
	if s.id == 0 {
		return
	}
	for i := 0; ; i++ {
		addr := c.servers[i%len(c.servers)]
		err := c.closeSessionAt(addr, s)
		if err == nil {
			c.log.Info("closed the abandoned session", zap.String("session", sessionString(s.id)), zap.String("server", addr))
			return
		}
		c.log.Debug("closing the abandoned session", zap.String("session", sessionString(s.id)),
			zap.String("server", addr), zap.Error(err))
		if i%len(c.servers) == len(c.servers)-1 && retry.Sleep(c.bgCtx, closeAbandonedWait) != nil {
			return
		}
		if c.bgCtx.Err() != nil {
			return
		}
	}
}

// closeSessionAt attaches to s at the server addr and closes it there.
func (c *Client) closeSessionAt(addr string, s session) error {
	timeout := time.Duration(s.timeout) * time.Millisecond
	nc, err := c.dial("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(c.bgCtx, max(timeout, time.Second))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		nc.SetDeadline(deadline)
	}
	return zkwire.CloseSession(nc, s.id, s.timeout, s.passwd)
}

// staticHosts is go-zookeeper's HostProvider without DNS: the servers are
// tried in turn as given (go-zookeeper shuffles them first) and resolved
// when dialled. go-zookeeper's default one resolves every server in Connect,
// which the client calls under its lock when it gives a session up.
type staticHosts struct {
	mu         sync.Mutex
	servers    []string
	curr, last int
}

func (h *staticHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	h.curr, h.last = -1, -1
	return nil
}

func (h *staticHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *staticHosts) Next() (server string, retryStart bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart = h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *staticHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
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
