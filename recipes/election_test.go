package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

func mustLatch(t *testing.T, c *framework.Client, path, id string, opts ...recipes.ElectionOption) *recipes.LeaderLatch {
	t.Helper()
	l, err := recipes.NewLeaderLatch(c, path, append([]recipes.ElectionOption{recipes.WithParticipantID(id)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// startInOrder starts the latches one after the other, each once the one
// before has its node (seen through c), so that they queue in that order;
// each is closed when the test ends.
func startInOrder(t *testing.T, c *framework.Client, path string, latches ...*recipes.LeaderLatch) {
	t.Helper()
	for i, l := range latches {
		if err := l.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		waitForChildren(t, c, path, i+1)
	}
}

// leaderOf waits until exactly one latch leads and returns it.
func leaderOf(ctx context.Context, t *testing.T, latches []*recipes.LeaderLatch) *recipes.LeaderLatch {
	t.Helper()
	got := make(chan *recipes.LeaderLatch, len(latches))
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, l := range latches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.Await(actx) == nil {
				got <- l
			}
		}()
	}
	var lead *recipes.LeaderLatch
	select {
	case lead = <-got:
	case <-ctx.Done():
		t.Fatal("no latch leads")
	}
	cancel()
	wg.Wait()
	for _, l := range latches {
		if l != lead && l.HasLeadership() {
			t.Fatalf("%s and %s lead at once", lead.ID(), l.ID())
		}
	}
	return lead
}

// Three candidates in Curator's tree: the first node leads, the others
// queue behind it with their ids; the leader's departure hands leadership
// to the next, whose fencing token is higher; listeners hear it; each
// latch's node goes at Close.
func TestLeaderLatchElection(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	var log eventLog
	var latches []*recipes.LeaderLatch
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("go-%d", i)
		l := mustLatch(t, c, base, id, recipes.WithCloseMode(recipes.CloseNotifyLeader))
		l.AddListener(recipes.LeaderLatchListenerFuncs{
			OnIsLeader: func() { log.note(id + " leads") }, OnNotLeader: func() { log.note(id + " follows") }})
		if err := l.Start(); err != nil {
			t.Fatal(err)
		}
		latches = append(latches, l)
		waitForChildren(t, c, base, i+1) // queue in order
	}
	first := leaderOf(ctx, t, latches)
	if first != latches[0] {
		t.Fatalf("%s leads, want go-0 (the first node)", first.ID())
	}
	ps, err := first.Participants(ctx)
	if err != nil || fmt.Sprint(ps) != "[{go-0 true} {go-1 false} {go-2 false}]" {
		t.Fatalf("participants %v, %v", ps, err)
	}
	if p, err := latches[2].Leader(ctx); err != nil || p != (recipes.Participant{"go-0", true}) {
		t.Fatalf("leader %v, %v", p, err)
	}
	tok := tokenOf(t, first)
	if _, err := latches[1].FencingToken(ctx); !errors.Is(err, recipes.ErrNotLeader) {
		t.Fatalf("a follower's token: %v, want ErrNotLeader", err)
	}
	testutil.ErrorIs(t, latches[1].Err(), recipes.ErrNotLeader)
	done := first.Done()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	waitClosed(ctx, t, done, "the closed leader's Done")
	testutil.ErrorIs(t, first.Err(), recipes.ErrNotLeader)
	next := leaderOf(ctx, t, latches[1:])
	if next != latches[1] || tokenOf(t, next) <= tok {
		t.Fatalf("%s leads next with token %d (first %d), want go-1 with a higher one", next.ID(), tokenOf(t, next), tok)
	}
	if err := first.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil (Close is idempotent)", err)
	}
	testutil.ErrorIs(t, first.Start(), recipes.ErrInvalidState, "started twice")
	if err := latches[1].Close(); err != nil {
		t.Fatal(err)
	}
	if err := latches[2].Await(ctx); err != nil {
		t.Fatal(err)
	}
	if err := latches[2].CloseWithMode(recipes.CloseSilent); err != nil {
		t.Fatal(err)
	}
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
	// go-2 closed silently. A latch closed in CloseNotifyLeader mode tells
	// NotLeader once it has given its node up (Close does not wait for it),
	// so go-0's may come after go-1 leads.
	var heard []string
	testutil.Until(t, "the listeners told", func() (bool, string) {
		log.mu.Lock()
		defer log.mu.Unlock()
		heard = append([]string(nil), log.events...)
		return len(heard) == 5, fmt.Sprint(heard)
	})
	var leads []string
	follows := map[string]bool{}
	for _, e := range heard {
		id, what, _ := strings.Cut(e, " ")
		switch {
		case what == "leads" && !follows[id]:
			leads = append(leads, id)
		case what == "follows" && len(leads) > 0 && slices.Contains(leads, id) && !follows[id]:
			follows[id] = true
		default:
			t.Fatalf("listeners heard %v: %q out of turn", heard, e)
		}
	}
	if fmt.Sprint(leads) != "[go-0 go-1 go-2]" || !follows["go-0"] || !follows["go-1"] || follows["go-2"] {
		t.Fatalf("listeners heard %v: want go-0, go-1, go-2 to lead in turn, the first two to follow after leading", heard)
	}
}

// A leader told SUSPENDED stops leading (Done, Err wrapping ErrLockLost);
// back in the same session, with its node still first, it leads again,
// with the same node and token: nobody led in between. After its session
// expires, its node is gone, the next candidate leads, and the latch
// queues again with a new node.
func TestLeaderLatchThroughFaults(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c, other := newClient(t, proxy.Addr(), framework.WithListener(rec)), newClient(t, "")
	a, b := mustLatch(t, c, base, "a"), mustLatch(t, other, base, "b")
	startInOrder(t, other, base, a, b)
	if err := a.Await(ctx); err != nil {
		t.Fatal(err)
	}
	node, tok := a.OurPath(), tokenOf(t, a)

	done := a.Done()
	proxy.DropConnections()
	waitClosed(ctx, t, done, "the leader's Done at SUSPENDED")
	testutil.ErrorIs(t, a.Err(), recipes.ErrLockLost)
	testutil.ErrorIs(t, a.Err(), recipes.ErrNotLeader)
	if err := a.Await(ctx); err != nil { // RECONNECTED, same session: leads again
		t.Fatal(err)
	}
	if a.OurPath() != node || tokenOf(t, a) != tok || b.HasLeadership() {
		t.Fatalf("after the blip: node %s (was %s), token %d (was %d), b leads %v", a.OurPath(), node, tokenOf(t, a), tok, b.HasLeadership())
	}

	if err := proxy.ExpireSession(c.SessionID()); err != nil {
		t.Fatal(err)
	}
	if err := b.Await(ctx); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(ctx, t, state.Reconnected)
	for a.OurPath() == node || a.OurPath() == "" {
		if err := b.Await(ctx); err != nil { // wait for a's new node, without sleeping
			t.Fatal(err)
		}
		waitForChildren(t, other, base, 2)
	}
	if a.HasLeadership() || tokenOf(t, b) <= tok {
		t.Fatalf("after a's expiry: a leads %v, b's token %d (a's was %d)", a.HasLeadership(), tokenOf(t, b), tok)
	}
	ps, err := b.Participants(ctx)
	if err != nil || fmt.Sprint(ps) != "[{b true} {a false}]" {
		t.Fatalf("participants %v, %v", ps, err)
	}
}

// A selector's function runs while it leads, one candidate at a time, in
// queue order; its context ends when leadership is lost (cause wrapping
// ErrLockLost) or interrupted (ErrLeadershipInterrupted); returning gives
// leadership up; with auto-requeue the candidate queues again. Its node
// holds its id, as Curator's selector's does. Its fencing token grows from
// each term to the next, and a candidate that does not lead has none.
func TestLeaderSelectorTurns(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	var log eventLog
	var inside sync.Mutex
	causes := make(chan error, 10)
	leading := make(chan string, 10)
	var tokens []int64
	selectors := map[string]**recipes.LeaderSelector{}
	fn := func(id string) func(context.Context) error {
		return func(ctx context.Context) error {
			if !inside.TryLock() {
				t.Errorf("%s leads while another does", id)
				return nil
			}
			defer inside.Unlock()
			log.note(id)
			tok, err := (*selectors[id]).FencingToken(ctx)
			if err != nil {
				t.Errorf("%s's fencing token while it leads: %v", id, err)
			}
			tokens = append(tokens, tok)
			leading <- id
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil
		}
	}
	var x, y *recipes.LeaderSelector
	selectors["x"], selectors["y"] = &x, &y
	x, err := recipes.NewLeaderSelector(c, base, fn("x"), recipes.WithParticipantID("x"), recipes.WithAutoRequeue())
	if err != nil {
		t.Fatal(err)
	}
	y, err = recipes.NewLeaderSelector(newClient(t, ""), base, fn("y"), recipes.WithParticipantID("y"))
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Start(); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Recv(t, leading, "the first turn"); got != "x" || !x.HasLeadership() {
		t.Fatalf("%s leads first, want x", got)
	}
	if err := y.Start(); err != nil {
		t.Fatal(err)
	}
	waitForChildren(t, c, base, 2)
	ps, err := y.Participants(ctx)
	if err != nil || fmt.Sprint(ps) != "[{x true} {y false}]" {
		t.Fatalf("participants %v, %v", ps, err)
	}
	if _, err := y.FencingToken(ctx); !errors.Is(err, recipes.ErrNotLeader) {
		t.Fatalf("a follower's fencing token: %v, want ErrNotLeader", err)
	}
	x.InterruptLeadership()
	if cause := testutil.Recv(t, causes, "x's interrupted turn"); !errors.Is(cause, recipes.ErrLeadershipInterrupted) {
		t.Fatalf("cause %v, want ErrLeadershipInterrupted", cause)
	}
	if got := testutil.Recv(t, leading, "the second turn"); got != "y" {
		t.Fatalf("%s leads second, want y", got)
	}
	waitForChildren(t, c, base, 2) // x queued again behind y
	if err := y.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, causes, "y's closed turn")
	if got := testutil.Recv(t, leading, "the third turn"); got != "x" {
		t.Fatalf("%s leads third, want x again", got)
	}
	proxy.DropConnections()
	if cause := testutil.Recv(t, causes, "x's turn lost at SUSPENDED"); !errors.Is(cause, recipes.ErrLockLost) {
		t.Fatalf("cause at SUSPENDED %v, want ErrLockLost", cause)
	}
	if got := testutil.Recv(t, leading, "the turn after the blip"); got != "x" { // requeued, and alone
		t.Fatalf("%s leads after the blip, want x", got)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, causes, "x's closed turn")
	if err := x.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil (Close is idempotent)", err)
	}
	if _, err := x.Requeue(); !errors.Is(err, recipes.ErrInvalidState) {
		t.Fatalf("Requeue after Close: %v", err)
	}
	if got := log.String(); got != "[x y x x]" {
		t.Fatalf("turns %s", got)
	}
	for i := range tokens {
		if len(tokens) != 4 || (i > 0 && tokens[i] <= tokens[i-1]) {
			t.Fatalf("fencing tokens of the turns %v: want 4, strictly increasing", tokens)
		}
	}
}

// The leadership function may close its own selector: Close returns, and
// leadership is given up when the function returns.
func TestLeaderSelectorClosedFromItsFunction(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	closed := make(chan error, 1)
	var s *recipes.LeaderSelector
	s, err := recipes.NewLeaderSelector(c, base, func(context.Context) error {
		closed <- s.Close()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close from the leadership function did not return")
	}
	testutil.WaitGone(t, rawConn(t), base)
	if s.HasLeadership() {
		t.Fatal("HasLeadership after Close")
	}
}

func TestElectionBadArguments(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	testutil.ErrorIs(t, errOf(recipes.NewLeaderLatch(c, base, recipes.WithAutoRequeue())), framework.ErrInvalidArgument, "a LeaderSelector's option")
	testutil.ErrorIs(t, errOf(recipes.NewLeaderSelector(c, base, nil)), framework.ErrInvalidArgument, "nil leadership function")
	testutil.ErrorIs(t, errOf(recipes.NewLeaderSelector(c, base, func(context.Context) error { return nil }, recipes.WithCloseMode(recipes.CloseSilent))), framework.ErrInvalidArgument, "a LeaderLatch's option")
	l := mustLatch(t, c, base, "x")
	testutil.ErrorIs(t, l.Await(testutil.Context(t)), recipes.ErrInvalidState, "not started")
	if err := l.Close(); err != nil {
		t.Fatalf("Close before Start = %v, want nil", err)
	}
	testutil.ErrorIs(t, l.Start(), recipes.ErrInvalidState, "after Close")
	testutil.ErrorIs(t, l.Await(testutil.Context(t)), framework.ErrClosed, "leader latch "+base+" is closed")
	var nilCtx context.Context
	testutil.ErrorIs(t, l.Await(nilCtx), framework.ErrInvalidArgument)
}

// A latch or selector whose client is closed stands no more: the latch's
// Await says why (framework.ErrClosed) instead of waiting, neither spins
// retrying on the closed client (a handful of log lines, not thousands), and
// both still Close.
func TestElectionEndsWithItsClient(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	core, logs := observer.New(zap.InfoLevel)
	c := newClient(t, "", framework.WithLogger(zap.New(core)))
	leader, err := recipes.NewLeaderLatch(newClient(t, ""), base+"/latch")
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Start(); err != nil {
		t.Fatal(err)
	}
	defer leader.Close()
	if err := leader.Await(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := recipes.NewLeaderLatch(c, base+"/latch") // queued behind the leader
	if err != nil {
		t.Fatal(err)
	}
	sel, err := recipes.NewLeaderSelector(c, base+"/selector", func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	waitForChildren(t, c, base+"/latch", 2)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, testutil.Timeout)
	defer cancel()
	if err := l.Await(actx); !errors.Is(err, framework.ErrClosed) {
		t.Fatalf("Await on a latch whose client closed: %v, want framework.ErrClosed", err)
	}
	time.Sleep(300 * time.Millisecond) // a window for a spinning goroutine to show itself in the log
	if n := logs.Len(); n > 5 {
		t.Fatalf("%d log lines within 300ms of the client's Close, the first: %v", n, logs.All()[0].Message)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sel.Close(); err != nil {
		t.Fatal(err)
	}
}

// Await returns, wrapping framework.ErrClosed, once the latch's client
// closes, leading or not: a leading latch's run loop ends with its term
// (the loop that used to return without saying so), a waiting one with its
// wait. An Await under way returns as well as one made after.
func TestAwaitEndsWhenTheClientCloses(t *testing.T) {
	for _, leading := range []bool{true, false} {
		t.Run(fmt.Sprintf("leading=%v", leading), func(t *testing.T) {
			ctx, base := testutil.Begin(t, server.Addr())
			if !leading {
				first := mustLatch(t, newClient(t, ""), base, "first")
				if err := first.Start(); err != nil {
					t.Fatal(err)
				}
				defer first.Close()
				if err := first.Await(ctx); err != nil {
					t.Fatal(err)
				}
			}
			c := newClient(t, "")
			l := mustLatch(t, c, base, "l")
			if err := l.Start(); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			pending := make(chan error, 1)
			if leading {
				if err := l.Await(ctx); err != nil {
					t.Fatal(err)
				}
			} else {
				waitForChildren(t, c, base, 2)
				ended := make(chan struct{})
				go func() {
					pending <- l.Await(ctx)
					close(ended)
				}()
				if !testutil.WaitBlocked(t, "recipes.(*LeaderLatch).Await", ended) {
					t.Fatalf("Await returned before the client closed: %v", <-pending)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if !leading {
				testutil.ErrorIs(t, testutil.Recv(t, pending, "the Await under way"), framework.ErrClosed)
			}
			testutil.ErrorIs(t, l.Await(ctx), framework.ErrClosed)
			if l.HasLeadership() {
				t.Fatal("leads with its client closed")
			}
		})
	}
}

// Close never waits for the leadership function (the package's rule: Close
// does not wait for user code, which may be the caller): while the function
// runs, Close cancels its context (the cause wraps framework.ErrClosed) and
// returns; HasLeadership is false from then on; leadership is given up
// (the node deleted) only when the function returns, which Closed tells.
func TestLeaderSelectorCloseNeverWaitsForTheFunction(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	leading, told, proceed := make(chan struct{}), make(chan error, 1), make(chan struct{})
	s, err := recipes.NewLeaderSelector(newClient(t, ""), base, func(lctx context.Context) error {
		close(leading)
		<-lctx.Done()
		told <- context.Cause(lctx)
		<-proceed
		return nil
	})
	testutil.Must(t, err)
	testutil.Must(t, s.Start())
	testutil.Recv(t, leading, "leadership")
	if !s.HasLeadership() {
		t.Fatal("no leadership while the function runs")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	testutil.Must(t, testutil.Recv(t, closed, "Close, while the function runs"))
	testutil.ErrorIs(t, testutil.Recv(t, told, "the function told of the close"), framework.ErrClosed)
	if s.HasLeadership() {
		t.Fatal("HasLeadership after Close")
	}
	if kids := children(t, base); len(kids) != 1 {
		t.Fatalf("nodes while the function still runs: %v, want its node kept until it returns", kids)
	}
	select {
	case <-s.Closed():
		t.Fatal("Closed is closed while the function still runs")
	default:
	}
	close(proceed)
	testutil.Recv(t, s.Closed(), "Closed, once the function returned")
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes left once Closed: %v", kids)
	}
}

// A leadership function that hands Close to a goroutine and waits for it
// (errgroup style) does not deadlock: Close returns, then the function,
// and leadership is given up.
func TestLeaderSelectorClosedByAGoroutineItsFunctionWaitsFor(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	var s *recipes.LeaderSelector
	s, err := recipes.NewLeaderSelector(newClient(t, ""), base, func(context.Context) error {
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Close()
		}()
		wg.Wait()
		return nil
	})
	testutil.Must(t, err)
	testutil.Must(t, s.Start())
	testutil.Recv(t, s.Closed(), "the selector closed by its function's goroutine")
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes left once Closed: %v", kids)
	}
}

// A selector closed while it only queues (another candidate leads) runs no
// user code: Close waits until its node is deleted.
func TestLeaderSelectorCloseWhileQueuedWaitsForItsNode(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	leading, done := make(chan struct{}), make(chan struct{})
	leader, err := recipes.NewLeaderSelector(newClient(t, ""), base, func(context.Context) error {
		close(leading)
		<-done
		return nil
	})
	testutil.Must(t, err)
	testutil.Must(t, leader.Start())
	defer leader.Close()
	defer close(done)
	testutil.Recv(t, leading, "the leader's leadership")
	s, err := recipes.NewLeaderSelector(newClient(t, ""), base, func(context.Context) error {
		t.Error("the queued selector led")
		return nil
	})
	testutil.Must(t, err)
	testutil.Must(t, s.Start())
	testutil.WaitChildren(t, rawConn(t), base, 2)
	testutil.Must(t, s.Close())
	if kids := children(t, base); len(kids) != 1 {
		t.Fatalf("nodes once Close returned: %v, want the leader's alone", kids)
	}
	assertClosed(t, s.Closed(), "Closed once Close returned")
}

// Close while the selector's create is in flight (its reply held up on the
// way back) still returns only once the node is gone: the create, cut short
// by Close, may have made it, and the client's clean-up of it
// (framework.CleanupDone) is waited for, as the delete of a node known is.
// Before, Close returned at once and left the node to the background: the
// race behind TestLeaderSelectorCloseWhileQueuedWaitsForItsNode's rare
// failures.
func TestLeaderSelectorCloseWhileItsCreateIsInFlight(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	s, err := recipes.NewLeaderSelector(c, base, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	testutil.Must(t, err)
	proxy.SetDelays(0, 300*time.Millisecond) // the create's reply, and all after it, come late
	testutil.Must(t, s.Start())
	testutil.WaitChildren(t, rawConn(t), base, 1) // made on the server; its reply still on its way
	testutil.Must(t, s.Close())
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes once Close returned: %v, want none", kids)
	}
	proxy.SetDelays(0, 0)
}

// A selector whose function ignores its context (the caller's bug) is told
// of a loss at SUSPENDED, and does not return: its node still goes, once
// the servers could have expired the session, so another candidate leads.
func TestLeaderSelectorNodeGoesWhenTheFunctionDoesNotReturn(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(time.Second))
	leading, release := make(chan struct{}), make(chan struct{})
	stuck, err := recipes.NewLeaderSelector(c, base, func(context.Context) error {
		close(leading)
		<-release // ignores its context
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := stuck.Start(); err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	defer close(release)
	testutil.Recv(t, leading, "the first candidate's leadership")
	next := mustLatch(t, newClient(t, ""), base, "next")
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	proxy.DropConnections()
	if err := next.Await(ctx); err != nil {
		t.Fatalf("the next candidate never led: %v", err)
	}
	if stuck.HasLeadership() {
		t.Fatal("the stuck selector still says it leads")
	}
}
