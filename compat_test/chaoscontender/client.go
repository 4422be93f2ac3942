// Package chaoscontender is the chaos suite's Go contender
// (compat_test/chaos_test.go; docs/guarantees.md, "The chaos suite"): a
// gocurator client whose contenders take a lock or stand in an election
// again and again, and tell the suite's referee, over HTTP, about every
// holding. The suite runs it in the test's own process and in
// compat_test/gopeer; CuratorPeer.java's chaos verb is its Java twin.
package chaoscontender

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// Client is a client position: its current gocurator client, which Replace
// swaps for a new one (a new session) while contenders wait on the old, and
// the contenders' waits, which CancelAcquires cuts short.
type Client struct {
	connect string
	opts    []framework.Option
	log     *zap.Logger
	http    *http.Client // to the referee
	bal     *balance     // what every generation's events add up to

	mu      sync.Mutex
	gen     *generation
	cancel  context.Context // cancelled (and replaced) by CancelAcquires
	cancelF context.CancelFunc
	waiting atomic.Int64
}

// generation is one gocurator client of a Client, with the locks made on it
// (by path), shared by its contenders as a process shares them.
type generation struct {
	fc       *framework.Client
	locks    map[string]any
	replaced chan struct{} // closed when Replace has made a newer one
}

// open opens a new gocurator client on the client position; it connects in
// the background.
func (c *Client) open() (*generation, error) {
	fc, err := framework.New(c.connect, retry.NewExponentialBackoff(20*time.Millisecond, 10, retry.WithMaxSleep(time.Second)), c.opts...)
	return &generation{fc: fc, locks: map[string]any{}, replaced: make(chan struct{})}, err
}

func (c *Client) current() *generation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// Replace opens a new client and closes the old one while its contenders
// wait on it; they go on with the new one.
func (c *Client) Replace() error {
	g, err := c.open()
	if err != nil {
		return err
	}
	c.mu.Lock()
	old := c.gen
	c.gen = g
	c.mu.Unlock()
	close(old.replaced)
	return old.fc.Close()
}

// CancelAcquires cancels every acquire (and every wait for a term) under
// way, and returns how many there were.
func (c *Client) CancelAcquires() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelF()
	c.cancel, c.cancelF = context.WithCancel(context.Background())
	return c.waiting.Load()
}

// Close closes the current client and the connections to the referee.
func (c *Client) Close() error {
	err := c.current().fc.Close()
	c.http.CloseIdleConnections()
	return err
}

// owner returns a new owner of ct's lock on the current client, and the
// client's generation. The locks are made on first use, one per path and
// client (a read-write lock's halves share one), shared by its contenders
// as a process shares them.
func (c *Client) owner(ct Contender) (owner, *generation, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.gen
	l, ok := g.locks[ct.Path]
	if !ok {
		var err error
		switch ct.Role {
		case Mutex:
			l, err = recipes.NewInterProcessMutex(g.fc, ct.Path)
		case Read, Write:
			l, err = recipes.NewInterProcessReadWriteLock(g.fc, ct.Path)
		default:
			l, err = recipes.NewInterProcessSemaphoreV2(g.fc, ct.Path, ct.Leases)
		}
		if err != nil {
			return nil, g, err
		}
		g.locks[ct.Path] = l
	}
	switch l := l.(type) {
	case *recipes.InterProcessMutex:
		return l.NewHandle(), g, nil
	case *recipes.InterProcessReadWriteLock:
		if ct.Role == Read {
			return l.NewHandle().ReadLock(), g, nil
		}
		return l.NewHandle().WriteLock(), g, nil
	}
	return &lease{s: l.(*recipes.InterProcessSemaphoreV2)}, g, nil
}

// owner is one acquisition's owner, whatever the recipe.
type owner interface {
	Done() <-chan struct{}
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	FencingToken(ctx context.Context) (int64, error)
}

// lease is a semaphore lease as an owner.
type lease struct {
	s *recipes.InterProcessSemaphoreV2
	l *recipes.Lease
}

func (o *lease) Acquire(ctx context.Context) (err error) {
	o.l, err = o.s.Acquire(ctx)
	return err
}
func (o *lease) Release(ctx context.Context) error               { return o.l.Close(ctx) }
func (o *lease) Done() <-chan struct{}                           { return o.l.Done() }
func (o *lease) FencingToken(ctx context.Context) (int64, error) { return o.l.FencingToken(ctx) }
