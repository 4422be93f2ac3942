package recipes

import (
	"context"
	"errors"
	"sync"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// InterProcessSemaphoreMutex is a mutex across processes that is NOT
// reentrant. It is Curator's InterProcessSemaphoreMutex, built on a one-lease
// InterProcessSemaphoreV2 (same tree: P/locks, P/leases).
//
// The value is the owner, as in Curator, and holds at most one acquisition
// at a time: any goroutine may release it, and acquiring it again while it
// is held (or lost and not yet released) waits, like any other contender,
// but here in the process, as long as ctx allows (TryAcquire returns
// ErrLocked at once). So a Release can only ever give up the one
// acquisition the value holds. Goroutines that must not wait for each
// other's releases should each have a value of their own. A zero value
// fails every call with framework.ErrInvalidArgument.
type InterProcessSemaphoreMutex struct {
	s *InterProcessSemaphoreV2

	// turn is taken for the whole of an acquisition, from the start of
	// Acquire to the end of Release, so that this value never holds two.
	turn turn

	mu    sync.Mutex
	lease *Lease // while held (or lost and not yet released)
	last  *Lease // the lease of the current or last acquisition: what Err tells of
}

// NewInterProcessSemaphoreMutex returns the mutex at path. A bad path (the
// root included) is an error that unwraps to zk.ErrInvalidPath; a nil client
// wraps framework.ErrInvalidArgument, a closed one framework.ErrClosed.
func NewInterProcessSemaphoreMutex(client *framework.Client, path string, opts ...SemaphoreOption) (*InterProcessSemaphoreMutex, error) {
	s, err := NewInterProcessSemaphoreV2(client, path, 1, opts...)
	if err != nil {
		return nil, err
	}
	return &InterProcessSemaphoreMutex{s: s}, nil
}

// usable reports whether m was made by NewInterProcessSemaphoreMutex.
func (m *InterProcessSemaphoreMutex) usable() bool { return m != nil && m.s.usable() }

// Path returns the lock's base path ("" for a nil or zero value).
func (m *InterProcessSemaphoreMutex) Path() string {
	if !m.usable() {
		return ""
	}
	return m.s.path
}

// Acquire takes the lock, waiting as long as ctx allows. It waits first for
// this value's own acquisition to be released (if any), then for the lock;
// when ctx ends first it returns an error wrapping ctx.Err() and leaves no
// node behind. A nil ctx is an error wrapping framework.ErrInvalidArgument.
func (m *InterProcessSemaphoreMutex) Acquire(ctx context.Context) error {
	if !m.usable() {
		return errZero("InterProcessSemaphoreMutex")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("acquire %s: %w", m.s.path, err)
	}
	if err := m.turn.take(ctx); err != nil {
		return errs.Errorf("acquire %s: %w", m.s.path, err)
	}
	return m.take(m.s.Acquire(ctx))
}

// TryAcquire takes the lock only if it is free now. Otherwise it returns an
// error wrapping ErrLocked, and leaves no node behind.
func (m *InterProcessSemaphoreMutex) TryAcquire(ctx context.Context) error {
	if !m.usable() {
		return errZero("InterProcessSemaphoreMutex")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("acquire %s: %w", m.s.path, err)
	}
	if !m.turn.try() {
		return errs.Errorf("acquire %s: %w: held (or being acquired) through this value", m.s.path, ErrLocked)
	}
	return m.take(m.s.TryAcquire(ctx))
}

func (m *InterProcessSemaphoreMutex) take(l *Lease, err error) error {
	if err != nil {
		m.turn.give()
		return err
	}
	m.mu.Lock()
	m.lease, m.last = l, l
	m.mu.Unlock()
	return nil
}

// Release releases the lock, whichever goroutine took it. When it is not
// held, Release returns an error wrapping ErrNotHeld (Curator's
// IllegalStateException "Not acquired"); when it was lost, at once an
// error wrapping ErrLockLost, waiting for no server (the library deletes
// the node in the background). The lock counts as released even when the
// delete fails (connection loss): it then goes on in the background, and
// the error is returned for information.
func (m *InterProcessSemaphoreMutex) Release(ctx context.Context) error {
	if !m.usable() {
		return errZero("InterProcessSemaphoreMutex")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("release %s: %w", m.s.path, err)
	}
	m.mu.Lock()
	l := m.lease
	m.lease = nil
	m.mu.Unlock()
	if l == nil {
		return errs.Errorf("release %s: %w", m.s.path, ErrNotHeld)
	}
	defer m.turn.give()
	return l.Close(ctx)
}

// sites is where the mutex's lock is (sited): not reentrant, it has no
// owner that may take it again.
func (m *InterProcessSemaphoreMutex) sites() ([]ownedSite, error) {
	if !m.usable() {
		return nil, errors.New("nil semaphore mutex, or one not from NewInterProcessSemaphoreMutex")
	}
	return []ownedSite{{lockSite{m.s.client, m.s.path}, nil}}, nil
}

// IsHeld reports whether the lock is held through this value, and not lost
// (Curator's isAcquiredInThisProcess: the value is the owner).
func (m *InterProcessSemaphoreMutex) IsHeld() bool { return m.Err() == nil }

// Done returns a channel that is closed when the value's current acquisition
// ends, lost or released (see Lease.Done). It is already closed when the lock
// is not held.
func (m *InterProcessSemaphoreMutex) Done() <-chan struct{} { return m.lastLease().Done() }

// Err returns nil while the lock is held through this value, and otherwise
// says why not, as a Handle's Err does: it wraps ErrLockLost once the lock
// is lost, released since or not, until the value acquires again; and
// ErrNotHeld when it was released after holding, or never acquired.
func (m *InterProcessSemaphoreMutex) Err() error {
	if !m.usable() {
		return errZero("InterProcessSemaphoreMutex")
	}
	if l := m.lastLease(); l != nil {
		return l.Err()
	}
	return errs.Errorf("%s: %w", m.s.path, ErrNotHeld)
}

// grantContext is the current lease's grant's context (contextOf).
func (m *InterProcessSemaphoreMutex) grantContext() context.Context { return m.held().grantContext() }

// FencingToken returns the held lease node's czxid, as Lease.FencingToken;
// the error wraps ErrNotHeld when the lock is not held.
func (m *InterProcessSemaphoreMutex) FencingToken(ctx context.Context) (int64, error) {
	if !m.usable() {
		return 0, errZero("InterProcessSemaphoreMutex")
	}
	if l := m.lastLease(); l != nil {
		return l.FencingToken(ctx)
	}
	return 0, errs.Errorf("fencing token of %s: %w", m.s.path, ErrNotHeld)
}

// LockPath returns the full path of the current lease node (held, or lost
// and not yet released), or "".
func (m *InterProcessSemaphoreMutex) LockPath() string { return m.held().Path() }

// held returns the lease held (or lost and not yet released), or nil.
func (m *InterProcessSemaphoreMutex) held() *Lease {
	if !m.usable() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lease
}

// lastLease returns the lease of the current or last acquisition, or nil.
func (m *InterProcessSemaphoreMutex) lastLease() *Lease {
	if !m.usable() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}
