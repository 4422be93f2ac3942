package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
	"github.com/gocurator/curator/retry"
)

// ErrLeadershipInterrupted is the cause of the context a LeaderSelector's
// function runs with when InterruptLeadership ends its leadership.
var ErrLeadershipInterrupted = errors.New("gocurator: leadership interrupted")

// errLeadershipPanicked is why a term ended whose function panicked, as its
// LeadershipLost event tells it.
var errLeadershipPanicked = errors.New("gocurator: the leadership function panicked")

// LeaderSelector is a candidate in a leader election that runs a function
// while it leads. It is Curator's LeaderSelector: the candidates of an
// election take turns to lead, each running its function while it leads;
// returning from the function gives leadership up. Go and Java Curator
// candidates can share one election.
//
// Tree: exactly an InterProcessMutex on the path whose lock nodes hold the
// participant id (WithParticipantID; without one, the client's default
// data), as Curator's selector writes: the candidate whose node is first
// leads.
//
// The function runs with a context that is cancelled, with a cause wrapping
// ErrLockLost, as soon as leadership can no longer be trusted (SUSPENDED or
// LOST under the client's default error policy, LOST only under
// state.SessionErrorPolicy: Curator's LeaderSelectorListenerAdapter, which
// interrupts takeLeadership then), with cause ErrLeadershipInterrupted at
// InterruptLeadership, and with a cause wrapping framework.ErrClosed when
// the selector closes. The function must return then: leadership is given
// up (the node deleted) when it returns, as in Curator, or — after a loss
// at SUSPENDED — once the servers could have expired the session, if the
// function has not returned by then (the node of a lost term does not keep
// others from leading). A function that ignores its context is the
// caller's bug: it goes on believing it leads while another candidate
// does. A function that panics gives leadership up first: the node is
// deleted (within a bound of its own) before the panic goes on.
//
// Start and Close follow the package's one lifecycle rule: starting twice,
// or after Close, fails with ErrInvalidState; Close is idempotent, and
// never waits for user code (see Close). A zero LeaderSelector fails every
// call with framework.ErrInvalidArgument.
type LeaderSelector struct {
	mutex       *InterProcessMutex
	fn          func(ctx context.Context) error
	id          string
	autoRequeue bool
	life        lifecycle // its gate is the leadership function's

	mu        sync.Mutex
	queued    bool                    // a term is queued or under way
	interrupt context.CancelCauseFunc // ends the function's context, while it leads
	holder    *Handle                 // while it leads
	wake      chan struct{}           // Requeue asks the goroutine for another term
}

// NewLeaderSelector returns a selector for the election at path that runs fn
// while it leads. It is Curator's LeaderSelector(client, leaderPath,
// listener) with the listener's takeLeadership. The client and path are
// checked as for NewInterProcessMutex; a nil fn is an error wrapping
// framework.ErrInvalidArgument, and so is WithCloseMode (a latch's option).
func NewLeaderSelector(client *framework.Client, path string, fn func(ctx context.Context) error, opts ...ElectionOption) (*LeaderSelector, error) {
	if fn == nil {
		return nil, errs.Errorf("%w: nil leadership function", framework.ErrInvalidArgument)
	}
	o := electionOptionsOf(opts)
	if o.latchOnly != "" {
		return nil, errs.Errorf("%w: %s is a LeaderLatch's option", framework.ErrInvalidArgument, o.latchOnly)
	}
	var lockOpts []LockOption
	if o.id != "" {
		lockOpts = append(lockOpts, WithLockData([]byte(o.id)))
	}
	mu, err := newMutex(client, path, locktree.MutexName, recipeSelector, lockNameDriver(locktree.MutexName, 1), lockOpts)
	if err != nil {
		return nil, err
	}
	return &LeaderSelector{mutex: mu, fn: fn, id: o.id, autoRequeue: o.autoRequeue, wake: make(chan struct{}, 1)}, nil
}

// usable reports whether s was made by NewLeaderSelector.
func (s *LeaderSelector) usable() bool { return s != nil && s.mutex.usable() }

// Path returns the election's path ("" for a nil or zero selector).
func (s *LeaderSelector) Path() string {
	if !s.usable() {
		return ""
	}
	return s.mutex.Path()
}

// ID returns the selector's participant id.
func (s *LeaderSelector) ID() string {
	if !s.usable() {
		return ""
	}
	return s.id
}

func (s *LeaderSelector) what() string { return "leader selector " + s.mutex.Path() }

// Start joins the election: the selector queues for leadership once, and,
// with WithAutoRequeue, again after each turn (Curator's start()). Starting
// twice, or after Close, is an error wrapping ErrInvalidState.
func (s *LeaderSelector) Start() error {
	if !s.usable() {
		return errZero("LeaderSelector")
	}
	s.mu.Lock()
	s.queued = true
	s.mu.Unlock()
	return s.life.start(s.what(), s.run)
}

// Requeue queues the selector for another turn if it is not queued (nor
// leading) already, and reports whether it did (Curator's requeue()). It is
// an error wrapping ErrInvalidState when the selector is not started, or
// closed.
func (s *LeaderSelector) Requeue() (bool, error) {
	if !s.usable() {
		return false, errZero("LeaderSelector")
	}
	if s.life.current() != started {
		return false, errs.Errorf("%s: %w: not started, or closed", s.what(), ErrInvalidState)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queued {
		return false, nil
	}
	s.queued = true
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true, nil
}

// HasLeadership reports whether the selector leads now: its function runs,
// leadership can be trusted, and the selector is not closed (Curator's
// hasLeadership).
func (s *LeaderSelector) HasLeadership() bool {
	if !s.usable() || s.life.current() != started {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holder != nil && s.holder.IsHeld()
}

// FencingToken returns the czxid of the selector's lock node while it leads:
// a number that strictly increases across every term of leadership of the
// election. It is the mutex's FencingToken. A leader stamps its writes with
// it so that a resource can refuse a deposed leader's. The error wraps
// ErrNotLeader when the selector does not lead, ErrLockLost once the term is
// lost.
func (s *LeaderSelector) FencingToken(ctx context.Context) (int64, error) {
	if !s.usable() {
		return 0, errZero("LeaderSelector")
	}
	s.mu.Lock()
	h := s.holder
	s.mu.Unlock()
	if h == nil {
		if err := checkContext(ctx); err != nil {
			return 0, errs.Errorf("fencing token of %s: %w", s.Path(), err)
		}
		return 0, errs.Errorf("fencing token of %s: %w", s.Path(), ErrNotLeader)
	}
	return h.FencingToken(ctx)
}

// InterruptLeadership cancels the context of the function under way, with
// cause ErrLeadershipInterrupted (Curator's interruptLeadership). It does
// nothing when the selector does not lead.
func (s *LeaderSelector) InterruptLeadership() {
	if !s.usable() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.interrupt != nil {
		s.interrupt(ErrLeadershipInterrupted)
	}
}

// Close leaves the election. A queued turn is dropped, the function under
// way has its context cancelled (with a cause wrapping framework.ErrClosed),
// and no function begins once Close has begun, even for a turn already
// won; HasLeadership is false from then on. Close never waits for the
// leadership function: while one runs, Close returns at once, and
// leadership is given up (the node deleted) when the function returns;
// otherwise Close returns once the selector has let go of everything (its
// node deleted). So Close may be called from the function itself, or from
// a goroutine the function waits for. Closed tells when everything is
// over. Close is idempotent.
func (s *LeaderSelector) Close() error {
	if !s.usable() {
		return errZero("LeaderSelector")
	}
	s.life.close(closedError{s.what()}, nil)
	return nil
}

// Closed returns a channel that is closed once the selector is closed and
// has let go of everything: the leadership function has returned and the
// node is deleted. Before Close it stays open, even once the client has
// closed (call Close then too); for a selector never started, Close closes
// it at once.
func (s *LeaderSelector) Closed() <-chan struct{} {
	if !s.usable() {
		return closedChan
	}
	return s.life.ended()
}

// Participants returns every candidate, leader first, in queue order, with
// the ids their nodes hold (Curator's getParticipants).
func (s *LeaderSelector) Participants(ctx context.Context) ([]Participant, error) {
	if !s.usable() {
		return nil, errZero("LeaderSelector")
	}
	sorted, err := s.mutex.ParticipantNodes(ctx)
	if err != nil {
		return nil, errs.Errorf("participants of %s: %w", s.Path(), err)
	}
	return participants(ctx, s.mutex.li.Client(), sorted, 0)
}

// Leader returns the leading candidate, or the zero Participant when there
// is none (Curator's getLeader).
func (s *LeaderSelector) Leader(ctx context.Context) (Participant, error) {
	if !s.usable() {
		return Participant{}, errZero("LeaderSelector")
	}
	sorted, err := s.mutex.ParticipantNodes(ctx)
	if err != nil {
		return Participant{}, errs.Errorf("leader of %s: %w", s.Path(), err)
	}
	return leader(ctx, s.mutex.li.Client(), sorted)
}

// run is the selector's goroutine: one term each time it is queued, until
// Close or until its client is closed (nothing it could do on it would
// work).
func (s *LeaderSelector) run(ctx context.Context) (then func()) {
	for {
		if err := s.term(ctx); errors.Is(err, framework.ErrClosed) {
			s.mu.Lock()
			s.queued = false
			s.mu.Unlock()
			return nil
		}
		s.mu.Lock()
		s.queued = s.autoRequeue
		again := s.queued
		s.mu.Unlock()
		if !again {
			select {
			case <-s.wake:
			case <-ctx.Done():
				return nil
			}
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// term is one term of leadership (Curator's doWork): take the mutex, run the
// function while leading, give the mutex up. It returns why it could not queue.
func (s *LeaderSelector) term(ctx context.Context) error {
	h := s.mutex.NewHandle()
	if err := h.Acquire(ctx); err != nil {
		if ctx.Err() == nil && !errors.Is(err, framework.ErrClosed) {
			s.mutex.li.Client().Logger().Info("leader selector: queueing failed", zap.String("path", s.Path()), zap.Error(err))
			_ = retry.Sleep(ctx, latchRetryWait)
		}
		return err
	}
	lctx, cancel, stop := watchLoss(ctx, h)
	s.mu.Lock()
	s.holder, s.interrupt = h, cancel
	s.mu.Unlock()

	began := time.Now()
	c := s.mutex.li.Client()
	g := h.current() // its node's session is the one its events name
	dropped := emit(c, recipeSelector, 0, framework.Event{Kind: LeadershipGained, Time: began, Path: s.Path(), Node: g.Path(), Session: g.Session()})
	returned := false
	defer func() { // as the function returns, or panics: leadership is given up first
		why := termEnd(lctx)
		if !returned {
			why = errLeadershipPanicked
		}
		if !dropped {
			emit(c, recipeSelector, 0, framework.Event{Kind: LeadershipLost, Path: s.Path(), Node: g.Path(),
				Session: g.Session(), Hold: time.Since(began), Err: why})
		}
		s.mu.Lock()
		s.holder, s.interrupt = nil, nil
		s.mu.Unlock()
		stop()
		rctx, rcancel := acquire.CleanupContext(ctx)
		defer rcancel()
		_ = h.Release(rctx) // after a loss it says so; leadership is given up either way
	}()
	var err error
	s.life.gate.Call(func() { err = s.fn(lctx) }) // refused once Close has begun
	returned = true
	if err != nil && !errors.Is(err, context.Canceled) && lctx.Err() == nil {
		s.mutex.li.Client().Logger().Info("leader selector: the leadership function failed", zap.String("path", s.Path()), zap.Error(err))
	}
	return nil
}

// termEnd is why a term whose function ran with ctx ended, as a
// LeadershipLost event tells it: nil when it was given up (the function
// returned, or the selector closed), as a latch's.
func termEnd(ctx context.Context) error {
	cause := context.Cause(ctx)
	if _, closing := cause.(closedError); closing {
		return nil
	}
	return cause
}
