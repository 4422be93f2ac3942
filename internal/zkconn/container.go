package zkconn

import (
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// go-zookeeper (v1.0.4) has a data race in CreateContainer and CreateTTL
// (assumption 7): unlike Create, they read the reply's path even when the
// call ended because the connection was closed, while the connection's
// receive loop may be decoding that very reply into it. So a container or
// TTL create and the Close of its connection must not overlap: before a
// connection closes, it waits (for a bounded time) for those creates under
// way on it, and one asked for while it closes fails at once with
// zk.ErrConnectionClosed, as go-zookeeper's call would.

// containerDrainWait bounds Close's wait for container creates: on a
// working connection their replies come within it; on one that answers
// nothing (dead, or black-holed) none is being decoded when it ends, and a
// create still queued ends with the Close.
const containerDrainWait = time.Second

// CreateContainer is zk.Conn.CreateContainer, kept from overlapping Close.
func (c *Conn) CreateContainer(path string, data []byte, flags int32, acl []zk.ACL) (string, error) {
	if !c.containers.enter() {
		return "", zk.ErrConnectionClosed
	}
	defer c.containers.leave()
	return c.Conn.CreateContainer(path, data, flags, acl)
}

// CreateTTL is zk.Conn.CreateTTL, kept from overlapping Close as
// CreateContainer is.
func (c *Conn) CreateTTL(path string, data []byte, flags int32, acl []zk.ACL, ttl time.Duration) (string, error) {
	if !c.containers.enter() {
		return "", zk.ErrConnectionClosed
	}
	defer c.containers.leave()
	return c.Conn.CreateTTL(path, data, flags, acl, ttl)
}

// inflight counts the container and TTL creates under way on a connection.
type inflight struct {
	mu      sync.Mutex
	n       int
	closing bool
	idle    chan struct{} // closed when n drops to 0 while closing
}

// enter counts a create in, unless the connection is closing.
func (f *inflight) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closing {
		return false
	}
	f.n++
	return true
}

func (f *inflight) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n--; f.n == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
}

// drain refuses new creates and waits, at most timeout, for those under
// way.
func (f *inflight) drain(timeout time.Duration) {
	f.mu.Lock()
	f.closing = true
	if f.n == 0 {
		f.mu.Unlock()
		return
	}
	f.idle = make(chan struct{})
	idle := f.idle
	f.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
	case <-t.C:
	}
}
