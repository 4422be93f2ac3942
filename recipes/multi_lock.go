package recipes

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// InterProcessMultiLock is several locks taken and released as one: Curator's
// InterProcessMultiLock. It takes them in list order; nothing sorts them, so,
// as in Curator, avoiding deadlock (every participant using one order) is the
// caller's job.
//
// Unlike Curator, one deadline (ctx's) covers the whole acquisition: Curator
// gives each lock the full timeout, so it may wait N times as long. And the
// first lock that cannot be taken ends the acquisition (Curator goes on
// trying the rest after an exception, keeping only the last one).
//
// A zero value holds no lock: every call fails with framework.ErrInvalidArgument.
type InterProcessMultiLock struct {
	locks []Locker

	mu    sync.Mutex
	count int         // acquisitions through this value not yet released, lost ones included
	grant *multiGrant // while count > 0
	last  *multiGrant // the current or last acquisition's: what Done and Err tell of
}

// NewInterProcessMultiLock returns a multi-lock of one InterProcessMutex per
// path, each with a handle of its own, in list order. An empty list, a path
// given twice, a path inside another (see NewInterProcessMultiLockWithLocks), or a nil client is
// an error wrapping framework.ErrInvalidArgument; a closed client wraps
// framework.ErrClosed; a bad path (the root included) is an error that
// unwraps to zk.ErrInvalidPath. The multi-lock value is one owner: its
// handles count up when it is acquired again.
func NewInterProcessMultiLock(client *framework.Client, paths []string) (*InterProcessMultiLock, error) {
	if len(paths) == 0 {
		return nil, errs.Errorf("%w: a multi-lock needs at least one path", framework.ErrInvalidArgument)
	}
	seen := make(map[string]bool, len(paths))
	locks := make([]Locker, 0, len(paths))
	for _, p := range paths {
		if seen[p] {
			return nil, errs.Errorf("%w: path %s given twice", framework.ErrInvalidArgument, p)
		}
		seen[p] = true
		m, err := NewInterProcessMutex(client, p)
		if err != nil {
			return nil, err
		}
		locks = append(locks, m.NewHandle())
	}
	return NewInterProcessMultiLockWithLocks(locks...)
}

// NewInterProcessMultiLockWithLocks returns a multi-lock of the given
// lockers, in order. They may be handles of any of this package's locks,
// semaphore mutexes, or other multi-locks. No locker, or a nil one, is an
// error wrapping framework.ErrInvalidArgument. So are two of this package's lockers on one
// lock path of one client, which would wait for each other: two handles, two
// owners' halves of a read-write lock, a semaphore mutex given twice. One
// Handle given twice is allowed (the second acquisition counts up), and so
// are both halves of one ReadWriteHandle (write, then read: a downgrade;
// read, then write fails with ErrUpgrade when acquired). A lock whose path is
// inside another's (/x and /x/y) is refused too: the inner lock's parent node
// is a child of the outer lock, where it takes a place in the queue (before
// every contender if its name sorts first) and would keep the multi-lock from
// ever holding both.
func NewInterProcessMultiLockWithLocks(locks ...Locker) (*InterProcessMultiLock, error) {
	if len(locks) == 0 {
		return nil, errs.Errorf("%w: a multi-lock needs at least one lock", framework.ErrInvalidArgument)
	}
	seen := map[lockSite]any{}
	for i, l := range locks {
		sites, err := lockSites(l)
		if err != nil {
			return nil, errs.Errorf("%w: lock %d: %w", framework.ErrInvalidArgument, i, err)
		}
		for _, s := range sites {
			owner, dup := seen[s.lockSite]
			if dup && (s.owner == nil || owner != s.owner) {
				return nil, errs.Errorf("%w: lock %d: a second lock on %s: the two would wait for each other", framework.ErrInvalidArgument, i, s.path)
			}
			seen[s.lockSite] = s.owner
		}
	}
	for a := range seen {
		for b := range seen {
			if a.client == b.client && strings.HasPrefix(b.path, a.path+"/") {
				return nil, errs.Errorf("%w: lock %s is inside lock %s: its parent node would queue in %s", framework.ErrInvalidArgument, b.path, a.path, a.path)
			}
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

// sited is what every Locker of this package has: where its lock is, so
// that a multi-lock can refuse two lockers that would wait for each other.
// sites is an error for a value that did not come from its constructor.
type sited interface {
	sites() ([]ownedSite, error)
}

// lockSites returns the sites of this package's lockers (a multi-lock's
// are its lockers'), none for other lockers, and an error for a nil locker
// or one that did not come from its constructor.
func lockSites(l Locker) ([]ownedSite, error) {
	if l == nil {
		return nil, errors.New("nil locker")
	}
	if s, ok := l.(sited); ok {
		return s.sites()
	}
	return nil, nil
}

// sites is the multi-lock's lockers' sites.
func (m *InterProcessMultiLock) sites() ([]ownedSite, error) {
	if !m.usable() {
		return nil, errors.New("nil or zero multi-lock")
	}
	var sites []ownedSite
	for _, inner := range m.locks {
		s, err := lockSites(inner)
		if err != nil {
			return nil, err
		}
		sites = append(sites, s...)
	}
	return sites, nil
}

// Acquire takes every lock, in list order, within ctx. If one cannot be
// taken (ctx ends, an error), the locks already taken are released in
// reverse order and the error returned wraps the cause. Acquiring a
// multi-lock that is held through this value counts up, as its handles do;
// if that hold was lost, Acquire returns an error wrapping ErrLockLost and
// counts nothing. A nil ctx is an error wrapping framework.ErrInvalidArgument.
func (m *InterProcessMultiLock) Acquire(ctx context.Context) error {
	if !m.usable() {
		return errZero("InterProcessMultiLock")
	}
	return m.acquire(ctx, func(l Locker) error { return l.Acquire(ctx) })
}

// usable reports whether m was made by a constructor.
func (m *InterProcessMultiLock) usable() bool { return m != nil && len(m.locks) > 0 }

// TryAcquire takes every lock only if each is free now (each locker's
// TryAcquire, in list order). Otherwise it releases what it took and returns
// the error, wrapping ErrLocked. Every locker must have a TryAcquire method
// (all of this package's do); if one has not, TryAcquire takes nothing and
// returns an error wrapping framework.ErrInvalidArgument.
func (m *InterProcessMultiLock) TryAcquire(ctx context.Context) error {
	type tryLocker interface {
		TryAcquire(ctx context.Context) error
	}
	if !m.usable() {
		return errZero("InterProcessMultiLock")
	}
	for i, l := range m.locks {
		if _, ok := l.(tryLocker); !ok {
			return errs.Errorf("multi-lock: %w: lock %d (%T) has no TryAcquire", framework.ErrInvalidArgument, i, l)
		}
	}
	return m.acquire(ctx, func(l Locker) error { return l.(tryLocker).TryAcquire(ctx) })
}

func (m *InterProcessMultiLock) acquire(ctx context.Context, take func(Locker) error) error {
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("multi-lock: %w", err)
	}
	if g := m.current(); g != nil {
		if err := g.err(); err != nil {
			return errs.Errorf("multi-lock: acquire: %w", err)
		}
	}
	for i, l := range m.locks {
		if err := take(l); err != nil {
			rctx, cancel := acquire.CleanupContext(ctx)
			defer cancel()
			return errors.Join(errs.Errorf("multi-lock: acquire lock %d of %d: %w", i+1, len(m.locks), err),
				releaseReverse(rctx, m.locks[:i]))
		}
	}
	m.mu.Lock()
	held := m.count > 0
	if held {
		m.count++ // a re-acquire: the grant already follows these acquisitions
	}
	m.mu.Unlock()
	if held {
		return nil
	}
	g := watchGrant(m.locks) // outside the mutex: it calls the lockers
	m.mu.Lock()
	m.count++
	if m.count == 1 {
		m.grant, m.last, g = g, g, nil
	}
	m.mu.Unlock()
	if g != nil {
		g.stop() // another acquire set the grant meanwhile
	}
	return nil
}

// Release releases every lock in reverse list order, trying them all, and
// returns every error, joined (after a loss, one wraps ErrLockLost, and the
// lost locks' releases wait for no server).
// Releasing a multi-lock that is not held through this value is an error
// wrapping ErrNotHeld.
func (m *InterProcessMultiLock) Release(ctx context.Context) error {
	if !m.usable() {
		return errZero("InterProcessMultiLock")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("multi-lock: release: %w", err)
	}
	m.mu.Lock()
	if m.count == 0 {
		m.mu.Unlock()
		return errs.Errorf("multi-lock: release: %w", ErrNotHeld)
	}
	m.count--
	var g *multiGrant
	if m.count == 0 {
		g, m.grant = m.grant, nil
	}
	m.mu.Unlock()
	if g != nil {
		g.stop()
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

// IsHeld reports whether the multi-lock is held through this value and not
// lost. Held means acquired and not yet released (Curator's
// isAcquiredInThisProcess: the value is the owner).
func (m *InterProcessMultiLock) IsHeld() bool { return m.Err() == nil }

// Done returns a channel that is closed as soon as ANY of the locks can no
// longer be trusted, or when the multi-lock is released. It is already closed
// when the multi-lock is not held. Err tells which.
func (m *InterProcessMultiLock) Done() <-chan struct{} {
	if g := m.lastGrant(); g != nil {
		return g.ctx.Done()
	}
	return closedChan
}

// Err returns nil while the multi-lock is held through this value, and
// otherwise says why not, as a Handle's Err does. Once one of its locks
// ends (lost, or released behind the multi-lock's back), it is that lock's
// Err, wrapping ErrLockLost, released since or not, until the multi-lock
// is acquired again; after a release of a multi-lock that held, or before
// the first acquisition, it is an error wrapping ErrNotHeld.
func (m *InterProcessMultiLock) Err() error {
	if !m.usable() {
		return errZero("InterProcessMultiLock")
	}
	g := m.lastGrant()
	if g == nil {
		return errs.Errorf("multi-lock: %w", ErrNotHeld)
	}
	return g.err()
}

// grantContext is the current acquisition's context (contextOf).
func (m *InterProcessMultiLock) grantContext() context.Context {
	if g := m.current(); g != nil {
		return g.ctx
	}
	return nil
}

func (m *InterProcessMultiLock) current() *multiGrant {
	if !m.usable() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.grant
}

// lastGrant returns the current or last acquisition's grant, or nil.
func (m *InterProcessMultiLock) lastGrant() *multiGrant {
	if !m.usable() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// multiGrant is one acquisition of a multi-lock: a context that ends when
// any of its locks' acquisitions ends (follow), or when it is released.
type multiGrant struct {
	locks []Locker
	ctx   context.Context
	end   context.CancelCauseFunc
	stops []func() // stop following each lock
}

// watchGrant starts following the locks' current acquisitions. It calls
// the lockers, so it runs without the multi-lock's mutex.
func watchGrant(locks []Locker) *multiGrant {
	g := &multiGrant{locks: locks, stops: make([]func(), 0, len(locks))}
	g.ctx, g.end = context.WithCancelCause(context.Background())
	for _, l := range locks {
		g.stops = append(g.stops, follow(l, func() { g.end(acquire.AsLost(l.Err())) }))
	}
	return g
}

// err returns why the grant ended, or nil. It asks the locks themselves
// too: the AfterFuncs end the grant on goroutines of their own, a moment
// after a lock's Err has changed. It calls the lockers, so it runs without
// the multi-lock's mutex.
func (g *multiGrant) err() error {
	if g.ctx.Err() == nil {
		for _, l := range g.locks {
			if err := l.Err(); err != nil {
				g.end(acquire.AsLost(err))
				break
			}
		}
	}
	if g.ctx.Err() == nil {
		return nil
	}
	return context.Cause(g.ctx)
}

// stop ends the grant as released, unless one of its locks was lost
// first (that loss is what it keeps saying), and stops following the locks.
// It calls the lockers, so it runs without the multi-lock's mutex.
func (g *multiGrant) stop() {
	for _, stop := range g.stops {
		stop()
	}
	g.err() // a loss not yet followed ends it now
	g.end(acquire.ErrReleased)
}
