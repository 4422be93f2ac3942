package listeners

import "sync"

// Gate is the door through which a goroutine that its owner's Close may
// wait for calls user code (listeners, a leadership function). Close shuts
// it, and from then on no call begins: one that comes later is refused. So
// Close decides once whether it may wait for the goroutine: if no call is
// under way as it shuts the gate, none ever will be, and the goroutine has
// only the library's own work left. The zero value is open.
type Gate struct {
	mu     sync.Mutex
	closed bool
	calls  int // calls under way
}

// Call runs f and reports true, unless Close has begun: then it runs
// nothing and reports false. A call under way (f's) is what Close does
// not wait for.
func (g *Gate) Call(f func()) (ran bool) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return false
	}
	g.calls++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.calls--
		g.mu.Unlock()
	}()
	f()
	return true
}

// Close shuts the gate: every Call that begins after it is refused. It
// reports whether its caller may wait for the goroutine that calls through
// the gate: true the first time, when no call is under way (one that is
// may be the caller's own, or wait for it); false on every later Close.
func (g *Gate) Close() (mayWait bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.closed = true
	return g.calls == 0
}
