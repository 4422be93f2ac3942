package framework

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/gocurator/curator/internal/zkwire"
)

// A create made WhenSent(fn) calls fn as soon as its request has been
// written to the connection. go-zookeeper writes requests one at a time, in
// the order they were made, on one connection, and the server handles a
// session's requests in that order: so a request made once fn has been
// called reaches the server after the create, without waiting for the
// create's reply. It is how a caller pipelines a read behind its create
// (the semaphore lists its leases so), where go-zookeeper's calls, which
// block until their reply, would otherwise cost a round trip each.

// sentHooks are the creates waiting to hear that their request was written.
type sentHooks struct {
	waiting atomic.Int32 // len(hooks), read on every write
	mu      sync.Mutex
	hooks   []*sentHook
}

// sentHook is one create's: fn, once a create of serverPath is written.
type sentHook struct {
	serverPath string
	fn         func()
}

// add registers fn for the next create of serverPath written; the returned
// function forgets it (whether or not it was called).
func (s *sentHooks) add(serverPath string, fn func()) (remove func()) {
	h := &sentHook{serverPath: serverPath, fn: fn}
	s.mu.Lock()
	s.hooks = append(s.hooks, h)
	s.waiting.Store(int32(len(s.hooks)))
	s.mu.Unlock()
	return func() { s.take(func(x *sentHook) bool { return x == h }) }
}

// take removes and returns the first hook match accepts, or nil.
func (s *sentHooks) take(match func(*sentHook) bool) *sentHook {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, h := range s.hooks {
		if match(h) {
			s.hooks = append(s.hooks[:i], s.hooks[i+1:]...)
			s.waiting.Store(int32(len(s.hooks)))
			return h
		}
	}
	return nil
}

// written is told of every write to a connection: the frames in p, whole
// (go-zookeeper writes one request a write). Each create among them calls
// the hook waiting for its path, once. It costs an atomic load while no
// create waits.
func (s *sentHooks) written(p []byte) {
	if s == nil || s.waiting.Load() == 0 {
		return
	}
	for len(p) >= zkwire.FrameHeaderLen {
		n, ok := zkwire.FrameLen([zkwire.FrameHeaderLen]byte(p))
		if !ok || len(p) < zkwire.FrameHeaderLen+n {
			return
		}
		frame := p[:zkwire.FrameHeaderLen+n]
		p = p[len(frame):]
		if path, ok := createPath(frame); ok {
			if h := s.take(func(h *sentHook) bool { return h.serverPath == string(path) }); h != nil {
				h.fn()
			}
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
