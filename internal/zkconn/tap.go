package zkconn

import (
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocurator/curator/internal/zkwire"
)

// A tap is one TCP connection of a Conn, as go-zookeeper dials it: every
// byte passes through unchanged, and the tap follows the frames both ways
// (assumptions 1–3 of the package doc). It reads the session's credentials
// from the connect response, pairs each reply with its request to tell when
// the servers last heard from the client (Conn.LastContact) and last surely
// renewed the session (Conn.LastRenewal), and tells
// whoever waits for a create request that it has been written.
type tap struct {
	net.Conn
	c  *Conn
	hs handshake // its bound (handshake.go)

	// The writer's side: go-zookeeper's writes and the heartbeat's pings
	// (heartbeat.go) take wmu, so that frames stay whole; deadline is the
	// write deadline go-zookeeper last set, put back after a ping.
	wmu       sync.Mutex
	deadline  time.Time
	lastWrite atomic.Int64 // mono ns of the last write begun
	live      atomic.Bool  // the connect response gave a session: pings may go

	mu      sync.Mutex
	sentHs  bool   // the connect request has been written
	pending []sent // requests written and not yet answered (from head on), oldest first
	head    int

	// What Read has read ahead (rbuf[r:w]), and the error that came with
	// it; only Read touches these.
	rbuf []byte
	r, w int
	rerr error

	// The frames read so far; only Read touches these.
	stream zkwire.ServerStream
	lost   bool // the stream is not ZooKeeper's frames: stop following it
}

// sent is a request written: its xid, whether its reply renews the session
// (contact), and when.
type sent struct {
	xid     int32
	contact bool
	at      int64 // monotonic ns (mono)
}

// The opcodes of the requests a server answers without renewing the
// session: it handles them as they arrive, not through its request
// pipeline, which is where a session is touched (ZooKeeperServer.
// processPacket: auth, sasl).
const (
	opAuth = 100
	opSASL = 102
)

// handshakeXid stands for the connect request, which has no xid.
const handshakeXid = math.MinInt32

// epoch is the zero of mono.
var epoch = time.Now()

// mono returns monotonic nanoseconds since epoch.
func mono() int64 { return int64(time.Since(epoch)) }

// Write writes go-zookeeper's frames.
func (t *tap) Write(p []byte) (int, error) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	return t.write(p)
}

// SetWriteDeadline sets the write deadline, as go-zookeeper asks before
// each write, and keeps it for the heartbeat to put back.
func (t *tap) SetWriteDeadline(d time.Time) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.deadline = d
	return t.Conn.SetWriteDeadline(d)
}

// write records the frames of p and writes them; t.wmu is held.
func (t *tap) write(p []byte) (int, error) {
	now := mono()
	t.lastWrite.Store(now)
	hooks := t.c.written.waiting.Load() != 0 // while no create waits, a frame costs no parse of its path
	for frame := range zkwire.Frames(p) {
		if !t.sent(frame, now) {
			continue // the connect request: no xid, and no create
		}
		// Hooks hear of a request as it is written, before the Write
		// returns: its reply cannot come before they have heard of it, and
		// a request they make is queued behind it (go-zookeeper's writer is
		// in this very Write). Should the Write fail, the request is sent
		// again, if at all, on another connection, where a request a hook
		// made may come first: whoever reads its reply checks that it sees
		// what it waits for.
		if hooks {
			t.c.written.created(t.c, frame)
		}
	}
	return t.Conn.Write(p)
}

// sent records frame, written at now, as waiting for its reply, and
// reports whether it is a request (false: the connect request, the first
// frame written).
func (t *tap) sent(frame []byte, now int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.sentHs {
		t.sentHs = true
		t.pending = append(t.pending, sent{handshakeXid, true, now})
		return false
	}
	if xid, op, ok := zkwire.RequestHeader(frame); ok {
		t.pending = append(t.pending, sent{xid, op != opAuth && op != opSASL, now})
	}
	return true
}

// readAhead is how much Read asks the connection for at once.
const readAhead = 16 << 10

// Read reads ahead, as bufio does: go-zookeeper reads a reply's length, then
// its body, with a read each; one read of the connection serves both, and
// the replies that arrive together (a create's and the listing's behind it).
func (t *tap) Read(p []byte) (int, error) {
	if t.r == t.w {
		if t.rerr != nil {
			err := t.rerr
			t.rerr = nil
			return 0, err
		}
		if len(p) >= readAhead { // a large frame's body: no copy
			n, err := t.Conn.Read(p)
			t.seen(p[:n])
			return n, err
		}
		if t.rbuf == nil {
			t.rbuf = make([]byte, readAhead)
		}
		n, err := t.Conn.Read(t.rbuf)
		t.r, t.w = 0, n
		if n == 0 {
			return 0, err
		}
		t.rerr = err // given after the data, as bufio does
	}
	n := copy(p, t.rbuf[t.r:t.w])
	t.r += n
	t.seen(p[:n])
	return n, nil
}

// seen follows the bytes go-zookeeper gets.
func (t *tap) seen(b []byte) {
	if len(b) == 0 || t.lost {
		return
	}
	if err := t.stream.Follow(b, t.connectRead, t.replyRead); err != nil {
		t.lost = true
		if f := t.c.onUntracked; f != nil {
			f(fmt.Sprintf("%v, from %s", err, t.RemoteAddr()))
		}
	}
}

// connectRead handles the connect response, read whole.
func (t *tap) connectRead(frame []byte) {
	t.handshakeAnswered()
	if timeout, id, passwd, ok := zkwire.ParseConnectResponse(frame); ok && id != 0 {
		t.c.setSession(Session{ID: id, Passwd: passwd, Timeout: time.Duration(timeout) * time.Millisecond})
		t.answered(handshakeXid)
		t.live.Store(true)
	}
}

// replyRead handles a reply or a watch event, read whole.
func (t *tap) replyRead(xid int32) {
	if xid != zkwire.NotificationXid {
		t.answered(xid)
	}
}

// answered records the reply to the oldest request written with xid.
func (t *tap) answered(xid int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := t.head; i < len(t.pending); i++ {
		s := t.pending[i]
		if s.xid != xid {
			continue
		}
		if i == t.head {
			t.head++ // the usual case: replies come in order
		} else {
			t.pending = append(t.pending[:i], t.pending[i+1:]...)
		}
		switch {
		case t.head == len(t.pending):
			t.pending, t.head = t.pending[:0], 0 // empty: reuse the array
		case t.head >= 1024 && 2*t.head >= len(t.pending):
			t.pending, t.head = t.pending[:copy(t.pending, t.pending[t.head:])], 0 // a queue never empty
		}
		if s.contact {
			t.c.contact.answered(s.at, xid == handshakeXid)
		}
		return
	}
}

// WriteHook hears that a create request has been written (Conn.OnWritten).
type WriteHook interface {
	// Written is called on go-zookeeper's writer as the request is written
	// on c: it must not block.
	Written(c *Conn)
}

// writeHooks are the creates waiting to hear that their request was
// written. They are kept by value, under ids, so that waiting costs no
// allocation once the slice has grown.
type writeHooks struct {
	waiting atomic.Int32 // len(hooks), read on every write
	mu      sync.Mutex
	nextID  uint64
	hooks   []writeHook
}

// writeHook is one create's: h, once a create of serverPath is written.
type writeHook struct {
	id         uint64
	serverPath string
	h          WriteHook
}

// add registers h for the next create of serverPath written, and returns
// the id that forgets it.
func (w *writeHooks) add(serverPath string, h WriteHook) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.nextID++
	w.hooks = append(w.hooks, writeHook{w.nextID, serverPath, h})
	w.waiting.Store(int32(len(w.hooks)))
	return w.nextID
}

// forget removes the hook with id, if it is still there.
func (w *writeHooks) forget(id uint64) {
	w.take(func(h *writeHook) bool { return h.id == id })
}

// take removes and returns the first hook match accepts.
func (w *writeHooks) take(match func(*writeHook) bool) (writeHook, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.hooks {
		if match(&w.hooks[i]) {
			h := w.hooks[i]
			w.hooks = append(w.hooks[:i], w.hooks[i+1:]...)
			w.waiting.Store(int32(len(w.hooks)))
			return h, true
		}
	}
	return writeHook{}, false
}

// created is told of every request frame written (not the connect
// request, whose body is no request's): a create among them calls the hook
// waiting for its path, once.
func (w *writeHooks) created(c *Conn, frame []byte) {
	if path, ok := createPath(frame); ok {
		if h, ok := w.take(func(h *writeHook) bool { return h.serverPath == string(path) }); ok {
			h.h.Written(c)
		}
	}
}

// The opcodes of the requests that create a node, whose body starts with
// its path.
const (
	opCreate          = 1
	opCreate2         = 15
	opCreateContainer = 19
	opCreateTTL       = 21
)

// createPath returns the path of a create request frame.
func createPath(frame []byte) ([]byte, bool) {
	_, op, ok := zkwire.RequestHeader(frame)
	if !ok || op != opCreate && op != opCreate2 && op != opCreateContainer && op != opCreateTTL {
		return nil, false
	}
	b := frame[zkwire.FrameHeaderLen+zkwire.RequestHeaderLen:]
	if len(b) < 4 {
		return nil, false
	}
	n := int(int32(binary.BigEndian.Uint32(b)))
	if n < 0 || n > len(b)-4 {
		return nil, false
	}
	return b[4 : 4+n], true
}
