package framework

import (
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/zkconn"
)

// NoServerError is the error of a client that no server answered: it names
// every server of the connect string and what its last dial gave. It
// unwraps to Err.
type NoServerError struct {
	// Waited is how long no server answered: the time a call waited
	// (its retries included), or, from Unreachable, since the client lost
	// its connection (or began).
	Waited time.Duration
	// Servers are the servers of the connect string, in its order, each
	// with what the client's last dial of it gave.
	Servers []ServerDial
	// Err is what ended the wait: zk.ErrNoServer (a connection loss, which
	// the retry policies retry), or the context's error.
	Err error
}

// Error returns "gocurator: no server answered for <Waited>: <server>
// (<what its last dial gave>), ...", then Err unless it is zk.ErrNoServer;
// "for <Waited>" is left out when Waited is 0.
func (e *NoServerError) Error() string {
	msg := errs.Prefix + "no server answered"
	if e.Waited != 0 {
		msg += " for " + e.Waited.Round(time.Millisecond).String()
	}
	msg += ": " + serverDials(e.Servers).String()
	if e.Err != nil && e.Err != zk.ErrNoServer {
		msg += ": " + errs.Strip(e.Err.Error())
	}
	return msg
}

// Unwrap returns Err, or zk.ErrNoServer if Err is nil.
func (e *NoServerError) Unwrap() error {
	if e.Err == nil {
		return zk.ErrNoServer
	}
	return e.Err
}

// ServerDial is how the client's last dial of one server went.
type ServerDial struct {
	// Server is the server, "host:port".
	Server string
	// At is when the dial ended (or what followed it); zero if the server
	// has not been dialled.
	At time.Time
	// Err is why the dial failed: the dialer's error (connection refused, a
	// timeout, a TLS handshake...), or the server took the connection and
	// closed it before a session began (it is not serving: starting, or
	// without a quorum), or it did not answer the handshake within the
	// session timeout over the number of servers (the client dialled
	// again), or the connection dropped. nil: it connected.
	Err error
}

// String returns "host:port (what the dial gave)", for example
// "127.0.0.1:2181 (connection refused)".
func (d ServerDial) String() string {
	switch {
	case d.At.IsZero():
		return d.Server + " (not dialled yet)"
	case d.Err == nil:
		return d.Server + " (connected, no session yet)"
	}
	return d.Server + " (" + zkconn.Reason(d.Err) + ")"
}

// serverDials are the servers as a NoServerError names them.
type serverDials []ServerDial

// String returns each server with its dial (ServerDial.String), comma
// separated.
func (s serverDials) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return strings.Join(parts, ", ")
}

// dials returns what the current connection's last dial of each server gave.
func (c *Client) dials() serverDials { return toServerDials(c.zk().Dials()) }

func toServerDials(d zkconn.Dials) serverDials {
	out := make(serverDials, len(d.Servers))
	for i, s := range d.Servers {
		out[i] = ServerDial{Server: s.Server, At: s.At, Err: s.Err}
	}
	return out
}

// noServer is the error of a call (or of BlockUntilConnected) that found no
// server, begun at start and ended with err: a *NoServerError.
func (c *Client) noServer(err error, start time.Time) error {
	return &NoServerError{Waited: time.Since(start), Servers: c.dials(), Err: err}
}

// Unreachable reports whether every server has refused the client: it is
// not connected, and since it last was (or since New) a dial of each
// server has failed, other than by a timeout (connection refused, no
// route to the host, an unknown host, a TLS handshake refused), and none
// has connected since. A server that took the connection, even to close
// it, has not refused, nor has one whose dial timed out: it may only be
// slow. Then Unreachable returns a *NoServerError naming each server and
// why its last dial failed (Waited: since the connection was lost), which
// unwraps to zk.ErrNoServer; otherwise nil. next is closed when the
// client's next dial of a server ends (a change of state does not close
// it: AddListener hears those).
//
// The client goes on dialling the servers in turn, pausing a second after
// each round in vain: an operation waits for a connection meanwhile, as
// the retry policy allows. Unreachable lets a caller that would rather
// give up, or show why it waits, tell an ensemble that refuses from one
// that is slow.
func (c *Client) Unreachable() (next <-chan struct{}, err error) {
	if !c.usable() {
		return closedChan, errUnusable
	}
	connected := c.sm.State().IsConnected()
	d := c.zk().Dials()
	if connected || !d.RefusedSince(d.Connected) {
		return d.Next, nil
	}
	return d.Next, &NoServerError{Waited: time.Since(d.Since), Servers: toServerDials(d), Err: zk.ErrNoServer}
}
