// Package dialtrack is a dialer that knows which server a client is talking
// to: the address of the newest of its connections that is still open. The
// chaos suite's Go clients dial through one, to aim a fault at the member a
// client is connected to. A client may dial other servers meanwhile (to
// close an abandoned session, or in a failed attempt); those connections
// close, and the answer goes back to the one still open.
package dialtrack

import (
	"net"
	"sync"
	"time"
)

// Tracker dials, and remembers the connections it made until they close.
// The zero value is ready to use.
type Tracker struct {
	mu   sync.Mutex
	open []*conn // in dial order
}

type conn struct {
	net.Conn
	t    *Tracker
	addr string
	once sync.Once
}

// Dial dials addr as net.DialTimeout does, and tracks the connection.
func (t *Tracker) Dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	c := &conn{Conn: nc, t: t, addr: addr}
	t.mu.Lock()
	t.open = append(t.open, c)
	t.mu.Unlock()
	return c, nil
}

// Current returns the address dialled for the newest connection still
// open, or "" if none is.
func (t *Tracker) Current() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.open) == 0 {
		return ""
	}
	return t.open[len(t.open)-1].addr
}

// Close closes the connection and forgets it.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.t.mu.Lock()
		defer c.t.mu.Unlock()
		for i, o := range c.t.open {
			if o == c {
				c.t.open = append(c.t.open[:i:i], c.t.open[i+1:]...)
				break
			}
		}
	})
	return c.Conn.Close()
}
