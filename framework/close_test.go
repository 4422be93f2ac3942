package framework

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// Closing a client while container creates are under way on it is clean
// under the race detector (go-zookeeper's CreateContainer would read the
// reply the receive loop is still decoding: container_create.go), and each
// create ends, made or failed.
func TestCloseDuringContainerCreates(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	if _, err := testutil.Connect(t, server.Addr()).Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	made := 0
	for round := 0; round < 30; round++ {
		c, err := New(server.Addr(), retry.NewNTimes(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.BlockUntilConnected(ctx); err != nil {
			t.Fatal(err)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			first   = make(chan struct{}) // closed at the round's first create made
			created int
		)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					p := fmt.Sprintf("%s/r%d-g%d-%d", base, round, g, i)
					_, err := c.Create(context.Background(), p, nil, WithMode(Container))
					if err != nil {
						// Closed: the create failed, as it should, with the
						// client's or the connection's closing.
						if !errors.Is(err, zk.ErrClosing) && !errors.Is(err, zk.ErrConnectionClosed) {
							t.Errorf("create during Close: %v", err)
						}
						return
					}
					mu.Lock()
					if created++; created == 1 {
						close(first)
					}
					mu.Unlock()
				}
			}()
		}
		// Close while the creates are under way, once one has been made.
		testutil.Recv(t, first, "a first container create")
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		testutil.Wait(t, &wg, "the creates after Close")
		made += created
	}
	t.Logf("%d containers made before the closes", made)
}
