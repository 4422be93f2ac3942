package recipes

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/gocurator/curator/framework"
)

// InterProcessSemaphoreMutex is Curator's InterProcessSemaphoreMutex: a
// mutex across processes that is NOT reentrant, built on a one-lease
// InterProcessSemaphoreV2 (same tree: P/locks, P/leases). Acquiring it again
// while it is held waits, like any other contender (TryAcquire returns
// ErrLocked), and any goroutine may release it.
type InterProcessSemaphoreMutex struct {
	s     *InterProcessSemaphoreV2
	lease atomic.Pointer[Lease]
}

// NewInterProcessSemaphoreMutex returns the mutex at path. A bad path (the
// root included) is an error that unwraps to zk.ErrInvalidPath; a nil client
// wraps ErrBadArgument, a closed one framework.ErrClosed.
func NewInterProcessSemaphoreMutex(client *framework.Client, path string, opts ...SemaphoreOption) (*InterProcessSemaphoreMutex, error) {
	s, err := NewInterProcessSemaphoreV2(client, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	return &InterProcessSemaphoreMutex{s: s}, nil
}

// Path returns the lock's base path.
func (m *InterProcessSemaphoreMutex) Path() string { return m.s.path }

// Acquire takes the lock, waiting as long as ctx allows; when ctx ends first
// it returns an error wrapping ctx.Err() and leaves no node behind.
func (m *InterProcessSemaphoreMutex) Acquire(ctx context.Context) error {
	return m.take(m.s.Acquire(ctx))
}

// TryAcquire takes the lock only if it is free now: otherwise it returns an
// error wrapping ErrLocked, and leaves no node behind.
func (m *InterProcessSemaphoreMutex) TryAcquire(ctx context.Context) error {
	return m.take(m.s.TryAcquire(ctx))
}

func (m *InterProcessSemaphoreMutex) take(l *Lease, err error) error {
	if err != nil {
		return err
	}
	m.lease.Store(l)
	return nil
}

// Release releases the lock, whichever goroutine took it. When it is not
// held, Release returns an error wrapping ErrNotHeld (Curator's
// IllegalStateException "Not acquired"). The lock counts as released even
// when the delete fails (connection loss): it then goes on in the background,
// and the error is returned for information.
func (m *InterProcessSemaphoreMutex) Release(ctx context.Context) error {
	l := m.lease.Swap(nil)
	if l == nil {
		return fmt.Errorf("gocurator: release %s: %w", m.s.path, ErrNotHeld)
	}
	return l.Close(ctx)
}

// IsAcquiredInThisProcess reports whether the lock is held through this value.
func (m *InterProcessSemaphoreMutex) IsAcquiredInThisProcess() bool { return m.held() != nil }

// Lost returns a channel that is closed when the held lock can no longer be
// trusted (see Lease.Lost); already closed when the lock is not held.
func (m *InterProcessSemaphoreMutex) Lost() <-chan struct{} {
	if l := m.held(); l != nil {
		return l.Lost()
	}
	return closedChan
}

// FencingToken returns the held lease node's czxid, as Lease.FencingToken;
// the error wraps ErrNotHeld when the lock is not held.
func (m *InterProcessSemaphoreMutex) FencingToken(ctx context.Context) (int64, error) {
	if l := m.held(); l != nil {
		return l.FencingToken(ctx)
	}
	return 0, fmt.Errorf("gocurator: fencing token of %s: %w", m.s.path, ErrNotHeld)
}

// LockPath returns the full path of the held lease node, or "".
func (m *InterProcessSemaphoreMutex) LockPath() string {
	if l := m.held(); l != nil {
		return l.Path()
	}
	return ""
}

func (m *InterProcessSemaphoreMutex) held() *Lease { return m.lease.Load() }
