package zkconn

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// The handshake's bound. go-zookeeper waits for the answer to its connect
// request ten times its read timeout, 20/3 of the session timeout (400 s
// for a minute's session: conn.go, authenticate), pinned to that server
// however many others the connect string names. ZooKeeper's Java client
// waits the session timeout divided by the number of servers (ClientCnxn's
// connectTimeout), then tries the next; the door does the same: a
// connection whose handshake is not answered within that bound is closed,
// and go-zookeeper dials again (the next server). Servers that take a
// connection and never answer its handshake: a stalled JVM; ZooKeeper
// 3.8.0's standalone mode, with a connection made while it starts; 3.8.0's
// ZOOKEEPER-4537, which can strand a lone client's createSession in a
// quorum until another request comes (the next handshake's frees it).

// ErrNoAnswer is wrapped by a ServerDial's Err when the server took the
// connection and did not answer the handshake within its bound: the client
// closed the connection and dialled again.
var ErrNoAnswer = errors.New("no answer to the handshake")

// A tap's handshake, as far as its bound goes.
const (
	hsWaiting int32 = iota
	hsAnswered
	hsTimedOut
)

// handshake is the bound of a tap's handshake: whichever comes first, the
// answer or the bound, settles it.
type handshake struct {
	state atomic.Int32
	timer *time.Timer // nil: no bound
}

// handshakeBound is how long a server may take to answer the handshake of
// a connection dialled now: the session timeout (the one negotiated, once
// there is one) over the number of servers. c.mu is held.
func (c *Conn) handshakeBound() time.Duration {
	t := c.session.Timeout
	if t == 0 {
		t = c.asked
	}
	return t / time.Duration(max(c.nservers, 1))
}

// boundHandshake closes t's connection, and tells the dial log of server,
// if its handshake is not answered within bound.
func (t *tap) boundHandshake(server string, bound time.Duration) {
	if bound <= 0 {
		return
	}
	t.hs.timer = time.AfterFunc(bound, func() {
		if t.hs.state.CompareAndSwap(hsWaiting, hsTimedOut) {
			t.c.dials.noAnswer(server, fmt.Errorf("%w within %v", ErrNoAnswer, bound))
			t.Conn.Close()
		}
	})
}

// handshakeAnswered settles t's handshake: the connect response has come.
func (t *tap) handshakeAnswered() {
	if t.hs.state.CompareAndSwap(hsWaiting, hsAnswered) && t.hs.timer != nil {
		t.hs.timer.Stop()
	}
}

// Close closes the connection and stops the handshake's bound.
func (t *tap) Close() error {
	if t.hs.timer != nil {
		t.hs.timer.Stop()
	}
	return t.Conn.Close()
}
