package compat_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// The ensemble loses its quorum for longer than the session timeout, then
// gets it back. No session expires while there is no quorum, so a client
// may come back to its old session. A Go holder is told at SUSPENDED, LOST
// comes from its local timer, and, like a Curator user told that after LOST
// there is nothing to release, it does not release. Its client gave the
// old session up at LOST and closes it as soon as a member answers again,
// and the lock lost at SUSPENDED has its node deleted by the client once
// the servers could have let it go: whichever of the two comes first, the
// node goes by the client's own request (not when the server's own expiry
// comes to it, and not never, as when go-zookeeper resumed the old
// session), and a Java Curator contender waiting for the lock gets it. The
// old session is closed on the servers either way.
//
// The Go client reaches each member through a proxy of its own, so that
// the requests it sends are counted.
func TestQuorumLossEndsTheLostSession(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	ens := zktest.NewEnsemble(t, 3, zktest.WithTickTime(200*time.Millisecond),
		zktest.WithSessionTimeoutRange(400*time.Millisecond, 30*time.Second))
	var proxies []*zktest.Proxy
	var addrs []string
	for _, a := range ens.Addrs() {
		p := zktest.NewProxy(t, a)
		proxies = append(proxies, p)
		addrs = append(addrs, p.Addr())
	}
	rec := testutil.NewStateRecorder()
	const timeout = 4 * time.Second
	gc := newClient(t, strings.Join(addrs, ","), framework.WithSessionTimeout(timeout), framework.WithListener(rec))
	observer := testutil.Connect(t, ens.ConnectString())
	base := testutil.Path(t)
	testutil.CleanupTree(t, ens.ConnectString(), base)

	h := mustMutex(t, gc, base).NewHandle()
	testutil.Must(t, h.Acquire(ctx))
	node, old := h.LockPath(), gc.SessionID()

	p := startPeer(t, "quorum")
	p.client(t, "jc", ens.ConnectString(), "session=20000")
	p.do(t, "-", "mutex", "m", "jc", base)
	javaGot := javaAcquire(p, "j1", "m", 1, "timeout=60000")
	testutil.WaitChildren(t, observer, base, 2)

	// The leader and one follower stop: no quorum. The third stops serving.
	leader, err := ens.Leader()
	testutil.Must(t, err)
	members := ens.Members()
	stopped := []*zktest.Server{members[leader], members[(leader+1)%len(members)]}
	// Both at once; t.Fatal belongs to the test's goroutine, so the errors
	// come back on a channel.
	killed := make(chan error, len(stopped))
	for _, m := range stopped {
		go func() { killed <- m.Kill() }()
	}
	for range stopped {
		testutil.Must(t, testutil.Recv(t, killed, "killing a member"))
	}
	select {
	case <-h.Done():
	case <-ctx.Done():
		t.Fatal("the Go holder was not told")
	}
	rec.WaitFor(ctx, t, state.Lost) // the local timer: the session timeout has passed without quorum
	testutil.ErrorIs(t, h.Err(), recipes.ErrLockLost)

	restarted := make(chan error, len(stopped))
	for _, m := range stopped {
		go func() { restarted <- m.Restart() }()
	}
	for range stopped {
		testutil.Must(t, testutil.Recv(t, restarted, "restarting a member"))
	}
	testutil.Must(t, ens.WaitForQuorum(ctx))
	if !acquired(t, javaGot.must(t)) {
		t.Fatal("the Java contender did not acquire after the quorum came back")
	}
	// A proxy counts a request before it forwards it: one that deleted the
	// node is counted by the time the Java contender holds.
	sent := func(op int32) (n int64) {
		for _, px := range proxies {
			n += px.Requests(op)
		}
		return n
	}
	if sent(zktest.OpCloseSession)+sent(zktest.OpDelete) == 0 {
		t.Fatal("the Go client neither closed its lost session nor deleted its node: the node went by the server's expiry")
	}
	testutil.Until(t, "the lost session closed on the servers", func() (bool, string) {
		return sent(zktest.OpCloseSession) > 0, "no closeSession sent"
	})
	if ok, st, err := observer.Exists(node); err != nil || ok {
		t.Fatalf("the lost session's node %s: exists %v (owner %x), %v", node, ok, st.EphemeralOwner, err)
	}
	rec.WaitFor(ctx, t, state.Reconnected)
	if gc.SessionID() == old {
		t.Fatalf("the Go client is back in its lost session %x", old)
	}
	p.do(t, "j1", "release", "m")
	testutil.ErrorIs(t, h.Release(ctx), recipes.ErrLockLost) // after LOST
	testutil.Must(t, h.Acquire(ctx))
	testutil.Must(t, h.Release(ctx))
}
