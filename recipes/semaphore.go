package recipes

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"weak"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// InterProcessSemaphoreV2 is a semaphore across processes: at most maxLeases
// leases are held at once. It is Curator's InterProcessSemaphoreV2, in
// Curator's exact tree, so Go and Java participants share the same semaphore.
//
// Tree (path P, all three containers): P/locks holds the nodes of an
// internal InterProcessMutex (_c_<uuid>-lock-<seq>); P/leases holds one
// EPHEMERAL_SEQUENTIAL node per lease, _c_<uuid>-lease-<seq>. To take a
// lease a contender takes the internal mutex, creates its lease node, and
// waits (watching P/leases) until P/leases has at most maxLeases children,
// its own included; then it releases the internal mutex. Contenders thus
// queue first come, first served on P/locks.
//
// Nothing makes every participant use the same maxLeases, as in Curator;
// NewInterProcessSemaphoreV2WithCount shares it through a SharedCount.
// Each Lease is an owner of its own: not reentrant, not tied to a goroutine
// (any goroutine may close it), and closing it gives up that lease only.
type InterProcessSemaphoreV2 struct {
	client *framework.Client
	path   string
	locks  acquire.Lock // P/locks: the internal mutex
	leases acquire.Lock // P/leases
	data   []byte
	max    int          // when count is nil
	count  *SharedCount // or nil

	guards    [2]acquire.Guard // the internal mutex, as a lease's attempt takes it: to wait, to try
	leasePath string           // P/leases/lease-: where lease nodes are created, before protection
	events    lockEvents

	mu      sync.Mutex
	changed chan struct{} // closed and replaced when count changes
}

// SemaphoreOption configures a semaphore recipe.
type SemaphoreOption interface{ applySemaphore(*semaphoreOptions) }

type semaphoreOptions struct {
	data []byte
}

type semaphoreOptionFunc func(*semaphoreOptions)

func (f semaphoreOptionFunc) applySemaphore(o *semaphoreOptions) { f(o) }

// WithLeaseData sets the data of the lease nodes (Curator's setNodeData;
// default: the client's default data, the local IP address).
func WithLeaseData(data []byte) SemaphoreOption {
	return semaphoreOptionFunc(func(o *semaphoreOptions) { o.data = append([]byte{}, data...) })
}

// NewInterProcessSemaphoreV2 returns the semaphore at path that grants at
// most maxLeases leases at once. maxLeases below 1 is an error wrapping
// framework.ErrInvalidArgument; so is a nil client; a closed client wraps
// framework.ErrClosed. A bad path (the root included) is an error that
// unwraps to zk.ErrInvalidPath.
func NewInterProcessSemaphoreV2(client *framework.Client, path string, maxLeases int, opts ...SemaphoreOption) (*InterProcessSemaphoreV2, error) {
	if maxLeases < 1 {
		return nil, errs.Errorf("%w: maxLeases %d must be at least 1", framework.ErrInvalidArgument, maxLeases)
	}
	s, err := newSemaphore(client, path, opts)
	if err != nil {
		return nil, err
	}
	s.max = maxLeases
	return s, nil
}

// NewInterProcessSemaphoreV2WithCount returns the semaphore at path whose
// maximum number of leases is count's value, whenever it is read. When the
// count changes, waiters look again at once. count should be started (until
// then its value is its seed). The count does not keep the semaphore
// reachable: one built per key on a long-lived count, and dropped, is
// collected, and its listener on the count goes with it. A nil count is an error wrapping
// framework.ErrInvalidArgument; the client and path are checked as by
// NewInterProcessSemaphoreV2.
func NewInterProcessSemaphoreV2WithCount(client *framework.Client, path string, count *SharedCount, opts ...SemaphoreOption) (*InterProcessSemaphoreV2, error) {
	if !count.usable() {
		return nil, errs.Errorf("%w: nil or zero SharedCount", framework.ErrInvalidArgument)
	}
	s, err := newSemaphore(client, path, opts)
	if err != nil {
		return nil, err
	}
	s.count = count
	// The count outlives the semaphores built on it (one per key, say): its
	// listener holds the semaphore weakly, and goes once it is collected.
	held := weak.Make(s)
	remove := count.AddListener(func(int) {
		if s := held.Value(); s != nil {
			s.countChanged()
		}
	})
	runtime.AddCleanup(s, func(remove func()) { remove() }, remove)
	return s, nil
}

func newSemaphore(client *framework.Client, path string, opts []SemaphoreOption) (*InterProcessSemaphoreV2, error) {
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	var o semaphoreOptions
	for _, opt := range opts {
		if opt != nil {
			opt.applySemaphore(&o)
		}
	}
	s := &InterProcessSemaphoreV2{
		client:  client,
		path:    path,
		locks:   acquire.NewLock(client, framework.JoinPath(path, locktree.SemaphoreLocks)),
		leases:  acquire.NewLock(client, framework.JoinPath(path, locktree.SemaphoreLeases)),
		data:    o.data,
		changed: make(chan struct{}),
		events:  lockEvents{client: client, recipe: recipeSemaphore, path: path},
	}
	s.leasePath = framework.JoinPath(s.leases.Base(), locktree.LeaseName)
	for i, try := range []bool{false, true} {
		s.guards[i] = acquire.Guard{Lock: &s.locks, Attempt: acquire.Attempt{Path: framework.JoinPath(s.locks.Base(), locktree.MutexName),
			Mode: framework.EphemeralSequential, Driver: lockNameDriver(locktree.MutexName, 1), Try: try}}
	}
	return s, nil
}

// usable reports whether s was made by a constructor.
func (s *InterProcessSemaphoreV2) usable() bool { return s != nil && s.client != nil }

// Path returns the semaphore's base path ("" for a nil or zero value).
func (s *InterProcessSemaphoreV2) Path() string {
	if !s.usable() {
		return ""
	}
	return s.path
}

// MaxLeases returns the number of leases the semaphore grants at once now
// (0 for a nil or zero value).
func (s *InterProcessSemaphoreV2) MaxLeases() int {
	if !s.usable() {
		return 0
	}
	if s.count != nil {
		return s.count.Count()
	}
	return s.max
}

func (s *InterProcessSemaphoreV2) countChanged() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

// Acquire takes one lease, waiting as long as ctx allows (Curator's
// acquire()). When ctx ends first, it returns an error wrapping ctx.Err()
// and leaves neither a lease node nor an internal lock node behind.
func (s *InterProcessSemaphoreV2) Acquire(ctx context.Context) (*Lease, error) {
	return only(s.acquire(ctx, 1, false))
}

// AcquireN takes qty leases, one after the other, all within ctx. One
// deadline covers them all, as in Curator's acquire(qty, time, unit). On any
// failure every lease this call took is returned before it returns the error.
// qty below 1 is an error wrapping framework.ErrInvalidArgument.
func (s *InterProcessSemaphoreV2) AcquireN(ctx context.Context, qty int) ([]*Lease, error) {
	return s.acquire(ctx, qty, false)
}

// TryAcquire takes one lease only if one is available now. Otherwise it
// returns an error wrapping ErrLocked and leaves no node. "Available now"
// includes that no other contender is already waiting for a lease (one that
// holds the internal lock): it does not overtake the queue.
func (s *InterProcessSemaphoreV2) TryAcquire(ctx context.Context) (*Lease, error) {
	return only(s.acquire(ctx, 1, true))
}

func only(leases []*Lease, err error) (*Lease, error) {
	if err != nil {
		return nil, err
	}
	return leases[0], nil
}

// TryAcquireN is TryAcquire for qty leases: all of them, or none and an
// error wrapping ErrLocked.
func (s *InterProcessSemaphoreV2) TryAcquireN(ctx context.Context, qty int) ([]*Lease, error) {
	return s.acquire(ctx, qty, true)
}

func (s *InterProcessSemaphoreV2) acquire(ctx context.Context, qty int, try bool) ([]*Lease, error) {
	if !s.usable() {
		return nil, errZero("InterProcessSemaphoreV2")
	}
	if err := checkContext(ctx); err != nil {
		return nil, errs.Errorf("semaphore %s: %w", s.path, err)
	}
	if qty < 1 {
		return nil, errs.Errorf("semaphore %s: %w: qty %d must be at least 1", s.path, framework.ErrInvalidArgument, qty)
	}
	if s.count == nil && qty > s.max {
		// Could never be granted: waiting would not end, and a try would
		// blame a participant that is not there. (With a SharedCount the
		// limit may rise, so the request waits.)
		return nil, errs.Errorf("semaphore %s: %w: qty %d is more than the %d leases it grants", s.path, framework.ErrInvalidArgument, qty, s.max)
	}
	leases := make([]*Lease, 0, qty)
	for len(leases) < qty {
		l, err := s.acquireOne(ctx, try)
		if err != nil {
			rctx, cancel := acquire.CleanupContext(ctx)
			defer cancel()
			return nil, errors.Join(errs.Errorf("semaphore %s: acquire lease %d of %d: %w", s.path, len(leases)+1, qty, err),
				ReturnAll(rctx, leases))
		}
		leases = append(leases, l)
	}
	return leases, nil
}

// acquireOne is Curator's internalAcquire1Lease: take the internal mutex,
// create our lease node and wait for the lease count to allow it; release
// the internal mutex in every case (the attempt's guard). When the lease
// node (or the internal lock's node) vanishes, the whole is tried again as
// far as the client's retry policy allows (RETRY_DUE_TO_MISSING_NODE).
func (s *InterProcessSemaphoreV2) acquireOne(ctx context.Context, try bool) (*Lease, error) {
	guard := &s.guards[0]
	if try {
		guard = &s.guards[1]
	}
	g, err := s.leases.Acquire(ctx, acquire.Attempt{Path: s.leasePath, Mode: framework.EphemeralSequential,
		Data: s.data, Driver: leaseDriver{s}, Try: try, Guard: guard, Observer: &s.events})
	if err != nil {
		return nil, err
	}
	return &Lease{g: g}, nil
}

// ParticipantNodes returns the names (not paths) of the children of
// P/leases, in server order, as Curator's getParticipantNodes.
func (s *InterProcessSemaphoreV2) ParticipantNodes(ctx context.Context) ([]string, error) {
	if !s.usable() {
		return nil, errZero("InterProcessSemaphoreV2")
	}
	if err := checkContext(ctx); err != nil {
		return nil, errs.Errorf("participants of %s: %w", s.path, err)
	}
	names, _, err := s.client.Children(ctx, s.leases.Base())
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return names, err
}

// leaseDriver is the semaphore's predicate: our lease is granted while
// P/leases has at most MaxLeases children, ours and foreign ones included;
// order does not matter.
type leaseDriver struct{ s *InterProcessSemaphoreV2 }

func (leaseDriver) Sort(children []string) []string { return children }

func (leaseDriver) Order() string { return "server" } // as the server lists them

func (d leaseDriver) Check(children []string, ourName string) (bool, string, error) {
	held, found := locktree.Leases(children, ourName, d.s.MaxLeases())
	if !found {
		return false, "", acquire.ErrVanished
	}
	return held, "", nil
}

func (d leaseDriver) Changed() <-chan struct{} {
	d.s.mu.Lock()
	defer d.s.mu.Unlock()
	return d.s.changed
}

// Lease is one lease of an InterProcessSemaphoreV2: its node
// P/leases/_c_<uuid>-lease-<seq>. Close it to return it. A lease tells the
// life of its grant as a Handle does (see Handle): Done closes when it is
// lost or closed, and Err says which; a lease lost at SUSPENDED has its
// node deleted by the library, as a Handle's. A zero Lease fails every call
// with framework.ErrInvalidArgument.
type Lease struct {
	g *acquire.Grant // released when the lease is closed
}

// usable reports whether l came from a semaphore.
func (l *Lease) usable() bool { return l != nil && l.g != nil }

// Close returns the lease: its node is deleted. The delete is guaranteed: if
// it fails for connection loss, it goes on in the background, and the error
// is returned for information; the lease counts as returned either way.
// Closing a lease that was lost returns at once an error wrapping
// ErrLockLost, waiting for no server (the library deletes the node in the
// background), so that its owner learns its work was not protected all
// along. Closing a lease that is already closed returns an error wrapping
// ErrNotHeld, so that a double return is visible; ReturnAll ignores it. A
// nil ctx is an error wrapping framework.ErrInvalidArgument.
func (l *Lease) Close(ctx context.Context) error {
	if !l.usable() {
		return errZero("Lease")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("close lease %s: %w", l.g.Path(), err)
	}
	lost, first := l.g.Release()
	switch {
	case !first:
		return errs.Errorf("close lease %s: %w", l.g.Path(), ErrNotHeld)
	case lost != nil:
		return errs.Errorf("close lease %s: %w", l.g.Path(), lost)
	}
	if err := l.g.Delete(ctx); err != nil {
		return errs.Errorf("close lease %s: %w", l.g.Path(), err)
	}
	return nil
}

// Release is Close, under the name an Owner gives it: a Lease is an Owner,
// so that WithLock can hold one.
func (l *Lease) Release(ctx context.Context) error { return l.Close(ctx) }

// Data reads the lease node's data (Curator's getData).
func (l *Lease) Data(ctx context.Context) ([]byte, error) {
	if !l.usable() {
		return nil, errZero("Lease")
	}
	if err := checkContext(ctx); err != nil {
		return nil, errs.Errorf("data of lease %s: %w", l.g.Path(), err)
	}
	data, _, err := l.g.Client().GetData(ctx, l.g.Path())
	return data, err
}

// NodeName returns the last segment of the lease node's path (Curator's
// getNodeName), or "" for a zero Lease.
func (l *Lease) NodeName() string {
	if !l.usable() {
		return ""
	}
	return l.g.Name()
}

// Path returns the full path of the lease node, or "" for a zero Lease.
func (l *Lease) Path() string {
	if !l.usable() {
		return ""
	}
	return l.g.Path()
}

// Done returns a channel that is closed when the lease ends, for any reason.
// The lease ends when it can no longer be trusted (SUSPENDED or LOST under
// the client's default error policy, LOST only under
// state.SessionErrorPolicy; the client closed), or when it is closed. Err
// tells which.
func (l *Lease) Done() <-chan struct{} {
	if !l.usable() {
		return closedChan
	}
	return l.g.Done()
}

// Err returns nil while the lease is held, and otherwise says why not, as
// a Handle's Err does: it wraps ErrLockLost once the lease is lost, closed
// since or not, and ErrNotHeld once it is closed after holding.
func (l *Lease) Err() error {
	if !l.usable() {
		return errZero("Lease")
	}
	return l.g.Err()
}

// grantContext is the lease's grant's context (contextOf).
func (l *Lease) grantContext() context.Context {
	if !l.usable() {
		return nil
	}
	return l.g.Context()
}

// FencingToken returns the lease node's czxid. It strictly increases across
// every lease ever granted by this semaphore, across sessions and re-created
// parents. As Handle.FencingToken, the first call reads it (one round trip)
// and later calls answer at once; the error wraps ErrNotHeld once the lease
// is closed, and ErrLockLost once it is lost or the node is gone.
func (l *Lease) FencingToken(ctx context.Context) (int64, error) {
	if !l.usable() {
		return 0, errZero("Lease")
	}
	if err := checkContext(ctx); err != nil {
		return 0, errs.Errorf("fencing token of lease %s: %w", l.g.Path(), err)
	}
	t, err := l.g.Token(ctx)
	if err != nil {
		return 0, errs.Errorf("fencing token of lease %s: %w", l.g.Path(), err)
	}
	return t, nil
}

// ReturnAll closes every lease (nil and zero entries are skipped), as Curator's
// returnAll. Leases already closed are no error; the other errors are
// joined.
func ReturnAll(ctx context.Context, leases []*Lease) error {
	var errs []error
	for _, l := range leases {
		if !l.usable() {
			continue
		}
		if err := l.Close(ctx); err != nil && !errors.Is(err, ErrNotHeld) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
