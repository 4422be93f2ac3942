package chaoscontender

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
)

// Role is what a contender contends for.
type Role string

// The roles.
const (
	Mutex     Role = "mutex"
	Write     Role = "write" // a read-write lock's write half
	Read      Role = "read"  // its read half
	Semaphore Role = "sem"   // one lease
	Latch     Role = "latch"
	Selector  Role = "selector"
)

// Contender is one contender's settings; CuratorPeer's chaos verb and
// Host's take the same, as options of the same names.
type Contender struct {
	Label   string // its holdings are <Label>.<n>
	Role    Role
	Path    string        // the lock's, or the election's
	Leases  int           // a semaphore's
	Referee string        // the referee's URL
	Fenced  bool          // its holders write their fencing token at each step
	Hold    time.Duration // time inside, over Writes steps
	Writes  int
	Acquire time.Duration // bounds each wait for the lock (or for a term)
	Linger  time.Duration // bounds a holder's holding on while the referee asks
}

// pauseGap is how much longer than asked a holder's nap must have taken for
// it to know that its process was paused (SIGSTOP) during it.
const pauseGap = time.Second

// Counts are a contender's counts, as its report says them.
type Counts struct {
	Acquisitions, Told, Fenced, StaleTries, Timeouts, Cancelled, Closed, Failures, GuardErrors atomic.Int64
}

// String is the report: "acquisitions=<n> told=<n> ...".
func (n *Counts) String() string {
	return fmt.Sprintf("acquisitions=%d told=%d fenced=%d stale-tries=%d timeouts=%d cancelled=%d closed=%d failures=%d guard-errors=%d",
		n.Acquisitions.Load(), n.Told.Load(), n.Fenced.Load(), n.StaleTries.Load(), n.Timeouts.Load(), n.Cancelled.Load(),
		n.Closed.Load(), n.Failures.Load(), n.GuardErrors.Load())
}

// run is one contender running on a client.
type run struct {
	c  *Client
	ct Contender
	n  *Counts
}

// Run runs the contender until ctx ends, and returns its counts.
func (c *Client) Run(ctx context.Context, ct Contender) *Counts {
	r := &run{c: c, ct: ct, n: &Counts{}}
	for ctx.Err() == nil {
		switch ct.Role {
		case Latch:
			r.latchTerm(ctx)
		case Selector:
			r.selectorTurns(ctx)
		default:
			r.lockOnce(ctx)
		}
	}
	return r.n
}

// failed counts a failed call of generation g by why it failed, and paces
// the loop.
func (r *run) failed(ctx context.Context, what string, err error, g *generation) {
	replaced := false
	select {
	case <-g.replaced:
		replaced = true
	default:
	}
	switch {
	case replaced || errors.Is(err, framework.ErrClosed):
		r.n.Closed.Add(1)
	case errors.Is(err, context.DeadlineExceeded):
		r.n.Timeouts.Add(1)
	case errors.Is(err, context.Canceled):
		r.n.Cancelled.Add(1)
	default:
		r.n.Failures.Add(1)
		r.c.log.Info("chaos contender: "+what+" failed", zap.String("contender", r.ct.Label), zap.Error(err))
	}
	select {
	case <-time.After(20 * time.Millisecond): // pacing after a failure
	case <-ctx.Done():
	}
}

// wait is one wait of the contender on g's client (an acquire, an await of
// a term), as long as Acquire at most: CancelAcquires cuts it short. It
// reports whether it succeeded, and counts why not.
func (r *run) wait(ctx context.Context, g *generation, what string, f func(context.Context) error) bool {
	c := r.c
	c.mu.Lock()
	gate := c.cancel
	c.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, r.ct.Acquire)
	defer cancel()
	defer context.AfterFunc(gate, cancel)() // CancelAcquires ends it
	c.waiting.Add(1)
	err := f(wctx)
	c.waiting.Add(-1)
	if err != nil {
		r.failed(ctx, what, err, g)
	}
	return err == nil
}

// lockOnce acquires the lock once, holds it and releases it.
func (r *run) lockOnce(ctx context.Context) {
	o, g, err := r.c.owner(r.ct)
	if err != nil {
		r.failed(ctx, "making the lock", err, g)
		return
	}
	began := time.Now()
	if !r.wait(ctx, g, "acquire", o.Acquire) {
		return
	}
	r.hold(ctx, o.Done(), began, o.FencingToken)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := o.Release(rctx); err != nil && !errors.Is(err, recipes.ErrLockLost) {
		r.failed(ctx, "release", err, g)
	}
}

// latchTerm stands in the election with a new LeaderLatch on the current
// client until it leads (within Acquire), holds the term and closes it.
func (r *run) latchTerm(ctx context.Context) {
	g := r.c.current()
	l, err := recipes.NewLeaderLatch(g.fc, r.ct.Path, recipes.WithParticipantID(r.ct.Label))
	if err == nil {
		err = l.Start()
	}
	if err != nil {
		r.failed(ctx, "latch start", err, g)
		return
	}
	began := time.Now()
	if r.wait(ctx, g, "latch await", l.Await) {
		r.hold(ctx, l.Done(), began, l.FencingToken)
	}
	if err := l.Close(); err != nil && !errors.Is(err, framework.ErrClosed) {
		r.failed(ctx, "latch close", err, g)
	}
}

// selectorTurns runs an auto-requeued LeaderSelector on the current client
// until ctx ends or the client is replaced: each of its turns is a term.
func (r *run) selectorTurns(ctx context.Context) {
	g := r.c.current()
	began := time.Now() // when the wait for the next turn began
	var sel *recipes.LeaderSelector
	sel, err := recipes.NewLeaderSelector(g.fc, r.ct.Path, func(tctx context.Context) error {
		r.hold(ctx, tctx.Done(), began, sel.FencingToken)
		began = time.Now()
		return nil
	}, recipes.WithParticipantID(r.ct.Label), recipes.WithAutoRequeue())
	if err == nil {
		err = sel.Start()
	}
	if err != nil {
		r.failed(ctx, "selector start", err, g)
		return
	}
	select {
	case <-ctx.Done():
	case <-g.replaced:
	}
	if err := sel.Close(); err != nil { // it waits for a turn under way
		r.failed(ctx, "selector close", err, g)
	}
}

// hold is one holding, just granted (its wait began at began), of what
// stays held until done closes (a loss, a term cut short): it is told then,
// or when its fencing token says it is lost; untold, it enters the
// referee's guard and holds (see inside). The caller releases after.
func (r *run) hold(ctx context.Context, done <-chan struct{}, began time.Time, token func(context.Context) (int64, error)) {
	h := &holding{id: fmt.Sprintf("%s.%d", r.ct.Label, r.n.Acquisitions.Add(1)), r: r}
	finished := make(chan struct{})
	defer func() {
		if h.end() {
			r.n.Told.Add(1)
		}
		close(finished)
	}()
	go func() {
		select {
		case <-done:
			h.tell()
		case <-finished:
		}
	}()
	var tok int64
	if r.ct.Fenced {
		tctx, cancel := context.WithTimeout(ctx, r.ct.Acquire)
		var err error
		tok, err = token(tctx)
		cancel()
		switch {
		case errors.Is(err, recipes.ErrLockLost), errors.Is(err, recipes.ErrNotLeader):
			h.tell()
			return
		case err != nil:
			r.failed(ctx, "fencing token", err, r.c.current())
			return
		}
	}
	if !h.told() {
		r.inside(h, began, tok)
	}
}

// inside enters the guard and takes Writes steps (fenced writes, for a
// holder that writes) Hold apart, then, while the referee says to linger,
// one every 20 ms, until told (or Linger has passed), and leaves. After a
// nap far longer than asked (a pause) the due step goes out unchecked.
func (r *run) inside(h *holding, began time.Time, token int64) {
	reply, err := r.call("enter?h=%s&b=%d&t=%d", h.id, began.UnixMicro(), token)
	if err != nil {
		r.n.GuardErrors.Add(1)
		r.c.log.Warn("chaos contender: entering the guard failed", zap.String("holding", h.id), zap.Error(err))
		return
	}
	if reply == "told" {
		return
	}
	defer func() {
		if _, err := r.call("leave?h=%s", h.id); err != nil {
			r.n.GuardErrors.Add(1)
			r.c.log.Warn("chaos contender: leaving the guard failed", zap.String("holding", h.id), zap.Error(err))
		}
	}()
	linger := reply == "linger"
	start, looked, nap := time.Now(), time.Now(), time.Duration(0)
	for i := 0; ; i++ {
		if r.ct.Fenced && i > 0 && time.Since(looked) > nap+pauseGap {
			r.n.StaleTries.Add(1)
			if reply, err := r.call("step?h=%s", h.id); err == nil && reply == "fenced" {
				r.n.Fenced.Add(1)
				return
			}
		}
		if h.told() || (i >= r.ct.Writes && !(linger && time.Since(start) < r.ct.Linger)) {
			return
		}
		looked = time.Now()
		reply, err := r.call("step?h=%s", h.id)
		switch {
		case err != nil:
			r.n.Failures.Add(1)
			r.c.log.Info("chaos contender: step failed", zap.String("holding", h.id), zap.Error(err))
			return
		case reply == "fenced":
			r.n.Fenced.Add(1)
			return
		}
		linger = reply == "linger"
		nap = 20 * time.Millisecond
		if i < r.ct.Writes {
			nap = max(time.Millisecond, r.ct.Hold/time.Duration(r.ct.Writes))
		}
		time.Sleep(nap) // time inside the critical section
	}
}
