package recipes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gocurator/curator/framework"
)

// InterProcessMutex is Curator's InterProcessMutex: a reentrant mutex across
// processes, in Curator's exact tree, so Go and Java participants queue for
// the same lock. A lock value is shared; each owner takes a Handle. The same
// handle acquiring again only counts up; two handles contend through
// ZooKeeper, exactly as two Java threads do.
//
// Tree: each contender creates an EPHEMERAL_SEQUENTIAL node
// path/_c_<uuid>-lock-<seq> (parents are containers); the lowest sequence
// holds the lock; each waiter watches only its predecessor.
type InterProcessMutex struct {
	li   lockInternals
	d    driver
	name string
	data []byte

	held atomic.Int64 // handles of this value that hold the lock now
}

// LockOption configures a lock recipe.
type LockOption interface{ applyLock(*lockOptions) }

type lockOptions struct {
	data []byte
}

type lockOptionFunc func(*lockOptions)

func (f lockOptionFunc) applyLock(o *lockOptions) { f(o) }

// WithLockData sets the data of the lock nodes (default: the client's
// default data, the local IP address, as Curator writes). A revocable
// handle's node is always empty, as in Curator.
func WithLockData(data []byte) LockOption {
	return lockOptionFunc(func(o *lockOptions) { o.data = append([]byte{}, data...) })
}

// NewInterProcessMutex returns the mutex at path. A bad path (the root
// included) is an error that unwraps to zk.ErrInvalidPath; a nil client
// wraps ErrBadArgument, a closed one framework.ErrClosed.
func NewInterProcessMutex(client *framework.Client, path string, opts ...LockOption) (*InterProcessMutex, error) {
	return newMutex(client, path, mutexLockName, lockNameDriver(mutexLockName, 1), opts)
}

func newMutex(client *framework.Client, path, name string, d driver, opts []LockOption) (*InterProcessMutex, error) {
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	var o lockOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyLock(&o)
		}
	}
	return &InterProcessMutex{li: lockInternals{client: client, base: path}, d: d, name: name, data: o.data}, nil
}

// Path returns the lock's base path.
func (m *InterProcessMutex) Path() string { return m.li.base }

// NewHandle returns a new owner of the lock. Use one handle per goroutine
// (or per logical owner); it is safe for concurrent use, but reentrancy is
// counted per handle, not per goroutine.
func (m *InterProcessMutex) NewHandle() *Handle { return &Handle{m: m, hooks: &m.li} }

// IsAcquiredInThisProcess reports whether any handle of this mutex value holds it.
func (m *InterProcessMutex) IsAcquiredInThisProcess() bool { return m.held.Load() > 0 }

// ParticipantNodes returns the full paths of every child of the lock path,
// in queue order: the holder first. Foreign children are included, where
// they sort, as Curator's getParticipantNodes does.
func (m *InterProcessMutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	return m.li.participants(ctx, m.d)
}

// Handle is one owner of an InterProcessMutex. Its zero value is not usable:
// get one from NewHandle.
type Handle struct {
	m     *InterProcessMutex
	hooks handleHooks // how nodes are taken and given up: the mutex's lockInternals, or a read-write half

	mu        sync.Mutex // held across Acquire: a second Acquire of the same handle waits, then counts up
	count     int
	node      atomic.Pointer[heldNode]
	revocable func()
}

// Acquire takes the lock, waiting as long as ctx allows. If the handle
// already holds it, Acquire only counts up, with no ZooKeeper traffic. When
// ctx ends first, Acquire returns an error wrapping ctx.Err() and leaves no
// node behind (the delete is guaranteed: done at once when connected, else
// in the background). If the handle's node vanishes while it waits (the
// session expired), Acquire queues again with a new node as far as the
// client's retry policy allows. Success is reported only for a node owned by
// the current session.
func (h *Handle) Acquire(ctx context.Context) error { return h.acquire(ctx, false) }

// TryAcquire takes the lock only if it is free now: otherwise it returns an
// error wrapping ErrLocked, having removed its node (Curator's acquire(0, unit)).
func (h *Handle) TryAcquire(ctx context.Context) error { return h.acquire(ctx, true) }

func (h *Handle) acquire(ctx context.Context, try bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count > 0 {
		h.count++
		return nil
	}
	a := attempt{name: h.m.name, mode: framework.EphemeralSequential, data: h.m.data, driver: h.m.d, try: try}
	if h.revocable != nil {
		a.data, a.revoked = []byte{}, h.revocable
	}
	n, err := h.hooks.acquire(ctx, a)
	if err != nil {
		return fmt.Errorf("gocurator: acquire %s: %w", h.m.li.base, err)
	}
	h.count = 1
	h.revocable = nil // as Curator: makeRevocable holds for one acquisition
	h.node.Store(n)
	h.m.held.Add(1)
	return nil
}

// Release gives up one hold; the last one deletes the lock node. Releasing
// a lock the handle does not hold is an error wrapping ErrNotHeld. The
// handle is released even when the delete fails (connection loss): the
// delete then goes on in the background until it succeeds, and the error is
// returned for information.
func (h *Handle) Release(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 {
		return fmt.Errorf("gocurator: release %s: %w", h.m.li.base, ErrNotHeld)
	}
	h.count--
	if h.count > 0 {
		return nil
	}
	n := h.node.Swap(nil)
	h.m.held.Add(-1)
	if err := h.hooks.release(ctx, n); err != nil {
		return fmt.Errorf("gocurator: release %s: %w", h.m.li.base, err)
	}
	return nil
}

// IsHeld reports whether this handle holds the lock
// (Curator's isOwnedByCurrentThread).
func (h *Handle) IsHeld() bool { return h.node.Load() != nil }

// Lost returns a channel that is closed when the held lock can no longer be
// trusted: on SUSPENDED or LOST under the client's default error policy, on
// LOST only under state.SessionErrorPolicy, or when the client closes. If
// the handle does not hold the lock, the channel is already closed.
func (h *Handle) Lost() <-chan struct{} {
	if n := h.node.Load(); n != nil {
		return n.lost
	}
	return closedChan
}

// FencingToken returns a number that strictly increases across every
// acquisition of this lock by anyone, across sessions and re-created
// parents: the lock node's czxid. Pass it to the resource you protect and
// have it refuse lower tokens than it has seen (docs/guarantees.md).
//
// The first call for an acquisition reads the node's Stat (one round trip;
// an acquire that never asks pays nothing for it), later calls answer at
// once. The error wraps ErrNotHeld when the handle does not hold the lock,
// and ErrLockLost once Lost is closed or the node is gone: a holder that
// cannot get a token must not write.
func (h *Handle) FencingToken(ctx context.Context) (int64, error) {
	n := h.node.Load()
	if n == nil {
		return 0, fmt.Errorf("gocurator: fencing token of %s: %w", h.m.li.base, ErrNotHeld)
	}
	t, err := h.m.li.token(ctx, n)
	if err != nil {
		return 0, fmt.Errorf("gocurator: fencing token of %s: %w", n.path, err)
	}
	return t, nil
}

// LockPath returns the full path of the held lock node, or "".
func (h *Handle) LockPath() string {
	if n := h.node.Load(); n != nil {
		return n.path
	}
	return ""
}

// MakeRevocable makes the handle's next acquisition revocable, as Curator's
// makeRevocable: its node is created empty, and when another participant
// writes RevokeMessage to it (Revoke here, Revoker.attemptRevoke in Java),
// listener is called on a goroutine of its own. Revocation is a request: the
// listener should release. It holds for one acquisition.
func (h *Handle) MakeRevocable(listener func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revocable = listener
}

// handleHooks decide how a handle takes its node and gives it up: for a
// mutex, its lockInternals; for a read-write lock's half, rwHalf, which
// steers the attempt the handle would make (downgrade, upgrade).
type handleHooks interface {
	acquire(ctx context.Context, a attempt) (*heldNode, error)
	release(ctx context.Context, n *heldNode) error
}

var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()
