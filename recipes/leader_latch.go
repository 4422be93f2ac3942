package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
	"github.com/gocurator/curator/retry"
)

// CloseMode says what a LeaderLatch's Close tells its listeners (Curator's
// LeaderLatch.CloseMode).
type CloseMode int

const (
	// CloseSilent: listeners are not told (Curator's SILENT, the default).
	CloseSilent CloseMode = iota
	// CloseNotifyLeader: a leading latch's listeners hear NotLeader
	// (Curator's NOTIFY_LEADER), once its node is given up; Close does not
	// wait for them.
	CloseNotifyLeader
)

// LeaderLatch is a candidate in the leader election on a path. It is
// Curator's LeaderLatch: one of the candidates on the path leads, the one
// whose node sorts first, until its latch closes or it loses its session;
// then the next one leads. Go and Java Curator candidates can share one
// election.
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
// with a new node. A latch is a candidacy, not a held resource: its node
// stays while its session lives, as in Curator (a lock's node lost at
// SUSPENDED is deleted; a latch's is not). Leadership tells its holder the
// truth as every lock owner of this package does (see Handle): Done closes
// when a term of leadership ends, Err says why, and FencingToken is the
// node's czxid.
//
// Start and Close follow the package's one lifecycle rule: starting twice,
// or after Close, fails with ErrInvalidState; Close is idempotent. A zero
// LeaderLatch fails every call with framework.ErrInvalidArgument.
type LeaderLatch struct {
	li        acquire.Lock
	id        string
	life      lifecycle // its gate is the listeners'
	listeners listeners.Registry[LeaderLatchListener]

	mu        sync.Mutex
	closeMode CloseMode
	closing   bool                  // Close has begun: no term begins
	cand      *acquire.Candidacy    // while the goroutine runs: our node in the election
	term      *acquire.Grant        // the current or last term of leadership
	termBegan time.Time             // when the current term began; zero once it ended
	termTold  bool                  // the current term's LeadershipGained was not dropped: its end is told
	gaining   bool                  // the current term's LeadershipGained is being emitted: termTold is not known yet
	owed      *endOfTerm            // a term that ended while gaining: its LeadershipLost is the gainer's to tell
	heard     []LeaderLatchListener // the listeners told IsLeader in the current or last term
	closeTell bool                  // Close ended a term in CloseNotifyLeader mode: heard hear NotLeader once the goroutine is over
	lastWord  []LeaderLatchListener // left untold of a lost term's NotLeader as Close began: to hear it once the goroutine is over
	changed   chan struct{}
	ended     error // why the goroutine ended: the latch or its client closed
}

// LeaderLatchListener hears a latch's leadership begin and end (Curator's
// LeaderLatchListener). Its methods run on the latch's goroutine, in order,
// listeners in the order they were added; they may call the latch's Close.
// None is called once Close has begun, but for the NotLeader that
// CloseNotifyLeader tells, after the latch has let go of its node.
type LeaderLatchListener interface {
	// IsLeader is called when the latch starts to lead.
	IsLeader()
	// NotLeader is called when it stops.
	NotLeader()
}

// LeaderLatchListenerFuncs is a LeaderLatchListener made of two functions;
// a nil one is not called.
type LeaderLatchListenerFuncs struct {
	// OnIsLeader and OnNotLeader are called by IsLeader and NotLeader.
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
		return nil, errs.Errorf("%w: %s is a LeaderSelector's option", framework.ErrInvalidArgument, o.selector)
	}
	return &LeaderLatch{li: acquire.NewLock(client, path), id: o.id, closeMode: o.closeMode,
		changed: make(chan struct{})}, nil
}

// usable reports whether l was made by NewLeaderLatch.
func (l *LeaderLatch) usable() bool { return l != nil && l.li.Client() != nil }

// Path returns the election's path ("" for a nil or zero latch).
func (l *LeaderLatch) Path() string {
	if !l.usable() {
		return ""
	}
	return l.li.Base()
}

// ID returns the latch's participant id.
func (l *LeaderLatch) ID() string {
	if !l.usable() {
		return ""
	}
	return l.id
}

// what names the latch in errors.
func (l *LeaderLatch) what() string { return "leader latch " + l.li.Base() }

// Start joins the election. The latch creates its node and leads when the
// node is first, on a goroutine of its own (Curator's start()). Starting
// twice, or after Close, is an error wrapping ErrInvalidState.
func (l *LeaderLatch) Start() error {
	if !l.usable() {
		return errZero("LeaderLatch")
	}
	return l.life.start(l.what(), l.run)
}

// Close leaves the election. Leadership ends as Close is called
// (HasLeadership is false when it returns, and no listener hears IsLeader
// once it has begun), the node is deleted (guaranteed), and Await returns
// an error wrapping framework.ErrClosed. If the latch led and its close mode
// is CloseNotifyLeader, the listeners that heard IsLeader hear NotLeader,
// on the latch's goroutine once its node is given up: Close does not wait
// for that (Closed does). Close waits for the latch's goroutine to end, but
// never for a listener: while a listener call is under way (a listener may
// close its latch, or wait for the goroutine that does), Close returns at
// once, its node's delete begun in the background, so that the next
// candidate leads whatever the listener does. Close is idempotent, and
// closing a latch never started keeps it from starting.
func (l *LeaderLatch) Close() error {
	if !l.usable() {
		return errZero("LeaderLatch")
	}
	l.mu.Lock()
	m := l.closeMode
	l.mu.Unlock()
	return l.CloseWithMode(m)
}

// CloseWithMode is Close with a close mode of its own (Curator's
// close(CloseMode)).
func (l *LeaderLatch) CloseWithMode(m CloseMode) error {
	if !l.usable() {
		return errZero("LeaderLatch")
	}
	l.mu.Lock()
	l.closeMode = m // read by the goroutine as it ends a term
	l.mu.Unlock()
	over := l.life.close(closedError{l.what()}, func() {
		l.mu.Lock()
		l.closing = true
		ended := l.endTermLocked(true) // a term that leads ends now
		l.broadcast()                  // Await sees the latch closed
		l.mu.Unlock()
		ended.tell(l)
	})
	if over {
		return nil // the goroutine withdrew: the node is gone
	}
	// A listener call was under way, and the goroutine withdraws only once
	// it returns: the node goes now, in the background, so that the next
	// candidate does not wait for user code Close did not wait for. The
	// goroutine's own delete then finds it gone.
	l.mu.Lock()
	cand := l.cand
	l.mu.Unlock()
	if cand != nil {
		if node := cand.Node(); node != "" {
			l.li.Client().DeleteLater(node, time.Now())
		}
	}
	return nil
}

// Closed returns a channel that is closed once the latch is closed and has
// let go of everything: its goroutine is over, its node deleted, and the
// NotLeader that CloseNotifyLeader tells told. Before Close it stays open,
// even once the client has closed (call Close then too); for a latch never
// started, Close closes it at once.
func (l *LeaderLatch) Closed() <-chan struct{} {
	if !l.usable() {
		return closedChan
	}
	return l.life.ended()
}

// AddListener registers ln to hear leadership begin and end; it returns a
// function that removes it. Listeners are called in the order they were
// added. A nil ln is ignored (remove then does nothing); a listener that
// panics is logged, and the others are still called.
func (l *LeaderLatch) AddListener(ln LeaderLatchListener) (remove func()) {
	if !l.usable() || listeners.IsNil(ln) {
		return func() {}
	}
	return l.listeners.Add(ln)
}

// HasLeadership reports whether the latch leads now, and its leadership can
// be trusted (Curator's hasLeadership).
func (l *LeaderLatch) HasLeadership() bool { return l.Err() == nil }

// Done returns a channel that is closed when the current term of leadership
// ends: lost, or the latch closed. It is already closed when the latch does
// not lead. Err tells why.
func (l *LeaderLatch) Done() <-chan struct{} { return doneOf(l.current()) }

func (l *LeaderLatch) current() *acquire.Grant {
	if !l.usable() {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.term
}

// Err returns nil while the latch leads, and otherwise an error wrapping
// ErrNotLeader. That error also wraps ErrLockLost when the last term of
// leadership was lost (until the latch leads again).
func (l *LeaderLatch) Err() error {
	if !l.usable() {
		return errZero("LeaderLatch")
	}
	err := ownerErr(l.current(), l.what(), ErrNotLeader)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotLeader):
		return err
	case errors.Is(err, ErrLockLost):
		return errs.Errorf("%s: %w: %w", l.what(), ErrNotLeader, err)
	}
	return errs.Errorf("%s: %w", l.what(), ErrNotLeader)
}

// FencingToken returns the czxid of the latch's node while it leads: a number
// that strictly increases across every term of leadership of the election. A
// latch that leads again with the same node, as after a blip, keeps its
// token: nobody led in between. The error wraps ErrNotLeader when it does not
// lead, and ErrLockLost once a term is lost.
func (l *LeaderLatch) FencingToken(ctx context.Context) (int64, error) {
	if !l.usable() {
		return 0, errZero("LeaderLatch")
	}
	if err := checkContext(ctx); err != nil {
		return 0, errs.Errorf("fencing token of %s: %w", l.li.Base(), err)
	}
	term := l.current()
	if err := l.Err(); err != nil {
		return 0, err
	}
	t, err := term.Token(ctx)
	if err != nil {
		return 0, errs.Errorf("fencing token of %s: %w: %w", term.Path(), ErrNotLeader, err)
	}
	return t, nil
}

// Await waits until the latch leads, and returns nil, or an error if it
// cannot. It is Curator's await, and await(time, unit) with ctx's deadline.
// The error wraps ErrInvalidState when the latch is not started, or
// framework.ErrClosed once the latch or its client is closed (leading or not:
// the latch then stands no more); or it is ctx's error.
func (l *LeaderLatch) Await(ctx context.Context) error {
	if !l.usable() {
		return errZero("LeaderLatch")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("await leadership of %s: %w", l.li.Base(), err)
	}
	for {
		l.mu.Lock()
		changed, ended := l.changed, l.ended
		l.mu.Unlock()
		switch l.life.current() {
		case latent:
			return errs.Errorf("await leadership of %s: %w: the latch is not started", l.li.Base(), ErrInvalidState)
		case closed:
			return errs.Errorf("await leadership of %s: %w", l.li.Base(), closedError{l.what()})
		}
		if ended != nil {
			return errs.Errorf("await leadership of %s: %w", l.li.Base(), ended)
		}
		if l.HasLeadership() {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return errs.Errorf("await leadership of %s: %w", l.li.Base(), ctx.Err())
		}
	}
}

// OurPath returns the path of the latch's node, or "" (Curator's getOurPath).
func (l *LeaderLatch) OurPath() string {
	if !l.usable() {
		return ""
	}
	l.mu.Lock()
	c := l.cand
	l.mu.Unlock()
	if c == nil {
		return ""
	}
	return c.Node()
}

// Participants returns every candidate, leader first, in queue order, with
// the ids their nodes hold (Curator's getParticipants).
func (l *LeaderLatch) Participants(ctx context.Context) ([]Participant, error) {
	if !l.usable() {
		return nil, errZero("LeaderLatch")
	}
	if err := checkContext(ctx); err != nil {
		return nil, errs.Errorf("participants of %s: %w", l.li.Base(), err)
	}
	sorted, err := l.li.Participants(ctx, l.driver())
	if err != nil {
		return nil, errs.Errorf("participants of %s: %w", l.li.Base(), err)
	}
	return participants(ctx, l.li.Client(), sorted, 0)
}

// Leader returns the leading candidate, or the zero Participant when there
// is none (Curator's getLeader).
func (l *LeaderLatch) Leader(ctx context.Context) (Participant, error) {
	if !l.usable() {
		return Participant{}, errZero("LeaderLatch")
	}
	if err := checkContext(ctx); err != nil {
		return Participant{}, errs.Errorf("leader of %s: %w", l.li.Base(), err)
	}
	sorted, err := l.li.Participants(ctx, l.driver())
	if err != nil {
		return Participant{}, errs.Errorf("leader of %s: %w", l.li.Base(), err)
	}
	return leader(ctx, l.li.Client(), sorted)
}

func (l *LeaderLatch) driver() acquire.Driver { return lockNameDriver(locktree.LatchName, 1) }

// latchRetryWait is how long the latch waits before trying again after a
// failure its client's retry policy gave up on.
const latchRetryWait = time.Second

// run is the latch's goroutine: stand in the election (a candidacy: our
// node), wait to be first (the acquire loop every lock shares), lead until
// the term ends, look again once connected; a node gone with its session
// is created again. It ends when the latch closes (ctx) or its client does;
// then it withdraws (its node deleted) and tells the NotLeader that Close
// left to tell, if any.
func (l *LeaderLatch) run(ctx context.Context) (then func()) {
	c := l.li.Stand(acquire.Attempt{Path: framework.JoinPath(l.li.Base(), locktree.LatchName),
		Mode: framework.EphemeralSequential, Data: []byte(l.id), Driver: l.driver()})
	l.mu.Lock()
	l.cand = c
	l.mu.Unlock()
	then = l.lastWords
	defer func() {
		l.endTerm(true)
		c.Withdraw(ctx)
		l.finish(context.Cause(ctx))
	}()
	for ctx.Err() == nil {
		term, err := c.Wait(ctx)
		switch {
		case ctx.Err() != nil:
			return then
		case l.clientClosed(err):
			return then
		case errors.Is(err, acquire.ErrVanished):
			// Gone, or an older session's: that one goes when the session is
			// closed (no sooner than the servers could have expired it, the
			// margin its leader was promised), not now. The next Wait
			// creates a new node.
			continue
		case err != nil:
			l.failed(ctx, "standing in the election", err)
			continue
		}
		if !l.beginTerm(term) {
			term.Release()
			return then // closing
		}
		select {
		case <-term.Done():
		case <-ctx.Done():
			return then
		}
		l.endTerm(false)
		// Look again once connected (Curator's latch does at RECONNECTED):
		// if the node is still first in its session, the latch leads again.
		if err := l.li.Client().BlockUntilConnected(ctx); err != nil {
			l.clientClosed(err)
			return then
		}
	}
	return then
}

// clientClosed reports whether err says the latch's client is closed; if
// so the latch ends there (its goroutine returns, Await says why): nothing
// it could do on that client would work.
func (l *LeaderLatch) clientClosed(err error) bool {
	if !errors.Is(err, framework.ErrClosed) {
		return false
	}
	l.finish(err)
	return true
}

// finish records why the latch's goroutine ends (the first reason given),
// and wakes Await.
func (l *LeaderLatch) finish(why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended == nil {
		l.ended = why
	}
	l.broadcast()
}

// failed logs a failure the client's retry policy gave up on, and waits a
// moment (or until the client is connected) before the latch tries again.
func (l *LeaderLatch) failed(ctx context.Context, what string, err error) {
	l.li.Client().Logger().Info("leader latch: "+what+" failed; trying again",
		zap.String("path", l.li.Base()), zap.Error(err))
	if l.li.Client().BlockUntilConnected(ctx) == nil {
		_ = retry.Sleep(ctx, latchRetryWait)
	}
}

// beginTerm makes g the current term of leadership and tells the listeners;
// it reports false, and makes nothing, once Close has begun.
func (l *LeaderLatch) beginTerm(g *acquire.Grant) bool {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return false
	}
	l.term = g
	l.termBegan = time.Now()
	began := l.termBegan
	l.gaining = true
	l.broadcast()
	l.mu.Unlock()
	// Emitted outside l.mu: emitting asks the user's log sink whether it
	// logs. Close may end the term meanwhile: its LeadershipLost, which
	// Close cannot know whether to tell, is then told here.
	told := !emit(l.li.Client(), recipeLatch, 0, framework.Event{Kind: LeadershipGained, Time: began,
		Path: l.li.Base(), Node: g.Path(), Session: g.Session()})
	l.mu.Lock()
	l.termTold, l.gaining = told, false
	owed := l.owed
	l.owed = nil
	l.heard = nil
	l.mu.Unlock()
	if owed != nil {
		owed.told = told
		owed.tell(l)
	}
	for _, ln := range l.listeners.Snapshot() {
		ran, err := l.life.call(func() {
			l.mu.Lock()
			l.heard = append(l.heard, ln) // before it hears: Close may begin meanwhile
			l.mu.Unlock()
			ln.IsLeader()
		})
		if !ran {
			break
		}
		if err != nil {
			l.logListenerPanic(err)
		}
	}
	return true
}

// endTerm ends the current term of leadership, if one is under way, and
// tells it: lost (its Done closed), or, when closing, given up.
func (l *LeaderLatch) endTerm(closing bool) {
	l.mu.Lock()
	e := l.endTermLocked(closing)
	l.mu.Unlock()
	e.tell(l)
}

// endTermLocked ends the current term of leadership, if one is under way
// (it is ended once, by whichever of the goroutine and Close comes first),
// and returns what is to be told of it; l.mu is held. A term lost is told
// to the listeners (NotLeader) at once; a term given up as the latch closes
// ends now (HasLeadership is false from here), and the listeners that heard
// its IsLeader hear NotLeader in CloseNotifyLeader mode only, once the
// goroutine is over (lastWords: no IsLeader call is under way then, so
// heard is whole), Close not waiting for them.
func (l *LeaderLatch) endTermLocked(closing bool) endOfTerm {
	term, began := l.term, l.termBegan
	if term == nil || began.IsZero() {
		return endOfTerm{}
	}
	l.termBegan = time.Time{}
	e := endOfTerm{term: term, began: began, told: l.termTold, notify: !closing}
	if l.gaining { // its LeadershipGained is on its way: the gainer tells the end
		owed := e
		l.owed = &owed
		e.told = false
	}
	if closing {
		if term.Err() == nil && l.closeMode == CloseNotifyLeader {
			l.closeTell = true
		}
		term.Release()
	}
	l.broadcast()
	return e
}

// endOfTerm is what is told of a term of leadership that ended: its
// LeadershipLost event, if its start was told, and, for a term lost, the
// listeners' NotLeader.
type endOfTerm struct {
	term   *acquire.Grant // nil: no term ended
	began  time.Time
	told   bool // its LeadershipGained was not dropped
	notify bool // the listeners hear NotLeader now
}

// tell tells e: the event, then the listeners. Listeners left untold
// because Close began meanwhile hear NotLeader once the goroutine is over,
// in CloseNotifyLeader mode.
func (e endOfTerm) tell(l *LeaderLatch) {
	if e.term == nil {
		return
	}
	if e.told {
		emit(l.li.Client(), recipeLatch, 0, framework.Event{Kind: LeadershipLost, Path: l.li.Base(),
			Node: e.term.Path(), Session: e.term.Session(), Hold: time.Since(e.began), Err: e.term.Cause()})
	}
	if !e.notify {
		return
	}
	if untold := l.tell(LeaderLatchListener.NotLeader); untold != nil {
		l.mu.Lock()
		if l.closeMode == CloseNotifyLeader {
			l.lastWord = untold
		}
		l.mu.Unlock()
	}
}

// tell calls call on every listener, in order, through the lifecycle's
// gate; it returns the listeners left untold because Close had begun.
func (l *LeaderLatch) tell(call func(LeaderLatchListener)) (untold []LeaderLatchListener) {
	ls := l.listeners.Snapshot()
	for i, ln := range ls {
		ran, err := l.life.call(func() { call(ln) })
		if !ran {
			return ls[i:]
		}
		if err != nil {
			l.logListenerPanic(err)
		}
	}
	return nil
}

// lastWords tells the listeners Close left to hear NotLeader
// (CloseNotifyLeader), on the latch's goroutine once it is over: no
// listener call is under way then, and Close does not wait for these.
// Those are the listeners that heard the IsLeader of the term Close ended,
// or those left untold of a lost term's NotLeader as Close began.
func (l *LeaderLatch) lastWords() {
	l.mu.Lock()
	ls := l.lastWord
	if l.closeTell {
		ls = append(ls, l.heard...)
	}
	l.lastWord, l.heard, l.closeTell = nil, nil, false
	l.mu.Unlock()
	for _, ln := range ls {
		if err := listeners.Safe(ln.NotLeader); err != nil {
			l.logListenerPanic(err)
		}
	}
}

// logListenerPanic logs the panic of a listener.
func (l *LeaderLatch) logListenerPanic(err error) {
	l.li.Client().Logger().Error("leader latch listener", zap.String("path", l.li.Base()), zap.Error(err))
}

// broadcast wakes Await; l.mu is held.
func (l *LeaderLatch) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}
