package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/callgate"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/retry"
)

// CloseMode says what a LeaderLatch's Close tells its listeners (Curator's
// LeaderLatch.CloseMode).
type CloseMode int

const (
	// CloseSilent: listeners are not told (Curator's SILENT, the default).
	CloseSilent CloseMode = iota
	// CloseNotifyLeader: a leading latch's listeners hear NotLeader
	// (Curator's NOTIFY_LEADER).
	CloseNotifyLeader
)

// LeaderLatch is Curator's LeaderLatch: one of the candidates on a path
// leads, the one whose node sorts first, until its latch closes or it loses
// its session; then the next one leads. Go and Java Curator candidates can
// share one election.
//
// Tree: each candidate creates path/_c_<uuid>-latch-<seq>, protected and
// EPHEMERAL_SEQUENTIAL under container parents, holding its participant id
// (UTF-8); the lowest sequence leads; each other candidate watches its
// predecessor with getData (no herd).
//
// Connection states follow the client's error policy, as Curator's latch
// does: under the default policy leadership ends at SUSPENDED, under
// state.SessionErrorPolicy only at LOST; when the connection comes back in
// the same session the latch looks again (and leads again if its node is
// still first), and a latch whose node went with its session queues again
// with a new node. Leadership tells its holder the truth as every lock
// owner of this package does (see Handle): Done closes when a term of
// leadership ends, Err says why, and FencingToken is the node's czxid.
type LeaderLatch struct {
	li        lockInternals
	id        string
	closeMode CloseMode
	life      lifecycle
	gate      callgate.Gate // listener calls: Close does not wait while one is under way

	mu        sync.Mutex
	node      string       // our node's path, "" when none
	term      *acquisition // the current or last term of leadership
	changed   chan struct{}
	listeners map[int]LeaderLatchListener
	nextID    int
	ended     error // why the goroutine ended before Close: its client closed
}

// LeaderLatchListener hears a latch's leadership begin and end (Curator's
// LeaderLatchListener). Its methods run on the latch's goroutine, in order;
// they may call the latch's Close.
type LeaderLatchListener interface {
	// IsLeader is called when the latch starts to lead.
	IsLeader()
	// NotLeader is called when it stops.
	NotLeader()
}

// LeaderLatchListenerFuncs is a LeaderLatchListener made of two functions;
// a nil one is not called.
type LeaderLatchListenerFuncs struct {
	OnIsLeader, OnNotLeader func()
}

// IsLeader calls OnIsLeader.
func (f LeaderLatchListenerFuncs) IsLeader() {
	if f.OnIsLeader != nil {
		f.OnIsLeader()
	}
}

// NotLeader calls OnNotLeader.
func (f LeaderLatchListenerFuncs) NotLeader() {
	if f.OnNotLeader != nil {
		f.OnNotLeader()
	}
}

// NewLeaderLatch returns a latch for the election at path (Curator's
// LeaderLatch(client, latchPath, id, closeMode)). The client and path are
// checked as for NewInterProcessMutex; WithAutoRequeue is refused (it is a
// selector's).
func NewLeaderLatch(client *framework.Client, path string, opts ...ElectionOption) (*LeaderLatch, error) {
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	o := electionOptionsOf(opts)
	if o.selector != "" {
		return nil, errs.Errorf("%w: %s is a LeaderSelector's option", ErrBadArgument, o.selector)
	}
	return &LeaderLatch{li: lockInternals{client: client, base: path}, id: o.id, closeMode: o.closeMode,
		changed: make(chan struct{}), listeners: map[int]LeaderLatchListener{}}, nil
}

// Path returns the election's path.
func (l *LeaderLatch) Path() string { return l.li.base }

// ID returns the latch's participant id.
func (l *LeaderLatch) ID() string { return l.id }

// Start joins the election: the latch creates its node and leads when the
// node is first, on a goroutine of its own (Curator's start()). Starting
// twice, or after Close, is an error wrapping ErrInvalidState.
func (l *LeaderLatch) Start() error {
	return l.life.start("leader latch "+l.li.base, l.run)
}

// Close leaves the election: leadership ends, the node is deleted
// (guaranteed), and the listeners hear NotLeader if the latch led and its
// close mode is CloseNotifyLeader. It waits for the latch's goroutine to
// end, but for a listener call under way (a listener may close its latch).
// Closing twice, or before Start, is an error wrapping ErrInvalidState.
func (l *LeaderLatch) Close() error { return l.CloseWithMode(l.closeMode) }

// CloseWithMode is Close with a close mode of its own (Curator's
// close(CloseMode)).
func (l *LeaderLatch) CloseWithMode(m CloseMode) error {
	l.mu.Lock()
	l.closeMode = m // read by the goroutine as it ends the term
	l.mu.Unlock()
	done, err := l.life.stop("leader latch " + l.li.base)
	if err != nil {
		return err
	}
	if l.gate.Close() {
		<-done
	}
	return nil
}

// AddListener registers ln to hear leadership begin and end; it returns a
// function that removes it.
func (l *LeaderLatch) AddListener(ln LeaderLatchListener) (remove func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := l.nextID
	l.nextID++
	l.listeners[id] = ln
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.listeners, id)
	}
}

// HasLeadership reports whether the latch leads now, and its leadership can
// be trusted (Curator's hasLeadership).
func (l *LeaderLatch) HasLeadership() bool { return l.Err() == nil }

// Done returns a channel that is closed when the current term of
// leadership ends (lost, or the latch closed); already closed when the
// latch does not lead. Err tells why.
func (l *LeaderLatch) Done() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.term == nil {
		return closedChan
	}
	return l.term.done()
}

// Err returns nil while the latch leads; an error wrapping ErrNotLeader
// otherwise, which also wraps ErrLockLost when the last term of leadership
// was lost (until the latch leads again).
func (l *LeaderLatch) Err() error {
	l.mu.Lock()
	term := l.term
	l.mu.Unlock()
	if term == nil {
		return errs.Errorf("leader latch %s: %w", l.li.base, ErrNotLeader)
	}
	err := term.err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrLockLost):
		return errs.Errorf("leader latch %s: %w: %w", l.li.base, ErrNotLeader, err)
	}
	return errs.Errorf("leader latch %s: %w", l.li.base, ErrNotLeader)
}

// FencingToken returns the czxid of the latch's node while it leads: a
// number that strictly increases across every term of leadership of the
// election (a latch that leads again with the same node, as after a blip,
// keeps its token: nobody led in between). The error wraps ErrNotLeader
// when it does not lead, and ErrLockLost once a term is lost.
func (l *LeaderLatch) FencingToken(ctx context.Context) (int64, error) {
	if err := checkContext(ctx); err != nil {
		return 0, errs.Errorf("fencing token of %s: %w", l.li.base, err)
	}
	if err := l.Err(); err != nil {
		return 0, err
	}
	l.mu.Lock()
	term := l.term
	l.mu.Unlock()
	t, err := l.li.token(ctx, term)
	if err != nil {
		return 0, errs.Errorf("fencing token of %s: %w: %w", term.path, ErrNotLeader, err)
	}
	return t, nil
}

// Await waits until the latch leads, and returns nil; or an error: wrapping
// ErrInvalidState when the latch is closed (or not started), wrapping
// framework.ErrClosed once its client is closed (the latch then stands no
// more), or ctx's error (Curator's await, and await(time, unit) with ctx's
// deadline).
func (l *LeaderLatch) Await(ctx context.Context) error {
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("await leadership of %s: %w", l.li.base, err)
	}
	for {
		l.mu.Lock()
		changed, ended := l.changed, l.ended
		l.mu.Unlock()
		if l.life.current() != started {
			return errs.Errorf("await leadership of %s: %w: the latch is not started, or closed", l.li.base, ErrInvalidState)
		}
		if ended != nil {
			return errs.Errorf("await leadership of %s: %w", l.li.base, ended)
		}
		if l.HasLeadership() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return errs.Errorf("await leadership of %s: %w", l.li.base, ctx.Err())
		}
	}
}

// OurPath returns the path of the latch's node, or "" (Curator's getOurPath).
func (l *LeaderLatch) OurPath() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.node
}

// Participants returns every candidate, leader first, in queue order, with
// the ids their nodes hold (Curator's getParticipants).
func (l *LeaderLatch) Participants(ctx context.Context) ([]Participant, error) {
	sorted, err := l.li.participants(ctx, l.driver())
	if err != nil {
		return nil, errs.Errorf("participants of %s: %w", l.li.base, err)
	}
	return participants(ctx, l.li.client, sorted, 0)
}

// Leader returns the leading candidate, or the zero Participant when there
// is none (Curator's getLeader).
func (l *LeaderLatch) Leader(ctx context.Context) (Participant, error) {
	sorted, err := l.li.participants(ctx, l.driver())
	if err != nil {
		return Participant{}, errs.Errorf("leader of %s: %w", l.li.base, err)
	}
	return leader(ctx, l.li.client, sorted)
}

func (l *LeaderLatch) driver() driver { return lockNameDriver(locktree.LatchName, 1) }

// latchRetryWait is how long the latch waits before trying again after a
// failure its client's retry policy gave up on.
const latchRetryWait = time.Second

// run is the latch's goroutine: create the node, wait to be first (the
// acquire loop every lock shares), lead until the term ends, look again
// once connected; a node gone with its session is created again.
func (l *LeaderLatch) run(ctx context.Context) {
	a := attempt{path: framework.JoinPath(l.li.base, locktree.LatchName), mode: framework.EphemeralSequential, data: []byte(l.id), driver: l.driver()}
	var n *acquisition
	defer func() {
		l.endTerm(true)
		if n != nil {
			n.end()
			l.li.deleteNode(ctx, n.path)
			l.setNode("")
		}
	}()
	for ctx.Err() == nil {
		if n == nil {
			var err error
			if n, err = l.li.create(ctx, a); err != nil {
				if l.clientClosed(err) {
					return
				}
				l.failed(ctx, "creating the latch node", err)
				continue
			}
			l.setNode(n.path)
		}
		err := l.li.wait(ctx, a, n)
		switch {
		case ctx.Err() != nil:
			return
		case l.clientClosed(err):
			return
		case errors.Is(err, errNodeVanished):
			n.end()
			l.li.deleteNode(ctx, n.path) // if it is there at all, it is an older session's
			n = nil
			continue
		case err != nil:
			l.failed(ctx, "waiting to lead", err)
			n = n.renew()
			continue
		}
		l.beginTerm(n)
		select {
		case <-n.done():
		case <-ctx.Done():
			return
		}
		l.endTerm(false)
		// Look again once connected (Curator's latch does at RECONNECTED):
		// if the node is still first in its session, the latch leads again.
		if err := l.li.client.BlockUntilConnected(ctx); err != nil {
			return
		}
		n = n.renew()
	}
}

// clientClosed reports whether err says the latch's client is closed; if
// so the latch ends there (its goroutine returns, Await says why): nothing
// it could do on that client would work.
func (l *LeaderLatch) clientClosed(err error) bool {
	if !errors.Is(err, framework.ErrClosed) {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = err
	l.broadcast()
	return true
}

// failed logs a failure the client's retry policy gave up on, and waits a
// moment (or until the client is connected) before the latch tries again.
func (l *LeaderLatch) failed(ctx context.Context, what string, err error) {
	l.li.client.Logger().Info("leader latch: "+what+" failed; trying again",
		zap.String("path", l.li.base), zap.Error(err))
	if l.li.client.BlockUntilConnected(ctx) == nil {
		_ = retry.Sleep(ctx, latchRetryWait)
	}
}

func (l *LeaderLatch) setNode(path string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.node = path
}

// beginTerm makes n the current term of leadership and tells the listeners.
func (l *LeaderLatch) beginTerm(n *acquisition) {
	l.mu.Lock()
	l.term = n
	l.broadcast()
	ls := l.listenerList()
	l.mu.Unlock()
	for _, ln := range ls {
		l.gate.Call(ln.IsLeader)
	}
}

// endTerm tells the listeners that the current term of leadership has
// ended: lost (its Done closed), or, when closing, given up (the close ends
// a term that still leads, and the listeners hear of it only in
// CloseNotifyLeader mode).
func (l *LeaderLatch) endTerm(closing bool) {
	l.mu.Lock()
	notify := false
	if term := l.term; term != nil {
		notify = !closing || term.err() == nil && l.closeMode == CloseNotifyLeader
		if closing {
			term.end()
		}
	}
	l.broadcast()
	ls := l.listenerList()
	l.mu.Unlock()
	if notify {
		for _, ln := range ls {
			l.gate.Call(ln.NotLeader)
		}
	}
}

// broadcast wakes Await; l.mu is held.
func (l *LeaderLatch) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// listenerList returns the listeners; l.mu is held.
func (l *LeaderLatch) listenerList() []LeaderLatchListener {
	ls := make([]LeaderLatchListener, 0, len(l.listeners))
	for _, ln := range l.listeners {
		ls = append(ls, ln)
	}
	return ls
}
