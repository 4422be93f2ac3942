package recipes_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// closeBound is how long user code in these tests waits for Close to
// return before it says that Close waited for it: a Close that waits for
// no user code returns long before.
const closeBound = 10 * time.Second

// waitedFor is what user code that began after (or while) Close began
// says once Close has returned, or once closeBound has passed without
// that: then Close waited for it.
func waitedFor(returned <-chan struct{}) string {
	select {
	case <-returned:
		return "it began after Close began; Close did not wait for it"
	case <-time.After(closeBound):
		return "it began after Close began, and Close waited for it"
	}
}

// stallCore is a log sink that logs nothing and whose Enabled, asked (once
// armed) on a goroutine where callee was called by caller, parks that
// goroutine until released, the first time: a recipe's goroutine held
// still at a chosen point between its calls of user code, for Close to
// come there. (The level check is the one thing of the user's a recipe's
// goroutine calls there.)
type stallCore struct {
	zapcore.Core
	callee, caller string
	armed          atomic.Bool
	once           sync.Once
	at, release    chan struct{}
}

func newStallCore(callee, caller string) *stallCore {
	return &stallCore{Core: zapcore.NewNopCore(), callee: callee, caller: caller,
		at: make(chan struct{}), release: make(chan struct{})}
}

func (s *stallCore) With([]zapcore.Field) zapcore.Core { return s }

func (s *stallCore) Enabled(zapcore.Level) bool {
	if s.armed.Load() && calledFrom(s.callee, s.caller) {
		first := false
		s.once.Do(func() { first = true; close(s.at) })
		if first {
			<-s.release
		}
	}
	return false
}

// calledFrom reports whether the calling goroutine is in callee, called
// by caller (functions as stacks name them: "recipes.(*T).f").
func calledFrom(callee, caller string) bool {
	buf := make([]byte, 64<<10)
	stack := string(buf[:runtime.Stack(buf, false)])
	i := strings.Index(stack, callee+"(")
	if i < 0 {
		return false
	}
	lines := strings.SplitN(stack[i:], "\n", 4) // callee, its file, its caller
	return len(lines) > 2 && strings.Contains(lines[2], caller+"(")
}

// noLateCall fails the test if user code (what) said it was called, after
// Close began.
func noLateCall(t *testing.T, late <-chan string, what string) {
	t.Helper()
	select {
	case why := <-late:
		t.Fatalf("%s: %s", what, why)
	default:
	}
}

// closeAtTheStall waits for the recipe's goroutine to stall, closes the
// recipe on a goroutine of its own (closing returned once Close returns),
// lets the goroutine go on once Close has shut the gate and waits for it,
// and waits for Close to return.
func closeAtTheStall(t *testing.T, stall *stallCore, closeIt func() error, returned chan struct{}) {
	t.Helper()
	testutil.Recv(t, stall.at, "the recipe's goroutine held between its calls of user code")
	go func() {
		_ = closeIt()
		close(returned)
	}()
	testutil.WaitBlocked(t, "lifecycle.(*Runner).Close", returned) // recipes.(*lifecycle).close
	close(stall.release)
	testutil.Recv(t, returned, "Close")
}

// No user code begins once Close has begun: a latch's IsLeader, a
// selector's function, a count's listener, due just after the point where
// Close came (the recipe's goroutine held there, in the level check of a
// log line or event, while Close shut the gate and began to wait for the
// goroutine). Such a call used to run, and Close to wait for it.
func TestCloseRefusesUserCodeBegunAfterIt(t *testing.T) {
	t.Run("latch", func(t *testing.T) {
		_, base := testutil.Begin(t, server.Addr())
		stall := newStallCore("recipes.emit", "recipes.(*LeaderLatch).beginTerm")
		l := mustLatch(t, newClient(t, "", framework.WithLogger(zap.New(stall))), base, "a")
		late, returned := make(chan string, 1), make(chan struct{})
		l.AddListener(recipes.LeaderLatchListenerFuncs{OnIsLeader: func() { late <- waitedFor(returned) }})
		stall.armed.Store(true)
		testutil.Must(t, l.Start())
		closeAtTheStall(t, stall, l.Close, returned)
		noLateCall(t, late, "IsLeader")
		if l.HasLeadership() {
			t.Fatal("HasLeadership after Close")
		}
	})
	t.Run("selector", func(t *testing.T) {
		_, base := testutil.Begin(t, server.Addr())
		stall := newStallCore("recipes.emit", "recipes.(*LeaderSelector).term")
		late, returned := make(chan string, 1), make(chan struct{})
		s, err := recipes.NewLeaderSelector(newClient(t, "", framework.WithLogger(zap.New(stall))), base,
			func(context.Context) error { late <- waitedFor(returned); return nil })
		testutil.Must(t, err)
		stall.armed.Store(true)
		testutil.Must(t, s.Start())
		closeAtTheStall(t, stall, s.Close, returned)
		noLateCall(t, late, "the leadership function")
		testutil.Recv(t, s.Closed(), "Closed")
	})
	t.Run("count", func(t *testing.T) {
		ctx, base := testutil.Begin(t, server.Addr())
		stall := newStallCore("zap.(*Logger).Error", "recipes.(*SharedCount).notify")
		c := newClient(t, "", framework.WithLogger(zap.New(stall)))
		count, err := recipes.NewSharedCount(c, base+"/count", 1)
		testutil.Must(t, err)
		late, returned := make(chan string, 1), make(chan struct{})
		count.AddListener(func(int) { panic("a listener's bug, logged at ERROR") })
		count.AddListener(func(int) {
			if stall.armed.Load() {
				late <- waitedFor(returned)
			}
		})
		testutil.Must(t, count.Start(ctx))
		t.Cleanup(func() { count.Close() })
		stall.armed.Store(true)
		testutil.Must(t, count.SetCount(ctx, 2))
		closeAtTheStall(t, stall, count.Close, returned)
		noLateCall(t, late, "the second listener")
	})
}

// A latch closed in CloseNotifyLeader mode by a goroutine that holds a
// mutex its NotLeader takes: Close returns (it tells NotLeader, and does
// not wait for it), the node is gone, and NotLeader is heard once the
// mutex is let go. Close used to wait for the listener, and so never
// returned while the mutex was held.
func TestCloseNotifyLeaderDoesNotWaitForNotLeader(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	l := mustLatch(t, c, base, "a", recipes.WithCloseMode(recipes.CloseNotifyLeader))
	var mu sync.Mutex
	notLeader := make(chan struct{}, 1)
	l.AddListener(recipes.LeaderLatchListenerFuncs{OnNotLeader: func() {
		mu.Lock()
		defer mu.Unlock()
		notLeader <- struct{}{}
	}})
	testutil.Must(t, l.Start())
	testutil.Must(t, l.Await(ctx))
	mu.Lock()
	returned := make(chan struct{})
	go func() {
		_ = l.Close()
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(closeBound):
		mu.Unlock()
		t.Fatalf("Close in CloseNotifyLeader mode did not return within %v while a mutex NotLeader takes was held", closeBound)
	}
	if l.HasLeadership() {
		t.Error("HasLeadership after Close")
	}
	testutil.WaitGone(t, rawConn(t), base)
	mu.Unlock()
	testutil.Recv(t, notLeader, "NotLeader, once the mutex is let go")
}

// A latch closed from its first listener's IsLeader: once Close returns
// (there) the latch does not lead, and no listener hears IsLeader after it
// (Curator clears the leadership and the listeners at once). Close used to
// leave both to the latch's goroutine: HasLeadership was still true, and
// the second listener was told IsLeader after Close returned.
func TestLatchClosedFromIsLeader(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	l := mustLatch(t, newClient(t, ""), base, "a")
	leads := make(chan bool, 1)
	var second atomic.Int32
	l.AddListener(recipes.LeaderLatchListenerFuncs{OnIsLeader: func() {
		_ = l.Close()
		leads <- l.HasLeadership()
	}})
	l.AddListener(recipes.LeaderLatchListenerFuncs{OnIsLeader: func() { second.Add(1) }})
	testutil.Must(t, l.Start())
	if testutil.Recv(t, leads, "the first listener's Close") {
		t.Error("HasLeadership true once Close, called from IsLeader, returned")
	}
	testutil.WaitGone(t, rawConn(t), base) // the goroutine is past its listeners
	if n := second.Load(); n != 0 {
		t.Errorf("the second listener heard IsLeader %d times after Close returned", n)
	}
}

// A latch in CloseNotifyLeader mode closed from its first listener's
// IsLeader: the first listener, which heard IsLeader, hears NotLeader once
// the latch is over; the second, which never heard IsLeader, hears neither.
// Close used to tell NotLeader to every listener, the second included.
func TestNoNotLeaderWithoutIsLeader(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	l := mustLatch(t, newClient(t, ""), base, "a", recipes.WithCloseMode(recipes.CloseNotifyLeader))
	var firstIs, firstNot, secondIs, secondNot atomic.Int32
	l.AddListener(recipes.LeaderLatchListenerFuncs{
		OnIsLeader:  func() { firstIs.Add(1); _ = l.Close() },
		OnNotLeader: func() { firstNot.Add(1) },
	})
	l.AddListener(recipes.LeaderLatchListenerFuncs{
		OnIsLeader:  func() { secondIs.Add(1) },
		OnNotLeader: func() { secondNot.Add(1) },
	})
	testutil.Must(t, l.Start())
	testutil.Recv(t, l.Closed(), "the latch's end (Closed)")
	if a, b := firstIs.Load(), firstNot.Load(); a != 1 || b != 1 {
		t.Errorf("the first listener heard IsLeader %d times and NotLeader %d times, want 1 and 1", a, b)
	}
	if a, b := secondIs.Load(), secondNot.Load(); a != 0 || b != 0 {
		t.Errorf("the second listener heard IsLeader %d times and NotLeader %d times, want neither", a, b)
	}
}

// A latch closed by another goroutine while its IsLeader listener is still
// running (stuck on something of its own): Close returns at once, and the
// latch's node goes then, so that another candidate leads while the
// listener still runs. The node used to go only once the listener
// returned: the next candidate waited for user code Close did not.
func TestLatchClosedWhileAListenerRunsGivesItsNodeUp(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	l := mustLatch(t, c, base, "a")
	running, release := make(chan struct{}), make(chan struct{})
	l.AddListener(recipes.LeaderLatchListenerFuncs{OnIsLeader: func() {
		close(running)
		<-release
	}})
	next := mustLatch(t, c, base, "b")
	startInOrder(t, c, base, l, next)
	testutil.Recv(t, running, "the first latch's IsLeader")
	returned := make(chan struct{})
	go func() {
		_ = l.Close()
		close(returned)
	}()
	testutil.Recv(t, returned, "Close, while the listener runs")
	actx, cancel := context.WithTimeout(ctx, closeBound)
	defer cancel()
	err := next.Await(actx)
	close(release)
	if err != nil {
		t.Fatalf("another candidate could not lead while the closed latch's listener ran: %v", err)
	}
	testutil.Recv(t, l.Closed(), "the first latch's end (Closed), once its listener returned")
}

// A latch closed while its LeadershipGained is being emitted (its goroutine
// held in the log sink's level check there) still tells that term's
// LeadershipLost: the hook hears both. Close, which ends the term, cannot
// know then whether the gain will be told; it used to tell no loss, and
// the hook's holders' gauge stayed up (a rare failure of
// TestEventsOfEveryRecipe: "event 2 of 2: nothing within 1m0s").
func TestLatchClosedWhileItsGainIsToldTellsItsLoss(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	stall := newStallCore("recipes.emit", "recipes.(*LeaderLatch).beginTerm")
	log := newEventLog()
	l := mustLatch(t, newClient(t, "", framework.WithLogger(zap.New(stall)), framework.WithEventHook(log)), base, "a")
	stall.armed.Store(true)
	testutil.Must(t, l.Start())
	closeAtTheStall(t, stall, l.Close, make(chan struct{}))
	if got, want := kinds(log.next(t, 2)), "leadership-gained latch, leadership-lost latch"; got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
}
