package zkconn

import (
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// A connection's close waits for the container creates under way, refuses
// those that come after, and waits no longer than its bound.
func TestInflightDrain(t *testing.T) {
	var f inflight
	if !f.enter() {
		t.Fatal("enter on an open connection refused")
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		f.drain(time.Minute)
	}()
	testutil.Until(t, "drain waiting for the create under way", func() (bool, string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.idle != nil, "no wait begun" // drain has refused new creates and waits for this one
	})
	if f.enter() {
		t.Fatal("enter while closing accepted")
	}
	select {
	case <-drained: // it waits for idle (closed by leave) or a minute: it cannot have returned
		t.Fatal("drain returned with a create under way")
	default:
	}
	f.leave()
	testutil.Recv(t, drained, "drain after the last create left")

	var g inflight
	g.enter()
	start := time.Now()
	g.drain(100 * time.Millisecond)
	if d := time.Since(start); d < 100*time.Millisecond || d > 10*time.Second {
		t.Fatalf("drain with a create stuck returned after %v, want its bound, 100ms", d)
	}
}
