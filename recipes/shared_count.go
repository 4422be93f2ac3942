package recipes

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/retry"
)

// sharedCountRetryWait is how long the watcher waits before it reads the
// node again after a failure that the client's retry loop gave up on.
const sharedCountRetryWait = time.Second

// SharedCount is an int shared through one ZooKeeper node, which every
// participant watches. It is Curator's SharedCount. The node is PERSISTENT
// (container parents) and holds the count as a 4-byte big-endian int, as in
// Curator, so Go and Java participants share one count.
// InterProcessSemaphoreV2 can take its maximum number of leases from one
// (NewInterProcessSemaphoreV2WithCount).
//
// Start it before use and Close it when done; Close stops its watching.
// Start and Close follow the package's one lifecycle rule: starting twice,
// or after Close, fails with ErrInvalidState (a Start that failed may be
// called again); Close is idempotent. A zero SharedCount fails every call
// with framework.ErrInvalidArgument.
type SharedCount struct {
	client    *framework.Client
	path      string
	seed      int32
	life      lifecycle
	listeners listeners.Registry[func(int)]

	mu       sync.Mutex
	count    int
	czxid    int64 // of the node the count was read from, to notice a re-created node
	version  int32 // -1: not read yet
	gen      uint64
	notified uint64 // gen listeners last heard
	starting bool   // a Start is under way
}

// NewSharedCount returns the count at path, with seed as its value until it
// is read, and as the value of the node Start creates if there is none. A
// seed out of the int32 range, or a nil client, is an error wrapping
// framework.ErrInvalidArgument; a closed client wraps framework.ErrClosed; a bad path (the
// root included) is an error that unwraps to zk.ErrInvalidPath.
func NewSharedCount(client *framework.Client, path string, seed int) (*SharedCount, error) {
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	s, err := toInt32(seed)
	if err != nil {
		return nil, err
	}
	return &SharedCount{client: client, path: path, seed: s, count: seed, version: -1}, nil
}

// usable reports whether c was made by NewSharedCount.
func (c *SharedCount) usable() bool { return c != nil && c.client != nil }

// Path returns the count's node path ("" for a nil or zero count).
func (c *SharedCount) Path() string {
	if !c.usable() {
		return ""
	}
	return c.path
}

func (c *SharedCount) what() string { return "shared count " + c.path }

// Start creates the node with the seed if it is missing, reads it, and
// starts watching it. Listeners added before it hear the value it reads
// before it returns, on its caller's goroutine. Starting twice, or after
// Close, is an error wrapping ErrInvalidState. If Start fails, it may be
// called again.
func (c *SharedCount) Start(ctx context.Context) error {
	if !c.usable() {
		return errZero("SharedCount")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("%s: %w", c.what(), err)
	}
	c.mu.Lock()
	if c.starting || c.life.current() != latent {
		c.mu.Unlock()
		return errs.Errorf("%s: %w: started twice or after Close", c.what(), ErrInvalidState)
	}
	c.starting = true
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.starting = false
		c.mu.Unlock()
	}()
	w, err := c.start(ctx)
	if err != nil {
		return err
	}
	// Closed meanwhile: the lifecycle refuses, and the watch set is left
	// to fire with the node's next change.
	return c.life.start(c.what(), func(ctx context.Context) func() { c.watch(ctx, w); return nil })
}

func (c *SharedCount) start(ctx context.Context) (<-chan zk.Event, error) {
	_, err := c.client.Create(ctx, c.path, encodeCount(c.seed), framework.CreatingParentContainersIfNeeded())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return nil, errs.Errorf("shared count %s: %w", c.path, err)
	}
	data, stat, w, err := c.client.GetDataW(ctx, c.path)
	if err != nil {
		return nil, errs.Errorf("shared count %s: %w", c.path, err)
	}
	c.update(data, stat)
	c.notify()
	return w, nil
}

// watch re-reads the node at each event on it (re-arming the watch) and
// tells the listeners of each new value, until ctx ends or the client closes.
func (c *SharedCount) watch(ctx context.Context, w <-chan zk.Event) {
	for {
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
		for w = nil; w == nil; {
			data, stat, dw, err := c.client.GetDataW(ctx, c.path)
			switch {
			case err == nil:
				c.update(data, stat)
				c.notify()
				w = dw
				continue
			case ctx.Err() != nil || errors.Is(err, framework.ErrClosed):
				return
			case errors.Is(err, zk.ErrNoNode):
				// Deleted: wait for it to come back. This watch is meant to stay.
				var ok bool
				var ew <-chan zk.Event
				if ok, _, ew, err = c.client.ExistsW(ctx, c.path); err == nil {
					if !ok {
						w = ew
					}
					continue
				}
			}
			c.client.Logger().Info("shared count: reading failed; trying again", zap.String("path", c.path), zap.Error(err))
			if retry.Sleep(ctx, sharedCountRetryWait) != nil {
				return
			}
		}
	}
}

// update takes the value read from the node if it is newer than ours.
func (c *SharedCount) update(data []byte, stat *zk.Stat) {
	if len(data) != 4 {
		c.client.Logger().Warn("shared count: node does not hold a 4-byte int; ignored",
			zap.String("path", c.path), zap.Int("bytes", len(data)))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if stat.Czxid == c.czxid && stat.Version <= c.version {
		return
	}
	c.count = int(int32(binary.BigEndian.Uint32(data)))
	c.czxid, c.version = stat.Czxid, stat.Version
	c.gen++
}

// notify calls the listeners with the count if it changed since they last
// heard. Only the goroutine that reads the node calls it, so listeners hear
// the changes in order.
func (c *SharedCount) notify() {
	c.mu.Lock()
	if c.gen == c.notified || c.life.current() == closed {
		c.mu.Unlock()
		return
	}
	c.notified = c.gen
	n := c.count
	c.mu.Unlock()
	for _, l := range c.listeners.Snapshot() {
		ran, err := c.life.call(func() { l(n) })
		if !ran {
			return // closed: listeners hear nothing more
		}
		if err != nil {
			c.client.Logger().Error("shared count listener", zap.String("path", c.path), zap.Error(err))
		}
	}
}

// Count returns the current count (the seed until the node has been read;
// 0 for a nil or zero count).
func (c *SharedCount) Count() int {
	if !c.usable() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// VersionedCount returns the current count and the node's data version it
// was read at (-1 before the node has been read), for TrySetCount.
func (c *SharedCount) VersionedCount() (count int, version int32) {
	if !c.usable() {
		return 0, -1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count, c.version
}

// SetCount sets the count, whatever it is now. The count must be started
// (else the error wraps ErrInvalidState).
func (c *SharedCount) SetCount(ctx context.Context, n int) error {
	_, err := c.set(ctx, n, -1)
	return err
}

// TrySetCount sets the count only if the node is still at version (see
// VersionedCount), and reports whether it did. The count must be started
// (else the error wraps ErrInvalidState).
func (c *SharedCount) TrySetCount(ctx context.Context, n int, version int32) (bool, error) {
	ok, err := c.set(ctx, n, version)
	if errors.Is(err, zk.ErrBadVersion) {
		return false, nil
	}
	return ok, err
}

func (c *SharedCount) set(ctx context.Context, n int, version int32) (bool, error) {
	if !c.usable() {
		return false, errZero("SharedCount")
	}
	if err := checkContext(ctx); err != nil {
		return false, errs.Errorf("set %s: %w", c.what(), err)
	}
	v, err := toInt32(n)
	if err != nil {
		return false, err
	}
	if c.life.current() != started {
		return false, errs.Errorf("%s: %w: not started, or closed", c.what(), ErrInvalidState)
	}
	data := encodeCount(v)
	stat, err := c.client.SetData(ctx, c.path, data, version)
	if err != nil {
		return false, errs.Errorf("set shared count %s: %w", c.path, err)
	}
	c.update(data, stat) // listeners hear of it from the watch, as in Curator
	return true, nil
}

// AddListener registers fn to be called with the new count at each change the
// count sees from now on. fn is called on the count's own goroutine (but for
// the first value, read by Start: on Start's caller's), in the order of the
// changes; listeners are called in the order they were added. It
// returns a function that removes fn. A nil fn is ignored (remove then does
// nothing); a listener that panics is logged, and the others are still
// called.
func (c *SharedCount) AddListener(fn func(count int)) (remove func()) {
	if !c.usable() || fn == nil {
		return func() {}
	}
	return c.listeners.Add(fn)
}

// Close stops watching the node; no listener call begins once Close has
// begun. It waits for the watching goroutine to end, but never for a
// listener: if a listener call is under way (it may be the caller: a
// listener may close its count), Close returns at once. The node stays.
// Close is idempotent.
func (c *SharedCount) Close() error {
	if !c.usable() {
		return errZero("SharedCount")
	}
	c.life.close(closedError{c.what()}, nil)
	return nil
}

func toInt32(n int) (int32, error) {
	if n < math.MinInt32 || n > math.MaxInt32 {
		return 0, errs.Errorf("%w: count %d is out of the int32 range", framework.ErrInvalidArgument, n)
	}
	return int32(n), nil
}

func encodeCount(n int32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(n))
}
