package recipes

import (
	"context"
	"errors"
	"sync"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// InterProcessMutex is a reentrant mutex across processes. It is Curator's
// InterProcessMutex, in Curator's exact tree, so Go and Java participants
// queue for the same lock. A lock value is shared; each owner takes a Handle.
// The same handle acquiring again only counts up; two handles contend through
// ZooKeeper, exactly as two Java threads do.
//
// Tree: each contender creates an EPHEMERAL_SEQUENTIAL node
// path/_c_<uuid>-lock-<seq> (parents are containers); the lowest sequence
// holds the lock; each waiter watches only its predecessor.
type InterProcessMutex struct {
	li       acquire.Lock
	d        acquire.Driver
	nodePath string // path/name: where its nodes are created, before protection
	data     []byte
	events   lockEvents
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
// wraps framework.ErrInvalidArgument, a closed one framework.ErrClosed.
func NewInterProcessMutex(client *framework.Client, path string, opts ...LockOption) (*InterProcessMutex, error) {
	return newMutex(client, path, locktree.MutexName, recipeMutex, lockNameDriver(locktree.MutexName, 1), opts)
}

func newMutex(client *framework.Client, path, name, recipe string, d acquire.Driver, opts []LockOption) (*InterProcessMutex, error) {
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	var o lockOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applyLock(&o)
		}
	}
	return &InterProcessMutex{li: acquire.NewLock(client, path), d: d, nodePath: framework.JoinPath(path, name), data: o.data,
		events: lockEvents{client: client, recipe: recipe, path: path}}, nil
}

// usable reports whether m was made by a constructor (a nil or zero value
// is not).
func (m *InterProcessMutex) usable() bool { return m != nil && m.li.Client() != nil }

// Path returns the lock's base path ("" for a nil or zero value).
func (m *InterProcessMutex) Path() string {
	if !m.usable() {
		return ""
	}
	return m.li.Base()
}

// NewHandle returns a new owner of the lock. A handle is one owner: when it
// already holds the lock, acquiring again only counts up, from whichever
// goroutine. So goroutines that share a handle do NOT exclude each other;
// give each goroutine (or each logical owner) a handle of its own, and they
// contend as two Java threads do. A nil or zero mutex gives a handle every
// call of which fails with framework.ErrInvalidArgument.
func (m *InterProcessMutex) NewHandle() *Handle {
	if !m.usable() {
		return &Handle{}
	}
	return &Handle{m: m, hooks: mutexHooks{&m.li}}
}

// IsAcquiredInThisProcess reports whether a handle of this mutex value
// holds it, and has not lost it.
func (m *InterProcessMutex) IsAcquiredInThisProcess() bool {
	return m.usable() && m.li.AnyHeld()
}

// ParticipantNodes returns the full paths of every child of the lock path,
// in queue order: the holder first. Foreign children are included, where
// they sort, as Curator's getParticipantNodes does.
func (m *InterProcessMutex) ParticipantNodes(ctx context.Context) ([]string, error) {
	if !m.usable() {
		return nil, errZero("InterProcessMutex")
	}
	if err := checkContext(ctx); err != nil {
		return nil, errs.Errorf("participants of %s: %w", m.li.Base(), err)
	}
	return m.li.Participants(ctx, m.d)
}

// Handle is one owner of an InterProcessMutex. Its zero value is not usable
// (every call fails with framework.ErrInvalidArgument): get one from NewHandle. It is safe
// for concurrent use, but goroutines that share it are one owner (see
// NewHandle).
//
// The life of one acquisition, as every owner type of this package tells it:
//
//   - Held: IsHeld is true, Err is nil, Done is open. Acquire counts up;
//     each Release counts down, the last one deletes the node.
//   - Lost (SUSPENDED or LOST under the client's error policy, Close, or the
//     node found gone): Done is closed and Err wraps ErrLockLost; IsHeld is
//     false; Acquire fails with that error and counts nothing; FencingToken
//     fails. The node does not keep others from the lock: lost at
//     SUSPENDED, it is deleted by the library once the servers could have
//     expired the session (see docs/guarantees.md), Release or not; lost at
//     LOST or Close, it went with its session. Release returns at once, an
//     error wrapping ErrLockLost, so that the owner learns its work was not
//     protected all along; it waits for no server: a node still there is
//     deleted in the background from then on. The Release that brings the
//     count to zero frees the handle; Err goes on wrapping ErrLockLost
//     until the next acquisition.
//   - Released: Done is closed (a goroutine waiting on it returns) and Err
//     wraps ErrNotHeld, until the next acquisition.
type Handle struct {
	m     *InterProcessMutex
	hooks handleHooks // how nodes are taken and given up: the mutex's lockInternals, or a read-write half
	turn  turn        // held while an acquisition of this handle is under way

	mu        sync.Mutex     // guards what follows; never held across a call to ZooKeeper
	count     int            // holds not yet released, lost ones included
	grant     *acquire.Grant // the current grant while count > 0, else the last one (nil before the first)
	revocable func()
}

// usable reports whether h came from NewHandle (a nil or zero Handle did
// not).
func (h *Handle) usable() bool { return h != nil && h.m != nil }

// Acquire takes the lock, waiting as long as ctx allows. If the handle
// already holds it, Acquire only counts up, with no ZooKeeper traffic; if
// that hold was lost, Acquire returns an error wrapping ErrLockLost and
// counts nothing. When another Acquire of the same handle is under way,
// Acquire waits for it (as long as ctx allows), then counts up if it got
// the lock or else tries itself. When ctx ends first, Acquire returns an
// error wrapping ctx.Err() and leaves no node behind (the delete is
// guaranteed: done at once when connected, else in the background). If the
// handle's node vanishes while it waits (the session expired), Acquire
// queues again with a new node as far as the client's retry policy allows.
// Success is reported only for a node owned by the current session. A nil
// ctx, or a zero Handle, is an error wrapping framework.ErrInvalidArgument.
func (h *Handle) Acquire(ctx context.Context) error { return h.acquire(ctx, false) }

// TryAcquire takes the lock only if it is free now. Otherwise it returns an
// error wrapping ErrLocked, having removed its node (Curator's acquire(0,
// unit)). While another Acquire of the same handle is under way the lock is
// not free now, and TryAcquire returns ErrLocked at once. Held or lost, it
// counts up or fails as Acquire does.
func (h *Handle) TryAcquire(ctx context.Context) error { return h.acquire(ctx, true) }

func (h *Handle) acquire(ctx context.Context, try bool) error {
	if !h.usable() {
		return errZero("Handle")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("acquire %s: %w", h.m.li.Base(), err)
	}
	if try {
		if !h.turn.try() {
			return errs.Errorf("acquire %s: %w: this handle's own acquisition is under way", h.m.li.Base(), ErrLocked)
		}
	} else if err := h.turn.take(ctx); err != nil {
		return errs.Errorf("acquire %s: %w", h.m.li.Base(), err)
	}
	defer h.turn.give()

	h.mu.Lock()
	if h.count > 0 {
		err := h.grant.Err()
		if err == nil {
			h.count++
		}
		h.mu.Unlock()
		if err != nil {
			return errs.Errorf("acquire %s: %w", h.m.li.Base(), err)
		}
		return nil
	}
	a := acquire.Attempt{Path: h.m.nodePath, Mode: framework.EphemeralSequential, Data: h.m.data, Driver: h.m.d, Try: try,
		Observer: &h.m.events}
	if h.revocable != nil {
		a.Data, a.Revoked = []byte{}, h.m.events.revoked(h.revocable)
	}
	h.mu.Unlock()

	g, err := h.hooks.acquire(ctx, a)
	if err != nil {
		return errs.Errorf("acquire %s: %w", h.m.li.Base(), err)
	}
	h.mu.Lock()
	h.count, h.grant = 1, g
	h.revocable = nil // as Curator: makeRevocable holds for one acquisition
	h.mu.Unlock()
	return nil
}

// Release gives up one hold; the last one deletes the lock node. Releasing
// a lock the handle does not hold is an error wrapping ErrNotHeld. After a
// loss, each Release returns at once an error wrapping ErrLockLost,
// waiting for no server: the library deletes the node if it is still
// there, in the background (the first Release brings that delete forward
// to now). The handle is released even when the delete of a held lock
// fails (connection loss, or ctx ending): the delete then goes on in the
// background until it succeeds, and the error is returned for
// information. A nil ctx, or a zero Handle, is an error wrapping
// framework.ErrInvalidArgument.
func (h *Handle) Release(ctx context.Context) error {
	if !h.usable() {
		return errZero("Handle")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("release %s: %w", h.m.li.Base(), err)
	}
	h.mu.Lock()
	if h.count == 0 {
		h.mu.Unlock()
		return errs.Errorf("release %s: %w", h.m.li.Base(), ErrNotHeld)
	}
	g := h.grant
	h.count--
	rest := h.count
	h.mu.Unlock()
	if rest > 0 && g.Err() == nil {
		return nil // a reentrant hold given back
	}
	lost, _ := g.Release() // Done closes now, whatever the delete does
	if lost != nil {
		return errs.Errorf("release %s: %w", h.m.li.Base(), lost)
	}
	if err := h.hooks.release(ctx, g); err != nil {
		return errs.Errorf("release %s: %w", h.m.li.Base(), err)
	}
	return nil
}

// current returns the handle's grant while it has holds (held or lost).
func (h *Handle) current() *acquire.Grant {
	if !h.usable() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.count == 0 {
		return nil
	}
	return h.grant
}

// last returns the grant of the handle's current or last acquisition, nil
// before its first: what Done, Err and FencingToken tell of.
func (h *Handle) last() *acquire.Grant {
	if !h.usable() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.grant
}

// grantContext is the current grant's context (contextOf).
func (h *Handle) grantContext() context.Context {
	if g := h.current(); g != nil {
		return g.Context()
	}
	return nil
}

// holding reports whether the handle has holds not yet released, lost
// ones included.
func (h *Handle) holding() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.count > 0
}

// IsHeld reports whether this handle holds the lock and has not lost it
// (Curator's isOwnedByCurrentThread).
func (h *Handle) IsHeld() bool { return h.Err() == nil }

// Done returns a channel that is closed when the handle's current acquisition
// ends, for any reason. The acquisition ends when the lock can no longer be
// trusted (SUSPENDED or LOST under the client's default error policy, LOST
// only under state.SessionErrorPolicy; the client closed), or when it is
// released. Err tells which. If the handle holds nothing, the channel is
// already closed. A goroutine waiting on it therefore always returns:
//
//	go func() {
//		<-h.Done()
//		if errors.Is(h.Err(), recipes.ErrLockLost) {
//			stopWork()
//		}
//	}()
func (h *Handle) Done() <-chan struct{} { return doneOf(h.last()) }

// Err returns nil while the handle holds the lock, and otherwise says why
// not. Once the acquisition is lost it is an error wrapping ErrLockLost
// (and what ended it: the connection state, ErrClosed, or zk.ErrNoNode for
// a node found gone), released since or not, until the handle acquires
// again; after a release of a lock that held, and before the first
// acquisition, an error wrapping ErrNotHeld (framework.ErrInvalidArgument for a zero
// Handle). So a goroutine that waits on Done and then reads Err learns of
// a loss whatever the owner did meanwhile.
func (h *Handle) Err() error {
	if !h.usable() {
		return errZero("Handle")
	}
	return ownerErr(h.last(), h.m.li.Base(), ErrNotHeld)
}

// FencingToken returns the lock node's czxid: a number that rises across
// the holders of this lock, across sessions and re-created parents. A
// holder's token is higher than that of every holder before it whose hold
// it excludes: every earlier holder of a mutex or of a write lock, every
// earlier writer for a read lock. A downgrade's read lock has the token of
// the write lock whose place in the queue it takes (its own node comes
// later). Pass it to the resource you protect and have it refuse lower
// tokens than it has seen (docs/guarantees.md).
//
// The first call for an acquisition reads the node's Stat (one round trip;
// an acquire that never asks pays nothing for it), later calls answer at
// once. The error wraps ErrNotHeld when the handle does not hold the lock,
// and ErrLockLost once the acquisition is lost or the node is gone: a
// holder that cannot get a token must not write.
func (h *Handle) FencingToken(ctx context.Context) (int64, error) {
	if !h.usable() {
		return 0, errZero("Handle")
	}
	if err := checkContext(ctx); err != nil {
		return 0, errs.Errorf("fencing token of %s: %w", h.m.li.Base(), err)
	}
	g := h.last()
	if g == nil {
		return 0, errs.Errorf("fencing token of %s: %w", h.m.li.Base(), ErrNotHeld)
	}
	t, err := g.Token(ctx)
	if err != nil {
		return 0, errs.Errorf("fencing token of %s: %w", g.Path(), err)
	}
	return t, nil
}

// LockPath returns the full path of the current acquisition's node (held,
// or lost and not yet released), or "".
func (h *Handle) LockPath() string {
	if g := h.current(); g != nil {
		return g.Path()
	}
	return ""
}

// MakeRevocable makes the handle's next acquisition revocable, as Curator's
// makeRevocable does. The acquisition's node is created empty, and when
// another participant writes RevokeMessage to it (Revoke here,
// Revoker.attemptRevoke in Java), listener is called on a goroutine of its
// own. Revocation is a request: the listener should release. It holds for one
// acquisition. A nil listener makes the next acquisition not revocable (and a
// zero Handle ignores it).
func (h *Handle) MakeRevocable(listener func()) {
	if !h.usable() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revocable = listener
}

// handleHooks decide how a handle takes its node and gives it up: for a
// mutex, mutexHooks; for a read-write lock's half, rwHalf, which steers the
// attempt the handle would make (downgrade, upgrade).
type handleHooks interface {
	acquire(ctx context.Context, a acquire.Attempt) (*acquire.Grant, error)
	// release deletes the node of a grant its owner released.
	release(ctx context.Context, g *acquire.Grant) error
	// owner is who may take h's lock again while h holds it: h, or the
	// read-write owner whose half h is (see InterProcessMultiLock).
	owner(h *Handle) any
}

// mutexHooks are a mutex handle's: the engine's acquire and delete, and
// only the handle itself takes its lock again.
type mutexHooks struct{ li *acquire.Lock }

func (m mutexHooks) acquire(ctx context.Context, a acquire.Attempt) (*acquire.Grant, error) {
	return m.li.Acquire(ctx, a)
}

func (mutexHooks) release(ctx context.Context, g *acquire.Grant) error { return g.Delete(ctx) }

func (mutexHooks) owner(h *Handle) any { return h }

// sites is where the handle's lock is (sited).
func (h *Handle) sites() ([]ownedSite, error) {
	if !h.usable() {
		return nil, errors.New("nil handle, or one not from NewHandle")
	}
	return []ownedSite{{lockSite{h.m.li.Client(), h.m.li.Base()}, h.hooks.owner(h)}}, nil
}
