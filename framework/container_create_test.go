package framework

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// Closing a client while container creates are under way on it is clean
// under the race detector (go-zookeeper's CreateContainer would read the
// reply the receive loop is still decoding: container_create.go), and each
// create ends, made or failed.
func TestCloseDuringContainerCreates(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	for round := 0; round < 30; round++ {
		c, err := New(server.Addr(), retry.NewNTimes(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.BlockUntilConnected(ctx); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					p := fmt.Sprintf("%s/r%d-g%d-%d", base, round, g, i)
					if _, err := c.Create(context.Background(), p, nil, WithMode(Container)); err != nil {
						return // closed: the create failed, as it should
					}
				}
			}()
		}
		time.Sleep(time.Duration(round%5) * time.Millisecond) // a different moment to close at each round
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		testutil.Wait(t, &wg, "the creates after Close")
	}
}

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
	for {
		f.mu.Lock()
		closing := f.closing
		f.mu.Unlock()
		if closing {
			break
		}
		time.Sleep(time.Millisecond) // polling until drain has begun
	}
	if f.enter() {
		t.Fatal("enter while closing accepted")
	}
	select {
	case <-drained:
		t.Fatal("drain returned with a create under way")
	case <-time.After(50 * time.Millisecond):
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
