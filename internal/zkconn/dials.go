package zkconn

import (
	"errors"
	"net"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// The dial log: what the last dial of each server gave, so that a client
// that reaches no server can say why, server by server, and can tell when
// every server has refused it without waiting out a timeout.
// go-zookeeper logs a failed dial and goes on to the next server; it keeps
// no record.

// ServerDial is how a Conn's last dial of one server went.
type ServerDial struct {
	// Server is the server, "host:port", as in Config.Servers.
	Server string
	// At is when the dial ended, or what followed it (a handshake that
	// failed, a connection that dropped); zero if the server has not been
	// dialled.
	At time.Time
	// Err is why the dial failed (the dialer's error: connection refused, a
	// timeout...), or ErrNoSession (the server took the connection and
	// closed it before a session began), or ErrNoAnswer (it did not answer
	// the handshake within its bound: the client closed the connection), or
	// ErrDropped (the connection, with a session, dropped since). nil: the
	// dial connected.
	Err error

	n       uint64 // the number of the dial, counted from 1 in the order dials ended
	refused bool   // the dial itself failed, not by a timeout: Err is the dialer's
}

// Refused reports whether the dial itself failed other than by a timeout:
// the server refused the connection (or its TLS handshake), or could not
// be reached at all. A dial that timed out has not been refused: the
// server, or the network, may only be slow.
func (d ServerDial) Refused() bool { return d.refused }

// ErrNoSession is a ServerDial's Err when the server took the connection but
// closed it before a session began: it is not serving (it is starting, or
// has no quorum).
var ErrNoSession = errors.New("closed the connection before a session began")

// ErrDropped is a ServerDial's Err when the connection, which had a session, has
// dropped and the server has not been dialled since.
var ErrDropped = errors.New("connection dropped")

// Dials is what a Conn's dials have given so far.
type Dials struct {
	// Servers are the last dial of each server, in Config.Servers' order.
	Servers []ServerDial
	// Count is how many dials have ended (a handshake that failed or a
	// connection that dropped counts as one more).
	Count uint64
	// Connected is the number of the last dial that began a session (0:
	// none).
	Connected uint64
	// Since is when the Conn last lost a connection that had a session, or,
	// if it never has, when it was made.
	Since time.Time
	// Next is closed when the next dial ends.
	Next <-chan struct{}
}

// RefusedSince reports whether every server has refused since the n-th
// dial: the last dial of each was refused (ServerDial.Refused: a server
// that took the connection answered, one that timed out may be slow) and
// ended after it.
func (d Dials) RefusedSince(n uint64) bool {
	for _, s := range d.Servers {
		if !s.refused || s.n <= n {
			return false
		}
	}
	return len(d.Servers) > 0
}

// Reason is a dial's error in a few words: a network error's innermost
// cause ("connection refused", "i/o timeout"), without the operation and
// address the caller names already.
func Reason(err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		err = oe.Err
	}
	var se *os.SyscallError
	if errors.As(err, &se) && se.Err != nil {
		err = se.Err
	}
	return err.Error()
}

// timedOut reports whether err is a timeout (a dial's, a TLS handshake's
// deadline).
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// dialLog records a Conn's dials: the dialer go-zookeeper is given
// (record) and the session events that follow a dial (event).
type dialLog struct {
	mu          sync.Mutex
	servers     []string
	last        map[string]ServerDial
	count       uint64
	connected   uint64
	since       time.Time
	next        chan struct{}
	handshaking string // the server connected to whose handshake has not ended
	unanswered  error  // why the client gave that handshake up (noAnswer), if it did
	session     string // the server of the current session
}

// init readies the log for servers.
func (l *dialLog) init(servers []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers = append([]string(nil), servers...)
	l.last = make(map[string]ServerDial, len(servers))
	l.since = time.Now()
	l.next = make(chan struct{})
}

// recording returns dial, recording what each dial gives.
func (l *dialLog) recording(dial zk.Dialer) zk.Dialer {
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		nc, err := dial(network, address, timeout)
		l.mu.Lock()
		defer l.mu.Unlock()
		l.endLocked(address, err, err != nil && !timedOut(err))
		return nc, err
	}
}

// event follows the session events of go-zookeeper that tell how the
// connection a dial made went on: a handshake that ends without a session
// (ErrNoSession), a session's connection dropping (ErrDropped).
func (l *dialLog) event(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.State {
	case zk.StateConnected:
		l.handshaking = ev.Server
	case zk.StateHasSession:
		l.handshaking, l.session = "", ev.Server
		l.connected = l.last[ev.Server].n
	case zk.StateExpired:
		l.handshaking = "" // the server answered: the session had expired
	case zk.StateDisconnected:
		switch {
		case l.handshaking != "" && l.unanswered != nil:
			l.endLocked(l.handshaking, l.unanswered, false)
		case l.handshaking != "":
			l.endLocked(l.handshaking, ErrNoSession, false)
		case l.session != "":
			l.endLocked(l.session, ErrDropped, false)
			l.since = time.Now()
		}
		l.handshaking, l.session = "", ""
	}
	if l.handshaking == "" {
		l.unanswered = nil
	}
}

// noAnswer records that the client gave up the handshake with server, for
// err (ErrNoAnswer): the handshake's end, which follows, is told so.
func (l *dialLog) noAnswer(server string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handshaking == server {
		l.unanswered = err
	}
}

// endLocked records the end of a dial of server (or of what followed it);
// l.mu is held.
func (l *dialLog) endLocked(server string, err error, refused bool) {
	if l.last == nil {
		return // not a Conn's (init not called)
	}
	l.count++
	l.last[server] = ServerDial{Server: server, At: time.Now(), Err: err, n: l.count, refused: refused}
	close(l.next)
	l.next = make(chan struct{})
}

// Dials returns what the Conn's dials have given so far.
func (c *Conn) Dials() Dials {
	l := &c.dials
	l.mu.Lock()
	defer l.mu.Unlock()
	d := Dials{Servers: make([]ServerDial, len(l.servers)), Count: l.count, Connected: l.connected, Since: l.since, Next: l.next}
	for i, s := range l.servers {
		d.Servers[i] = l.last[s]
		d.Servers[i].Server = s
	}
	return d
}
