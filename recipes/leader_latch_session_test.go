package recipes_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// leadershipWatch checks, each time a latch of a pair starts to lead (its
// IsLeader listener), that the other does not lead then: at most one
// leader at every moment, since a latch's leadership only begins there.
type leadershipWatch struct {
	mu     sync.Mutex
	broken []string
	gained chan string // the id of each latch that starts to lead
}

func newLeadershipWatch() *leadershipWatch {
	return &leadershipWatch{gained: make(chan string, 64)}
}

// watch makes w hear l start to lead, and check rival then.
func (w *leadershipWatch) watch(l, rival *recipes.LeaderLatch) {
	l.AddListener(recipes.LeaderLatchListenerFuncs{OnIsLeader: func() {
		if rival.HasLeadership() {
			w.mu.Lock()
			w.broken = append(w.broken, fmt.Sprintf("%s started to lead while %s led (its node %s)", l.ID(), rival.ID(), rival.OurPath()))
			w.mu.Unlock()
		}
		select { // never blocks the latch; the buffer outlasts the test's few terms
		case w.gained <- l.ID():
		default:
		}
	}})
}

// check fails the test if two latches ever led at once.
func (w *leadershipWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, b := range w.broken {
		t.Error(b)
	}
}

// A latch whose client gives its session up (LOST: no server answered
// before the session could expire) and goes on in a new one must not lead
// with the node it made in the old session, which the servers will delete
// when they end that session: a rival on another client, queued behind
// that node, would then lead too. Nor may it delete that node itself: the
// node goes with its session, not before (its leader was told at SUSPENDED
// it keeps that margin). So the latch queues again with a node of its new
// session, the rival leads only once the old session has ended, and at no
// moment do both lead.
//
// The client gives the session up after a tenth of its 10 s timeout
// (WithSimulatedSessionExpirationPercent) while the proxy holds the session
// away from the server (HoldSession), so the old session and its node stay
// on the server until the test ends it (ExpireSession), well within the
// nine seconds left.
func TestLeaderLatchAcrossASessionChange(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := rawConn(t)
	if _, err := raw.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	path, marker := base+"/latch", base+"/marker"
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), framework.WithListener(rec), framework.WithSessionTimeout(10*time.Second),
		framework.WithSimulatedSessionExpirationPercent(10))
	other := newClient(t, "")
	a, b := mustLatch(t, c, path, "a"), mustLatch(t, other, path, "b")
	w := newLeadershipWatch()
	w.watch(a, b)
	w.watch(b, a)
	t.Cleanup(func() { w.check(t) }) // once the latches are closed
	startInOrder(t, other, path, a, b)
	if err := a.Await(ctx); err != nil {
		t.Fatal(err)
	}
	if id := testutil.Recv(t, w.gained, "the first term"); id != "a" {
		t.Fatalf("%s led first, want a", id)
	}
	old, node := c.SessionID(), a.OurPath()
	// Another node of the old session: gone with it, and only with it.
	if _, err := c.Create(ctx, marker, nil, framework.WithMode(framework.Ephemeral)); err != nil {
		t.Fatal(err)
	}
	_, _, nodeGone, err := raw.ExistsW(node)
	if err != nil {
		t.Fatal(err)
	}

	release := proxy.HoldSession(old)
	defer release()
	rec.WaitFor(ctx, t, state.Suspended)
	rec.WaitFor(ctx, t, state.Lost)
	rec.WaitFor(ctx, t, state.Reconnected)
	if c.SessionID() == old {
		t.Fatalf("still in session %x: the test wants the client in a new one", old)
	}

	// The latch looks again in the new session: it leads again (with the
	// old session's node: wrong) or queues with a new node (right).
	looked := false
	for !looked {
		kids, _, changed, err := raw.ChildrenW(path)
		if err != nil {
			t.Fatal(err)
		}
		looked = len(kids) == 3 // the old node, b's, and a's new one
		if looked {
			break
		}
		select {
		case <-changed:
		case id := <-w.gained: // a with its old-session node, or b ahead of that node
			t.Fatalf("%s began to lead while %s, a node of session %x, stood first", id, node, old)
		case <-nodeGone:
			if ok, _, _ := raw.Exists(marker); ok {
				t.Fatalf("%s was deleted while its session %x lived: it is left to that session's end", node, old)
			}
			t.Fatalf("the servers ended session %x before the latch looked again: the test needs a longer timeout", old)
		case <-ctx.Done():
			t.Fatalf("the latch did not look again in its new session: %v", ctx.Err())
		}
	}
	if a.HasLeadership() {
		t.Errorf("a leads again with %s, a node of session %x, from session %x", node, old, c.SessionID())
	}
	if ok, st, err := raw.Exists(node); err != nil || !ok || st.EphemeralOwner != old {
		t.Fatalf("%s (there %v, %v) was to stay until session %x ended", node, ok, err, old)
	}

	if err := proxy.ExpireSession(old); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, nodeGone, "the old node's deletion")
	if err := b.Await(ctx); err != nil {
		t.Fatal(err)
	}
	if a.HasLeadership() || !b.HasLeadership() {
		t.Fatalf("once the old session ended: a leads %v, b leads %v; want b alone", a.HasLeadership(), b.HasLeadership())
	}
	if id := testutil.Recv(t, w.gained, "b's term"); id != "b" {
		t.Fatalf("after a's first term, %s began to lead; want b alone", id)
	}
	select {
	case id := <-w.gained:
		t.Fatalf("after b's term, %s began to lead too", id)
	default:
	}
	waitForChildren(t, other, path, 2) // b's node and a's new one
	if ours := a.OurPath(); ours == node || ours == "" {
		t.Fatalf("a's node %q, want a new one (the old was %s)", ours, node)
	} else if ok, st, err := raw.Exists(ours); err != nil || !ok || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("a's node %s: there %v (%v, %+v); want it in session %x", ours, ok, err, st, c.SessionID())
	}
}
