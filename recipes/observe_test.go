package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// nextView receives the next view, or fails the test when none comes.
func nextView(ctx context.Context, t *testing.T, views <-chan recipes.LeaderView, what string) recipes.LeaderView {
	t.Helper()
	select {
	case v, ok := <-views:
		if !ok {
			t.Fatalf("%s: the channel closed", what)
		}
		return v
	case <-ctx.Done():
		t.Fatalf("%s: no view came", what)
	}
	return recipes.LeaderView{}
}

// wantView fails the test unless v shows the leader id (none: ""), at node,
// fresh or stale as stale says.
func wantView(t *testing.T, v recipes.LeaderView, id, node string, stale bool, what string) {
	t.Helper()
	leads := id != "" || node != ""
	if v.Leader != (recipes.Participant{ID: id, IsLeader: leads}) || v.Node != node || v.Stale != stale || v.Err != nil || v.At.IsZero() {
		t.Fatalf("%s: view %+v; want leader %q at %q, stale %v, no error, a time", what, v, id, node, stale)
	}
}

// serverWatches returns how many watches the server holds, of every
// session (mntr's zk_watch_count: data and children watches alike).
func serverWatches(t testing.TB) int {
	t.Helper()
	m, err := server.Mntr()
	testutil.Must(t, err)
	n, err := strconv.Atoi(m["zk_watch_count"])
	testutil.Must(t, err)
	return n
}

// An observer that does not stand in the election sees each of its
// leaders in turn (none, a, b), and not the candidates that queue behind
// the leader; marks its view stale while its own connection is cut off
// (the same session: SUSPENDED), and, once back, shows the leader who
// came meanwhile, after two changes it could not see; after its session
// expired (LOST), it follows the election again from the new session. When
// its context ends the channel closes, its goroutine ends, and its watch
// goes once its node changes.
func TestObserveLeaderLatch(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx, base := testutil.Begin(t, server.Addr())
	// A persistent election node: a container would be reaped once empty,
	// firing the observer's watch on it before the test counts it.
	if _, err := rawConn(t).Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	proxy := zktest.NewProxy(t, server.Addr())
	obs := newClient(t, proxy.Addr(), framework.WithSessionTimeout(10*time.Second))
	octx, stop := context.WithCancel(ctx)
	defer stop()
	views, err := recipes.ObserveLeaderLatch(octx, obs, base)
	testutil.Must(t, err)
	wantView(t, nextView(ctx, t, views, "the first view"), "", "", false, "an empty election")

	a := mustLatch(t, newClient(t, ""), base, "a")
	b := mustLatch(t, newClient(t, ""), base, "b")
	testutil.Must(t, a.Start())
	defer a.Close()
	wantView(t, nextView(ctx, t, views, "a leads"), "a", a.OurPath(), false, "a leads")
	testutil.Must(t, b.Start()) // queues behind a: no new view
	waitForChildren(t, obs, base, 2)
	testutil.Must(t, a.Close())
	wantView(t, nextView(ctx, t, views, "b leads"), "b", b.OurPath(), false, "after a closed, the next view")

	// Cut off, in the same session: stale, then the leader who came meanwhile.
	was := b.OurPath()
	release := proxy.HoldSession(obs.SessionID())
	v := nextView(ctx, t, views, "stale")
	wantView(t, v, "b", was, true, "the observer cut off")
	c := mustLatch(t, newClient(t, ""), base, "c")
	testutil.Must(t, c.Start())
	defer c.Close()
	testutil.Must(t, b.Close())
	testutil.Must(t, c.Await(ctx))
	session := obs.SessionID()
	release()
	fresh := nextView(ctx, t, views, "back")
	wantView(t, fresh, "c", c.OurPath(), false, "back in the same session")
	if obs.SessionID() != session {
		t.Fatalf("the observer's session changed (%x, was %x): the test wants it kept", obs.SessionID(), session)
	}
	if !fresh.At.After(v.At) {
		t.Fatalf("the fresh view's At %v is not after the stale one's %v", fresh.At, v.At)
	}

	// Its session expired: the watches of the old one are gone; it follows
	// the election from the new one.
	testutil.Must(t, proxy.ExpireSession(obs.SessionID()))
	for v = nextView(ctx, t, views, "after the expiry"); v.Stale; v = nextView(ctx, t, views, "after the expiry") {
	}
	wantView(t, v, "c", c.OurPath(), false, "in the new session")
	testutil.Must(t, c.Close())
	wantView(t, nextView(ctx, t, views, "none leads"), "", "", false, "after c closed, in the new session")

	stop()
	for range views { // a view told before the stop may come first
	}
	// Every candidate has closed: the server's one watch is the
	// observer's.
	if n := serverWatches(t); n != 1 {
		t.Fatalf("the server holds %d watches after the observer stopped, want the observer's one on the empty election", n)
	}
	d := mustLatch(t, newClient(t, ""), base, "d")
	testutil.Must(t, d.Start()) // its node fires the children watch
	defer d.Close()
	testutil.Until(t, "the observer's watch gone", func() (bool, string) {
		n := serverWatches(t)
		return n == 0, fmt.Sprint(n, " left")
	})
}

// An observer of a selector's election sees a new term of the same
// candidate as a new view (another node), and an observer whose client
// closes gets a last view saying so, then a closed channel. Bad arguments
// are refused at once.
func TestObserveLeaderSelector(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx, base := testutil.Begin(t, server.Addr())
	obs := newClient(t, "")
	views, err := recipes.ObserveLeaderSelector(ctx, obs, base)
	testutil.Must(t, err)
	wantView(t, nextView(ctx, t, views, "the first view"), "", "", false, "an empty election")

	terms := make(chan string, 2)
	s, err := recipes.NewLeaderSelector(newClient(t, ""), base, func(ctx context.Context) error {
		terms <- "term"
		<-ctx.Done()
		return nil
	}, recipes.WithParticipantID("s"), recipes.WithAutoRequeue())
	testutil.Must(t, err)
	testutil.Must(t, s.Start())
	defer s.Close()
	testutil.Recv(t, terms, "the first term")
	first := nextView(ctx, t, views, "s leads")
	if first.Leader.ID != "s" || first.Stale || first.Node == "" {
		t.Fatalf("first term: view %+v", first)
	}
	s.InterruptLeadership() // its function returns; it queues again and leads again
	testutil.Recv(t, terms, "the second term")
	second := nextView(ctx, t, views, "s leads again")
	for second.Node == "" { // the moment between the terms, if the observer saw it
		second = nextView(ctx, t, views, "s leads again")
	}
	if second.Leader.ID != "s" || second.Stale || second.Node == first.Node {
		t.Fatalf("second term: view %+v, first %+v: want the same id at another node", second, first)
	}

	testutil.Must(t, obs.Close())
	last := nextView(ctx, t, views, "the client closed")
	for last.Err == nil {
		last = nextView(ctx, t, views, "the client closed")
	}
	if !last.Stale || !errors.Is(last.Err, framework.ErrClosed) {
		t.Fatalf("the last view %+v: want stale, with an error wrapping ErrClosed", last)
	}
	if _, ok := <-views; ok {
		t.Fatal("a view after the last")
	}

	testutil.ErrorIs(t, errOf(recipes.ObserveLeaderSelector(ctx, obs, base)), framework.ErrClosed)
	var nilCtx context.Context
	live := newClient(t, "")
	testutil.ErrorIs(t, errOf(recipes.ObserveLeaderLatch(nilCtx, live, base)), framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, errOf(recipes.ObserveLeaderLatch(ctx, nil, base)), framework.ErrInvalidArgument, "nil client")
	testutil.ErrorIs(t, errOf(recipes.ObserveLeaderLatch(ctx, live, "rel")), zk.ErrInvalidPath)
}

// An observer whose client has not connected yet says so at once (a Stale
// view of no leader, read never), and gives the leader once it connects.
func TestObserveBeforeConnected(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx, base := testutil.Begin(t, server.Addr())
	a := mustLatch(t, newClient(t, ""), base, "a")
	testutil.Must(t, a.Start())
	defer a.Close()
	testutil.Must(t, a.Await(ctx))
	proxy := zktest.NewProxy(t, server.Addr())
	proxy.BlackHole()
	obs, err := framework.New(proxy.Addr(), retry.NewNTimes(0, 0))
	testutil.Must(t, err)
	defer obs.Close()
	views, err := recipes.ObserveLeaderLatch(ctx, obs, base)
	testutil.Must(t, err)
	if v := nextView(ctx, t, views, "before a connection"); v != (recipes.LeaderView{Stale: true}) {
		t.Fatalf("before a connection: view %+v, want a stale view of no leader, never read", v)
	}
	proxy.Restore()
	wantView(t, nextView(ctx, t, views, "connected"), "a", a.OurPath(), false, "once connected")
}
