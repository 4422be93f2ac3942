package recipes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/gocurator/curator/framework"
)

// InterProcessMultiLock is Curator's InterProcessMultiLock: several locks
// taken and released as one. It takes them in list order; nothing sorts them,
// so, as in Curator, avoiding deadlock (every participant using one order) is
// the caller's job.
//
// Unlike Curator, one deadline (ctx's) covers the whole acquisition: Curator
// gives each lock the full timeout, so it may wait N times as long. And the
// first lock that cannot be taken ends the acquisition (Curator goes on
// trying the rest after an exception, keeping only the last one).
type InterProcessMultiLock struct {
	locks []Locker

	mu       sync.Mutex
	count    int             // acquisitions through this value not yet released
	lost     <-chan struct{} // closed when any lock is lost, while held
	stopLost func()
}

// NewInterProcessMultiLock returns a multi-lock of one InterProcessMutex per
// path, each with a handle of its own, in list order. An empty list, a path
// given twice, or a nil client is an error wrapping ErrBadArgument; a closed
// client wraps framework.ErrClosed; a bad path (the root included) is an
// error that unwraps to zk.ErrInvalidPath.
func NewInterProcessMultiLock(client *framework.Client, paths []string) (*InterProcessMultiLock, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("%w: a multi-lock needs at least one path", ErrBadArgument)
	}
	seen := make(map[string]bool, len(paths))
	locks := make([]Locker, 0, len(paths))
	for _, p := range paths {
		if seen[p] {
			return nil, fmt.Errorf("%w: path %s given twice", ErrBadArgument, p)
		}
		seen[p] = true
		m, err := NewInterProcessMutex(client, p)
		if err != nil {
			return nil, err
		}
		locks = append(locks, m.NewHandle())
	}
	return &InterProcessMultiLock{locks: locks}, nil
}

// NewMultiLock returns a multi-lock of the given lockers (handles of any of
// this package's locks, semaphore mutexes, other multi-locks), in order. No
// locker, or a nil one, is an error wrapping ErrBadArgument. So are two of
// this package's lockers on one lock path of one client, which would wait
// for each other: two handles, two owners' halves of a read-write lock,
// a semaphore mutex given twice. One Handle given twice is allowed (the
// second acquisition counts up), and so are both halves of one
// ReadWriteHandle (write, then read: a downgrade; read, then write fails
// with ErrUpgrade when acquired).
func NewMultiLock(locks ...Locker) (*InterProcessMultiLock, error) {
	if len(locks) == 0 {
		return nil, fmt.Errorf("%w: a multi-lock needs at least one lock", ErrBadArgument)
	}
	seen := map[lockSite]any{}
	for i, l := range locks {
		sites, err := lockSites(l)
		if err != nil {
			return nil, fmt.Errorf("%w: lock %d: %w", ErrBadArgument, i, err)
		}
		for _, s := range sites {
			owner, dup := seen[s.lockSite]
			if dup && (s.owner == nil || owner != s.owner) {
				return nil, fmt.Errorf("%w: lock %d: a second lock on %s: the two would wait for each other", ErrBadArgument, i, s.path)
			}
			seen[s.lockSite] = s.owner
		}
	}
	return &InterProcessMultiLock{locks: append([]Locker(nil), locks...)}, nil
}

// lockSite is where a lock is: its client and path.
type lockSite struct {
	client *framework.Client
	path   string
}

// ownedSite is a lock site and who may take it again while holding it (a
// Handle, or a read-write owner for its two halves); nil for lockers that
// are not reentrant.
type ownedSite struct {
	lockSite
	owner any
}

// lockSites returns the sites of this package's lockers (a multi-lock's are
// its lockers'), none for other lockers, and an error for a nil locker or a
// handle that did not come from NewHandle.
func lockSites(l Locker) ([]ownedSite, error) {
	switch v := l.(type) {
	case nil:
		return nil, errors.New("nil locker")
	case *Handle:
		if v == nil || v.m == nil {
			return nil, errors.New("nil handle, or one not from NewHandle")
		}
		var owner any = v
		if half, ok := v.hooks.(rwHalf); ok {
			owner = half.o
		}
		return []ownedSite{{lockSite{v.m.li.client, v.m.li.base}, owner}}, nil
	case *InterProcessSemaphoreMutex:
		if v == nil || v.s == nil {
			return nil, errors.New("nil semaphore mutex, or one not from NewInterProcessSemaphoreMutex")
		}
		return []ownedSite{{lockSite{v.s.client, v.s.path}, nil}}, nil
	case *InterProcessMultiLock:
		if v == nil {
			return nil, errors.New("nil multi-lock")
		}
		var sites []ownedSite
		for _, inner := range v.locks {
			s, err := lockSites(inner)
			if err != nil {
				return nil, err
			}
			sites = append(sites, s...)
		}
		return sites, nil
	}
	return nil, nil
}

// Acquire takes every lock, in list order, within ctx. If one cannot be
// taken (ctx ends, an error), the locks already taken are released in
// reverse order and the error returned wraps the cause.
func (m *InterProcessMultiLock) Acquire(ctx context.Context) error {
	return m.acquire(ctx, func(l Locker) error { return l.Acquire(ctx) })
}

// TryAcquire takes every lock only if each is free now (each locker's
// TryAcquire, in list order); otherwise it releases what it took and returns
// the error, wrapping ErrLocked. Every locker must have a TryAcquire method
// (all of this package's do); if one has not, TryAcquire takes nothing and
// returns an error wrapping ErrBadArgument.
func (m *InterProcessMultiLock) TryAcquire(ctx context.Context) error {
	type tryLocker interface {
		TryAcquire(ctx context.Context) error
	}
	for i, l := range m.locks {
		if _, ok := l.(tryLocker); !ok {
			return fmt.Errorf("gocurator: multi-lock: %w: lock %d (%T) has no TryAcquire", ErrBadArgument, i, l)
		}
	}
	return m.acquire(ctx, func(l Locker) error { return l.(tryLocker).TryAcquire(ctx) })
}

func (m *InterProcessMultiLock) acquire(ctx context.Context, take func(Locker) error) error {
	for i, l := range m.locks {
		if err := take(l); err != nil {
			rctx, cancel := cleanupContext(ctx)
			defer cancel()
			return errors.Join(fmt.Errorf("gocurator: multi-lock: acquire lock %d of %d: %w", i+1, len(m.locks), err),
				releaseReverse(rctx, m.locks[:i]))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.count++
	if m.count == 1 {
		m.lost, m.stopLost = anyClosed(m.locks)
	}
	return nil
}

// Release releases every lock in reverse list order, trying them all, and
// returns every error, joined. Releasing a multi-lock that is not held
// through this value is an error wrapping ErrNotHeld.
func (m *InterProcessMultiLock) Release(ctx context.Context) error {
	m.mu.Lock()
	if m.count == 0 {
		m.mu.Unlock()
		return fmt.Errorf("gocurator: multi-lock: release: %w", ErrNotHeld)
	}
	m.count--
	var stop func()
	if m.count == 0 {
		stop, m.stopLost, m.lost = m.stopLost, nil, nil
	}
	m.mu.Unlock()
	if stop != nil {
		stop()
	}
	return releaseReverse(ctx, m.locks)
}

func releaseReverse(ctx context.Context, locks []Locker) error {
	var errs []error
	for i := len(locks) - 1; i >= 0; i-- {
		if err := locks[i].Release(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// IsAcquiredInThisProcess reports whether the multi-lock is held through
// this value (acquired and not yet released).
func (m *InterProcessMultiLock) IsAcquiredInThisProcess() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.count > 0
}

// Lost returns a channel that is closed as soon as ANY of the locks can no
// longer be trusted; already closed when the multi-lock is not held.
func (m *InterProcessMultiLock) Lost() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost == nil {
		return closedChan
	}
	return m.lost
}

// anyClosed returns a channel closed when any of the locks' Lost channels
// closes, and a function that stops watching them and waits until the
// watching goroutines have ended.
func anyClosed(locks []Locker) (<-chan struct{}, func()) {
	lost, stop := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	for _, l := range locks {
		ch := l.Lost()
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ch:
				once.Do(func() { close(lost) })
			case <-stop:
			}
		}()
	}
	return lost, func() {
		close(stop)
		wg.Wait()
	}
}
