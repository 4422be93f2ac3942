package zkconn

import (
	"sync"
	"time"

	"github.com/gocurator/curator/internal/zkwire"
)

// The heartbeat is the door's own clock on a session. What the framework
// tells a holder rests on the last renewal the servers surely had
// (renewals.go): for a client that writes nothing, go-zookeeper's pings
// alone, a third of the session timeout T apart (assumption 11), would
// leave that renewal up to ⅔ T old before the connection could even be
// seen to be silent. So while nothing has been written on a connection for
// HeartbeatInterval (T/10), the Conn writes a ping of its own there: an
// idle client's newest answered request is then never much more than T/10
// old and its last sure renewal never much more than T/5, and a silence
// shows as a renewal that stops coming, whatever go-zookeeper's timers do.
// A client that writes anyway (a busy one) writes no more than it would
// without: the heartbeat goes only where nothing else did. An idle client
// sends about ten pings a session timeout instead of go-zookeeper's three
// (at T = 40 s, one every 4 s).
//
// Why a tenth: the framework's deadlines count from the last sure renewal,
// which for an idle client trails its last answer by the interval. The
// smaller the interval, the later, for the same safety, a silent client is
// presumed lost, and so the longer a blip it outlives: at T/10, LOST comes
// at least 0.85 T after the last answer and 0.75 T after a blip's start,
// which leaves a quarter of T after the end of a blip of T/2 and 0.18 T
// after go-zookeeper's read timeout to reconnect (framework/clock.go,
// docs/guarantees.md's timeline); at go-zookeeper's T/3 it left none.
//
// The ping is the very frame go-zookeeper sends (xid -2, opcode 11): the
// server answers it in the session's order, as every request, which is what
// renews a session, and go-zookeeper's reader ignores its answer
// (assumption 12). It is written through the tap, between two of
// go-zookeeper's writes (the tap serialises them and records each as any
// request, so its answer counts), and only once the connection has a
// session: never before the connect response, which must come first.
//
// The Conn's heartbeat is one goroutine, started by Dial and ended by
// Close (and Abandon); it looks at the connection once an interval and
// writes nothing while the Conn closes.

// heartbeatDivisor gives the heartbeat's interval: the negotiated session
// timeout over it.
const heartbeatDivisor = 10

// minHeartbeat bounds the interval from below: no server grants a session
// timeout under 2 ticks, but a Conn made by hand may ask for less.
const minHeartbeat = 10 * time.Millisecond

// HeartbeatInterval is how long a connection of a session with timeout t
// may go without a write before the Conn writes a ping of its own: t/10.
func HeartbeatInterval(t time.Duration) time.Duration {
	return max(t/heartbeatDivisor, minHeartbeat)
}

// pingFrame is a ping as go-zookeeper writes it: xid -2, opcode 11.
var pingFrame = zkwire.PutFrame([]byte{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, opPing})

// opPing is the opcode of a ping.
const opPing = 11

// heartbeat is a Conn's heartbeat goroutine: stop ends it, done is closed
// once it has.
type heartbeat struct {
	kick     chan struct{} // a session began: look again now (its timeout may not be the one asked for)
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// sessionBegan wakes the heartbeat to look again, with the interval of the
// session just granted: until then it went by the timeout asked for, which
// the servers may have cut short (60 s asked, 4 s granted: an idle client
// would otherwise go 6 s on go-zookeeper's pings alone, long enough for the
// clock to call it silent).
func (h *heartbeat) sessionBegan() {
	select {
	case h.kick <- struct{}{}:
	default: // a look is due already
	}
}

// startHeartbeat starts c's heartbeat.
func (c *Conn) startHeartbeat() {
	c.hb.stop, c.hb.done = make(chan struct{}), make(chan struct{})
	go c.beat()
}

// newHeartbeat is a heartbeat not yet started: a session may begin (and
// kick it) before Dial starts it.
func newHeartbeat() heartbeat { return heartbeat{kick: make(chan struct{}, 1)} }

// stopHeartbeat ends c's heartbeat and waits until it has; it may be
// called again. A ping being written ends with the TCP connection, which
// the caller has closed, or within its own deadline.
func (c *Conn) stopHeartbeat() {
	c.hb.stopOnce.Do(func() { close(c.hb.stop) })
	<-c.hb.done
}

// beat looks at the connection once an interval, and writes a ping where
// nothing has been written for that long.
func (c *Conn) beat() {
	defer close(c.hb.done)
	timer := time.NewTimer(HeartbeatInterval(c.asked))
	defer timer.Stop()
	for {
		select {
		case <-c.hb.stop:
			return
		case <-timer.C:
		case <-c.hb.kick:
		}
		timer.Reset(c.beatOnce())
	}
}

// beatOnce writes a ping on the current connection if it has a session and
// nothing has been written on it for the interval, and returns how long to
// wait before looking again.
func (c *Conn) beatOnce() time.Duration {
	c.mu.Lock()
	t, closing := c.tcp, c.closing
	timeout := c.session.Timeout
	c.mu.Unlock()
	if timeout == 0 {
		timeout = c.asked
	}
	every := HeartbeatInterval(timeout)
	if closing || t == nil || !t.live.Load() {
		return every
	}
	if idle := time.Duration(mono() - t.lastWrite.Load()); idle < every {
		return every - idle
	}
	t.ping(every, timeout)
	return every
}

// ping writes the heartbeat's ping, unless something was written within
// the last interval every (the check is made again here, under the
// writer's lock), with a write deadline of its own: ⅔ of the session's
// timeout, the silence after which go-zookeeper's reader drops the
// connection anyway (assumption 10). A connection that cannot take 12
// bytes in that long is closed, as go-zookeeper closes one whose write
// fails (it then dials again). go-zookeeper's deadline of the moment is put
// back after (assumption 12).
func (t *tap) ping(every, timeout time.Duration) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if time.Duration(mono()-t.lastWrite.Load()) < every {
		return
	}
	_ = t.Conn.SetWriteDeadline(time.Now().Add(2 * timeout / 3))
	_, err := t.write(pingFrame)
	_ = t.Conn.SetWriteDeadline(t.deadline)
	if err != nil {
		t.Conn.Close()
	}
}
