package listeners

import "sync"

// Gate records whether a call is under way. The zero value is ready.
type Gate struct {
	mu      sync.Mutex
	closed  bool
	calling bool
}

// Call runs f, recording that a call is under way until it returns. Calls
// are meant to come from one goroutine, one at a time.
func (g *Gate) Call(f func()) {
	g.mu.Lock()
	g.calling = true
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.calling = false
		g.mu.Unlock()
	}()
	f()
}

// Close reports whether the caller may wait for the calling goroutine to
// end: true the first time, unless a call is under way (it may be the
// caller's own); false on every later Close.
func (g *Gate) Close() (mayWait bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.closed = true
	return !g.calling
}
