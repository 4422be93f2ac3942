package zkconn

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// Config is what Dial needs.
type Config struct {
	// Servers are the servers, "host:port", tried in turn (go-zookeeper
	// shuffles them first), resolved when dialled.
	Servers []string
	// SessionTimeout is the session timeout asked of the servers.
	SessionTimeout time.Duration
	// Dial dials a server; nil means net.DialTimeout.
	Dial zk.Dialer
	// MaxRequest is the size, in bytes, of the largest request that will be
	// sent: go-zookeeper's send buffer is made big enough for it.
	MaxRequest int
	// OnEvent hears every event of the connection, on go-zookeeper's
	// goroutine (its event channel drops events past six; this does not),
	// once Dial has returned.
	OnEvent func(*Conn, zk.Event)
	// Log hears go-zookeeper's own messages; nil drops them.
	Log func(format string, args ...any)
	// OnUntracked hears, on go-zookeeper's reader, that the tap could not
	// follow what a server sent as ZooKeeper frames (why): until that TCP
	// connection ends, no reply on it counts as contact, so LastContact
	// and LastRenewal stand still (and the framework's clock, counting
	// from the renewal, calls the session silent). go-zookeeper, whose
	// reader takes no frame the tap refuses (a length below 0 or past its
	// buffer), drops such a connection itself. It must not block. Nil:
	// nobody hears.
	OnUntracked func(why string)
}

// Session is a session as the server's connect response gave it: what it
// takes to attach to it again, and its negotiated timeout.
type Session struct {
	ID      int64
	Passwd  []byte
	Timeout time.Duration
}

// Conn is one go-zookeeper connection, and so one session at a time (the
// embedded zk.Conn's calls are the framework's attempts), with what
// go-zookeeper keeps to itself. Close it with Close, not with the embedded
// zk.Conn's.
type Conn struct {
	*zk.Conn
	events <-chan zk.Event // go-zookeeper's lossy channel: read only to learn when its loop has ended

	// contact is what the servers' answers tell of when they last heard
	// from the client, and when they last surely renewed the session
	// (renewals.go); in monotonic nanoseconds since the package's epoch
	// (mono, tap.go): not Unix time, and so not moved by a change of the
	// wall clock.
	contact renewals
	written writeHooks // creates that want to hear when their request is written
	dials   dialLog    // what the last dial of each server gave (dials.go)
	hb      heartbeat  // the pings of an idle connection (heartbeat.go)

	mu      sync.Mutex
	tcp     *tap    // the current TCP connection, closed on Close to unblock a handshake
	closing bool    // Close has begun: a connection dialled now is closed at once
	session Session // of the last handshake that gave one
	// before is the session before it (go-zookeeper moves to a new one when
	// the servers expired the last), and beforeRenewed its last renewal.
	before        Session
	beforeRenewed int64

	containers inflight // container and TTL creates under way (container.go)

	onUntracked func(why string) // Config.OnUntracked
	asked       time.Duration    // Config.SessionTimeout
	nservers    int              // len(Config.Servers)
}

// goZKSendBuffer is the size of go-zookeeper's default send buffer: a
// request of more than this (less the 4-byte length) fails with
// zk.ErrShortBuffer.
const goZKSendBuffer = 1536 * 1024

// Dial starts a go-zookeeper connection to cfg.Servers. It does no blocking
// work: go-zookeeper connects in the background, and cfg.OnEvent hears how
// it goes, from the moment Dial returns.
func Dial(cfg Config) (*Conn, error) {
	c := &Conn{onUntracked: cfg.OnUntracked, asked: cfg.SessionTimeout, nservers: len(cfg.Servers), hb: newHeartbeat()}
	ready := make(chan struct{}) // closed once c.Conn is set: events wait for it
	dial := cfg.Dial
	if dial == nil {
		dial = net.DialTimeout
	}
	logger := zkLogger(cfg.Log)
	c.dials.init(cfg.Servers)
	zc, events, err := zk.Connect(cfg.Servers, cfg.SessionTimeout,
		zk.WithHostProvider(&staticHosts{}),
		zk.WithEventCallback(func(ev zk.Event) {
			c.dials.event(ev)
			if cfg.OnEvent != nil {
				<-ready
				cfg.OnEvent(c, ev)
			}
		}),
		zk.WithLogger(logger),
		zk.WithMaxConnBufferSize(max(goZKSendBuffer, cfg.MaxRequest+4)),
		zk.WithDialer(c.dialer(c.dials.recording(dial))))
	if err != nil {
		return nil, err
	}
	c.Conn, c.events = zc, events
	close(ready)
	c.startHeartbeat()
	return c, nil
}

// zkLogger is go-zookeeper's logger as a function.
type zkLogger func(format string, args ...any)

func (l zkLogger) Printf(format string, args ...any) {
	if l != nil {
		l(format, args...)
	}
}

// Session returns the session of the last handshake that gave one: zero
// before the first.
func (c *Conn) Session() Session {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// LastContact returns the send time of the newest request the servers have
// answered, zero before the first answer. It carries a monotonic clock
// reading (it is measured from a time.Now taken at start-up), so that
// time.Until and Sub against it are not moved by a change of the wall
// clock. It is when the client last heard from a server, not when the
// session was last surely renewed: see LastRenewal.
func (c *Conn) LastContact() time.Time {
	newest, _ := c.contact.times()
	return monoTime(newest)
}

// LastRenewal returns the send time of the newest answered request whose
// renewal of the session had surely reached the servers' leader (see
// renewals.go: an answer from a follower cut off from its leader renews
// nothing there), zero before the first. No server expires the session
// sooner than its negotiated timeout after LastRenewal. A handshake that
// attached to the session counts at once. It carries a monotonic clock
// reading, as LastContact.
func (c *Conn) LastRenewal() time.Time {
	_, renewed := c.contact.times()
	return monoTime(renewed)
}

// WhenRenewed calls f once, the next time LastRenewal moves forward (or
// never), on go-zookeeper's reader: f must not block. A later call replaces
// an f not yet called.
func (c *Conn) WhenRenewed(f func()) { c.contact.when.Store(&f) }

// monoTime is ns (mono) as a time, zero for 0.
func monoTime(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return epoch.Add(time.Duration(ns))
}

// OnWritten calls h as a create request for serverPath is written to the
// connection, before its reply can come, and returns the id that forgets h
// (Forget). h hears of the first create of serverPath written once OnWritten
// is called, whoever made it: not only the caller's (two callers creating
// the same path on one connection may each hear of the other's; a caller
// checks that the reply it gets is its own), and only once (a create
// retried on the connection is not heard of again). It may be called
// shortly after Forget has returned (go-zookeeper's writer had taken h
// already): h must cope with that. go-zookeeper
// writes requests one at a time in the order they were made, and the
// server handles a session's requests in that order: a request made once h
// has been called reaches the server after the create, without waiting for
// the create's reply. h runs on go-zookeeper's writer: it must not block.
// It says nothing of the create's outcome (should the write fail, the
// create is retried, if at all, on another connection, where a request h
// made may come first).
func (c *Conn) OnWritten(serverPath string, h WriteHook) (id uint64) {
	return c.written.add(serverPath, h)
}

// Forget forgets the hook OnWritten registered with id, if it has not been
// called.
func (c *Conn) Forget(id uint64) { c.written.forget(id) }

// Close closes the connection (its session too, if connected: go-zookeeper
// sends closeSession) and waits until go-zookeeper's goroutines for it have
// ended; every watch set through it has fired (zk.EventNotWatching) by then.
func (c *Conn) Close() { c.close(false) }

// Abandon closes the connection without closing its session: the TCP
// connection goes first (Cut), and no other is made, so go-zookeeper has
// none to send closeSession on (it would, on one it made in the meantime).
// The session lives on the servers until it expires or CloseSession closes
// it. Like Close, it waits for go-zookeeper's goroutines.
func (c *Conn) Abandon() { c.close(true) }

// Cut is the first step of Abandon, which does not wait: it closes the TCP
// connection and makes the dialer refuse any other, so that no request
// reaches a server through c from the moment it returns (a request made
// later fails once go-zookeeper sees the connection gone). Abandon must
// still be called, to end go-zookeeper's goroutines.
func (c *Conn) Cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closing = true
	if c.tcp != nil {
		c.tcp.Close()
	}
}

func (c *Conn) close(abandon bool) {
	if abandon {
		c.Cut()
	} else {
		c.mu.Lock()
		c.closing = true // the dialer refuses from now on
		c.mu.Unlock()
	}
	c.containers.drain(containerDrainWait)
	c.Conn.Close()
	c.mu.Lock()
	if c.tcp != nil {
		c.tcp.Close() // unblocks a handshake go-zookeeper may be stuck in
	}
	c.mu.Unlock()
	for range c.events { // closed when go-zookeeper's loop has ended
	}
	c.stopHeartbeat()
}

// dialer wraps dial for go-zookeeper: it keeps the TCP connection (to close
// it on Close), closes one dialled once Close has begun, taps it (tap), and
// bounds its handshake (handshake.go).
func (c *Conn) dialer(dial zk.Dialer) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := dial(network, address, timeout)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closing {
			nc.Close()
			return nil, zk.ErrClosing
		}
		t := &tap{Conn: nc, c: c}
		t.boundHandshake(address, c.handshakeBound())
		c.tcp = t
		return t, nil
	}
}

// setSession records the session a connect response gave. A new one (not
// the one resumed) keeps the last one's renewal for SessionRenewal, and
// starts its own from none: the handshake that made it is answered next.
func (c *Conn) setSession(s Session) {
	defer c.hb.sessionBegan()
	c.mu.Lock()
	defer c.mu.Unlock()
	margin := int64(s.Timeout / 20)
	if c.session.ID != 0 && s.ID != c.session.ID {
		c.before, c.beforeRenewed = c.session, c.contact.reset(margin)
	} else {
		c.contact.setMargin(margin)
	}
	c.session = s
}

// SessionRenewal returns the last renewal (as LastRenewal) and the
// negotiated timeout of session id: the current one, or the one just
// before it; zeros for any other. Once go-zookeeper has moved to a new
// session, the old one's last renewal and timeout are still known: when
// the servers could first have expired it is its last renewal plus its
// timeout, not anything of the new session's handshake.
func (c *Conn) SessionRenewal(id int64) (last time.Time, timeout time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case id == 0:
		return time.Time{}, 0
	case id == c.session.ID:
		_, renewed := c.contact.times()
		return monoTime(renewed), c.session.Timeout
	case id == c.before.ID:
		return monoTime(c.beforeRenewed), c.before.Timeout
	}
	return time.Time{}, 0
}

// SessionString formats a session id as ZooKeeper's logs do.
func SessionString(id int64) string { return fmt.Sprintf("0x%x", id) }
