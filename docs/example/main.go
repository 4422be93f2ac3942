// Command example is the README's example, kept compiling and run by its
// test: a lock held with recipes.WithLock, then by hand, fencing a write.
// It connects to $ZK_SERVERS (default 127.0.0.1:2181: `make zk-up`).
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

func main() {
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	servers := os.Getenv("ZK_SERVERS")
	if servers == "" {
		servers = "127.0.0.1:2181"
	}
	client, err := framework.New(servers, retry.NewExponentialBackoff(100*time.Millisecond, 5))
	if err != nil {
		return err
	}
	defer client.Close()

	mu, err := recipes.NewInterProcessMutex(client, "/locks/orders")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // Curator's acquire(time, unit)
	defer cancel()
	store := &fencedStore{}

	// One handle is one owner: goroutines that share it do not exclude each
	// other. Give each goroutine its own (mu.NewHandle()).
	h := mu.NewHandle()

	// WithLock acquires, runs the function and releases. Its ctx ends if the
	// lock can no longer be trusted (SUSPENDED, LOST), and then err wraps
	// recipes.ErrLockLost: the work was not protected all along.
	err = recipes.WithLock(ctx, h, func(ctx context.Context) error {
		token, err := h.FencingToken(ctx) // the lock node's czxid: rises across holders
		if err != nil {
			return err // lost: write nothing
		}
		return store.Write(token, "orders", "v1")
	})
	if err != nil {
		return err
	}

	// By hand: Done closes when the acquisition ends, lost or released, so
	// this goroutine always returns; Err tells which.
	if err := h.Acquire(ctx); err != nil {
		return err
	}
	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	go func() {
		<-h.Done()
		if errors.Is(h.Err(), recipes.ErrLockLost) {
			stopWork()
		}
	}()
	token, err := h.FencingToken(work)
	if err == nil {
		err = store.Write(token, "orders", "v2")
	}
	return errors.Join(err, h.Release(context.Background())) // after a loss, Release says ErrLockLost
}

// fencedStore stands for the resource the lock protects: it refuses a
// token lower than the highest it has accepted (docs/guarantees.md).
type fencedStore struct {
	mu      sync.Mutex
	highest int64
}

func (s *fencedStore) Write(token int64, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("stale holder: token %d < %d", token, s.highest)
	}
	s.highest = token
	fmt.Printf("%s=%s under token %d\n", key, value, token)
	return nil
}
