package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

var mutexNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-lock-[0-9]{10}$`)

// 8 handles in 3 clients, 50 acquisitions each: never two holders at once,
// every acquisition released, and the lock granted in queue (creation) order.
func TestMutexMutualExclusionAndFIFO(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	clients := []*framework.Client{newClient(t, ""), newClient(t, ""), newClient(t, "")}

	const handles, rounds = 8, 50
	var inside atomic.Int32
	var mu sync.Mutex
	var tokens []int64
	hs := make([]*recipes.Handle, handles)
	for i := range hs {
		hs[i] = mustMutex(t, clients[i%len(clients)], base).NewHandle()
	}
	runAll(t, handles, func(i int) error {
		h := hs[i]
		return lockRounds(ctx, h, rounds, func(int) error {
			defer inside.Add(-1)
			if n := inside.Add(1); n != 1 {
				return fmt.Errorf("%d holders at once", n)
			}
			// The token is our node's czxid, however the grant came:
			// from the first listing, a hand-off or a read of our node.
			tok, err := h.FencingToken(ctx)
			if err != nil {
				return err
			}
			ok, stat, err := clients[0].Exists(ctx, h.LockPath())
			if err != nil || !ok || stat.Czxid != tok {
				return fmt.Errorf("token %d, node %s czxid %v (%v)", tok, h.LockPath(), stat, err)
			}
			if again, err := h.FencingToken(ctx); again != tok || err != nil {
				return fmt.Errorf("token asked again: %d, %v; first %d", again, err, tok)
			}
			mu.Lock()
			tokens = append(tokens, tok)
			mu.Unlock()
			return nil
		})
	})
	if len(tokens) != handles*rounds {
		t.Fatalf("%d acquisitions, want %d", len(tokens), handles*rounds)
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			t.Fatalf("grant %d has token %d after %d: not in queue order", i, tokens[i], tokens[i-1])
		}
	}
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
}

func TestMutexReentrancyAndTree(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "", framework.WithDefaultData([]byte("127.0.0.1")))
	m := mustMutex(t, c, base)
	h := m.NewHandle()
	for i := 0; i < 3; i++ {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	kids := children(t, base)
	if len(kids) != 1 || !mutexNode.MatchString(kids[0]) {
		t.Fatalf("tree after 3 acquisitions = %v, want one Curator mutex node", kids)
	}
	raw := testutil.Connect(t, server.Addr())
	data, stat, err := raw.Get(base + "/" + kids[0])
	if err != nil || string(data) != "127.0.0.1" || stat.EphemeralOwner != c.SessionID() {
		t.Fatalf("node data %q owner %x (%v), want the default data and our session %x", data, stat.EphemeralOwner, err, c.SessionID())
	}
	if tok := tokenOf(t, h); h.LockPath() != base+"/"+kids[0] || tok != stat.Czxid {
		t.Fatalf("LockPath %q token %d; node %s czxid %d", h.LockPath(), tok, kids[0], stat.Czxid)
	}
	if !m.IsAcquiredInThisProcess() || !h.IsHeld() || m.NewHandle().IsHeld() {
		t.Fatal("introspection wrong while held")
	}
	for i := 0; i < 3; i++ {
		if len(children(t, base)) != 1 {
			t.Fatalf("node gone after %d of 3 releases", i)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes after the last release: %v", kids)
	}
	if err := h.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("fourth release = %v, want ErrNotHeld", err)
	}
	if err := m.NewHandle().Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("release by another handle = %v, want ErrNotHeld", err)
	}
	if m.IsAcquiredInThisProcess() || h.IsHeld() {
		t.Fatal("introspection wrong after release")
	}
	assertClosed(t, h.Done(), "Lost of an unheld handle")
}

// A waiter whose deadline passes or whose context is cancelled leaves no
// node; a try-acquire on a held lock returns at once and leaves none.
func TestMutexDeadlineCancelAndTry(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2 := newClient(t, ""), newClient(t, "")
	holder := mustMutex(t, c1, base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	m2 := mustMutex(t, c2, base)

	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := m2.NewHandle().Acquire(dctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline = %v", err)
	}
	waitForChildren(t, c1, base, 1) // a deadline that came during the create: the node goes in the background
	assertOnlyHolder(t, base, holder)

	cctx, cancel := context.WithCancel(ctx)
	waiting := make(chan error)
	go func() { waiting <- m2.NewHandle().Acquire(cctx) }()
	waitForChildren(t, c1, base, 2) // the waiter has queued
	cancel()
	if err := testutil.Recv(t, waiting, "the cancelled Acquire"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Acquire = %v", err)
	}
	// The cancel may come while the create's reply is still on its way (the
	// node is listed before its creator hears of it): then Acquire returns at
	// once and the protected create finds and deletes the node in the
	// background.
	waitForChildren(t, c1, base, 1)
	assertOnlyHolder(t, base, holder)

	if err := m2.NewHandle().TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire on a held lock = %v, want ErrLocked", err)
	}
	assertOnlyHolder(t, base, holder)

	cancelled, cancelNow := context.WithCancel(ctx)
	cancelNow()
	if err := m2.NewHandle().Acquire(cancelled); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context = %v", err)
	}
	assertOnlyHolder(t, base, holder)

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	h2 := m2.NewHandle()
	if err := h2.TryAcquire(ctx); err != nil {
		t.Fatalf("TryAcquire on a free lock = %v", err)
	}
	if err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func assertOnlyHolder(t *testing.T, base string, h *recipes.Handle) {
	t.Helper()
	kids := children(t, base)
	if len(kids) != 1 || base+"/"+kids[0] != h.LockPath() {
		t.Fatalf("children %v, want only the holder's %s", kids, h.LockPath())
	}
}

// waitForChildren waits, with a child watch (or, while path is missing,
// an exists watch), until path has n children.
func waitForChildren(t *testing.T, c *framework.Client, path string, n int) {
	t.Helper()
	ctx := testutil.Context(t)
	for {
		kids, _, w, err := c.ChildrenW(ctx, path)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			if ok, _, w, err = c.ExistsW(ctx, path); err == nil && ok {
				continue
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == n {
			return
		}
		select {
		case <-w:
		case <-ctx.Done():
			t.Fatalf("%s has %d children, want %d", path, len(kids), n)
		}
	}
}

// A holder cut off from the server is told its lock is lost before anyone
// else can hold it.
func TestMutexLostBeforeAnotherHolds(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	holderClient := newClient(t, proxy.Addr(), framework.WithSessionTimeout(2*time.Second))
	other := newClient(t, "")
	holder := mustMutex(t, holderClient, base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	holderToken := tokenOf(t, holder)

	var order eventLog
	lostSeen := make(chan struct{})
	go func() {
		select {
		case <-holder.Done():
			order.note("holder told lost")
			close(lostSeen)
		case <-ctx.Done(): // the test has failed, or is failing
		}
	}()
	contender := mustMutex(t, other, base).NewHandle()
	acquired := make(chan error)
	go func() {
		err := contender.Acquire(ctx)
		order.note("other holds")
		acquired <- err
	}()
	waitForChildren(t, other, base, 2)
	proxy.BlackHole()
	if err := testutil.Recv(t, acquired, "the contender's Acquire"); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, lostSeen, "the holder told of its loss")
	if got := order.String(); got != "[holder told lost other holds]" {
		t.Fatalf("order of events = %s", got)
	}
	if tok := tokenOf(t, contender); tok <= holderToken {
		t.Fatalf("new holder's token %d not above the old %d", tok, holderToken)
	}
	// The holder that was told has no token to write with any more.
	if _, err := holder.FencingToken(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("token of a holder told of loss: %v, want ErrLockLost", err)
	}
	proxy.Restore()
	// Its node is gone with its session; the release says the lock was lost.
	if err := holder.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("release of a lost lock = %v, want ErrLockLost", err)
	}
	if err := holder.Err(); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("Err after the release of a lost lock = %v, want ErrLockLost", err)
	}
	if err := contender.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Fencing tokens rise over 100 acquisitions, one of them after the
// container parent was reaped and re-created (sequence numbers restart).
func TestMutexFencingTokensRiseAcrossReapedParent(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	c := newClient(t, "")
	h := mustMutex(t, c, base).NewHandle()
	var last int64
	var reapedOnce bool
	for i := 0; i < 100; i++ {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		tok := tokenOf(t, h)
		if tok <= last {
			t.Fatalf("acquisition %d: token %d not above %d", i, tok, last)
		}
		last = tok
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if i == 50 {
			testutil.WaitGone(t, raw, base) // the server reaps the empty container
			reapedOnce = true
		}
	}
	if !reapedOnce {
		t.Fatal("the parent was never reaped")
	}
}

func TestMutexRevocation(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2 := newClient(t, ""), newClient(t, "")
	h := mustMutex(t, c1, base).NewHandle()
	revoked := make(chan struct{})
	h.MakeRevocable(func() {
		if err := h.Release(context.Background()); err != nil {
			t.Error(err)
		}
		close(revoked)
	})
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	raw := testutil.Connect(t, server.Addr())
	if data, _, err := raw.Get(h.LockPath()); err != nil || len(data) != 0 {
		t.Fatalf("revocable node data = %q (%v), want empty", data, err)
	}
	m2 := mustMutex(t, c2, base)
	parts, err := m2.ParticipantNodes(ctx)
	if err != nil || len(parts) != 1 || parts[0] != h.LockPath() {
		t.Fatalf("ParticipantNodes = %v, %v", parts, err)
	}
	if err := recipes.Revoke(ctx, c2, parts[0]); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, revoked, "the revocation listener")
	h2 := m2.NewHandle()
	if err := h2.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := recipes.Revoke(ctx, c2, parts[0]); err != nil {
		t.Fatalf("Revoke of a gone node = %v", err)
	}
	// revocability held for one acquisition only
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if data, _, _ := raw.Get(h.LockPath()); len(data) == 0 {
		t.Fatal("second acquisition is still revocable")
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A waiter whose session the server expires queues again with a new node
// and acquires; a waiter whose client closes gets an error and leaves nothing.
func TestMutexWaiterSessionExpiryAndClose(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	holderClient := newClient(t, "")
	rec := testutil.NewStateRecorder()
	waiterClient := newClient(t, proxy.Addr(), framework.WithListener(rec))
	holder := mustMutex(t, holderClient, base).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := mustMutex(t, waiterClient, base).NewHandle()
	result := make(chan error)
	go func() { result <- waiter.Acquire(ctx) }()
	waitForChildren(t, holderClient, base, 2)
	first := children(t, base)

	if err := proxy.ExpireSession(waiterClient.SessionID()); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(ctx, t, state.Lost)
	rec.WaitFor(ctx, t, state.Reconnected)
	for { // until the waiter has queued again (and has not given up)
		kids, _, w, err := holderClient.ChildrenW(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 2 {
			break
		}
		select {
		case <-w:
		case err := <-result:
			t.Fatalf("waiter's Acquire returned before it queued again: %v", err)
		case <-ctx.Done():
			t.Fatal("the waiter did not queue again")
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, result, "the waiter's Acquire"); err != nil {
		t.Fatalf("waiter after its session expired: %v", err)
	}
	for _, n := range first {
		if base+"/"+n == waiter.LockPath() {
			t.Fatal("waiter holds with its old session's node")
		}
	}
	if err := waiter.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// client closed while waiting
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	closing := newClient(t, "")
	w2 := mustMutex(t, closing, base).NewHandle()
	go func() { result <- w2.Acquire(ctx) }()
	waitForChildren(t, holderClient, base, 2)
	closing.Close()
	if err := testutil.Recv(t, result, "the Acquire of a closing client"); !errors.Is(err, framework.ErrClosed) && !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("Acquire when the client closed = %v", err)
	}
	assertOnlyHolder(t, base, holder)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestForeignChildrenOrder(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	if _, err := c.Create(ctx, base+"/zzz-foreign", nil, framework.CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}
	h := mustMutex(t, c, base).NewHandle()
	if err := h.TryAcquire(ctx); err != nil {
		t.Fatalf("zzz-foreign blocked the lock: %v", err)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, base+"/0-foreign", nil); err != nil {
		t.Fatal(err)
	}
	if err := h.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("0-foreign did not block the lock, as it does in Curator: %v", err)
	}
	if kids := children(t, base); len(kids) != 2 {
		t.Fatalf("children %v: the failed try left a node", kids)
	}
}

func TestWithLockCancelsOnLoss(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	h := mustMutex(t, c, base).NewHandle()
	err := recipes.WithLock(ctx, h, func(ctx context.Context) error {
		proxy.DropConnections() // SUSPENDED: the standard policy stops trusting the lock
		<-ctx.Done()
		return context.Cause(ctx)
	})
	if !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("WithLock = %v, want ErrLockLost", err)
	}
	if h.IsHeld() {
		t.Fatal("WithLock did not release")
	}
	ran := false
	if err := recipes.WithLock(ctx, h, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("WithLock = %v, ran %v", err, ran)
	}
}

func TestMutexBadArguments(t *testing.T) {
	testutil.CheckLeaks(t)
	c := newClient(t, "")
	for _, p := range []string{"", "rel", "/a/", "/a//b", "/a/../b", "/a\x00"} {
		if _, err := recipes.NewInterProcessMutex(c, p); !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("NewInterProcessMutex(%q) = %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := recipes.NewInterProcessMutex(nil, "/a"); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Errorf("nil client: %v", err)
	}
}
