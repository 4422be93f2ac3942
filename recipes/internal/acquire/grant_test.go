package acquire

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// endings is an Observer that counts the ends it is told.
type endings struct {
	mu    sync.Mutex
	ended []error
}

func (o *endings) Acquiring(context.Context) Observer { return o }
func (o *endings) Acquired(*Grant, int)               {}
func (o *endings) Failed(error)                       {}

func (o *endings) Ended(_ *Grant, cause error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = append(o.ended, cause)
}

func (o *endings) told() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.ended)
}

// Reading a held grant settles nothing: once the trust it came from has
// ended, its Done is closed and its Err and Cause say the loss, but it is
// its holdings' follower of that trust (the one place a trust's end is
// settled) that settles it, forgets it and tells it, once; reading it
// before, however often, tells nothing and leaves it held among the
// holdings. Here the trust's end reaches the grant's context at once and
// its follower only when the test says (trackedTrust).
func TestReadingAGrantSettlesNothing(t *testing.T) {
	testutil.CheckLeaks(t)
	trust := newTrackedTrust()
	o := &endings{}
	l := &Lock{}
	g := newGrant(l, &node{path: "/x/lock-1", name: "lock-1", trust: trust, session: 1}, o, true)
	g.hold()
	if n := trust.registered(); n != 2 {
		t.Fatalf("%d functions registered on the trust, want 2: the grant's context's and the holdings' follower", n)
	}
	cause := errors.New("an error state")
	trust.end(cause)
	trust.run(t, 0) // the grant's context ends; the follower waits

	testutil.Recv(t, g.Done(), "the grant's Done")
	for range 3 {
		if err := g.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, cause) {
			t.Fatalf("Err = %v, want the loss, wrapping ErrLockLost and the cause", err)
		}
		if got := g.Cause(); got != cause {
			t.Fatalf("Cause = %v, want %v", got, cause)
		}
	}
	if n := o.told(); n != 0 {
		t.Fatalf("reading the grant told its end %d times, want none", n)
	}
	if g.end.fin.Load() != nil || !l.holdings.has(g) {
		t.Fatal("reading the grant settled it")
	}

	trust.run(t, 1) // the follower
	testutil.Until(t, "the follower settled the loss", func() (bool, string) {
		return o.told() == 1 && !l.holdings.has(g), "not yet"
	})
	if lost, first := g.Release(); !first || !errors.Is(lost, ErrLockLost) {
		t.Fatalf("Release = %v, first %v; want the loss, the first", lost, first)
	}
	if n := o.told(); n != 1 {
		t.Fatalf("the end told %d times, want once", n)
	}
}

// CURATOR-604: a node that the children list shows first but that belongs
// to another session (as after a reconnect to a server that has not yet
// applied the old session's close) must not be reported as held.
func TestVerifyRefusesNodeOfAnotherSession(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	ours, other := newClient(t, ""), newClient(t, "")
	path, err := other.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential),
		framework.WithProtection(), framework.CreatingParentContainersIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	l := NewLock(ours, base)
	n := node{path: path, name: path[len(base)+1:]}
	if err := l.verify(ctx, &n); !errors.Is(err, ErrVanished) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("verify of another session's node = %v, want ErrVanished", err)
	}

	mine, err := ours.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
	if err != nil {
		t.Fatal(err)
	}
	n = node{path: mine, name: mine[len(base)+1:]}
	if err := l.verify(ctx, &n); err != nil {
		t.Fatalf("verify of our own node = %v", err)
	}
	_, stat, _ := ours.Exists(ctx, mine)
	if n.token != stat.Czxid || n.token == 0 {
		t.Fatalf("token %d, czxid %d", n.token, stat.Czxid)
	}
}

// A node is trusted without a round trip only while no error state has come
// since its trust was taken, before its create; after one (here a dropped
// connection, SUSPENDED then RECONNECTED in the same session), a grant of it
// from that trust is lost, and the node is read again before it holds, the
// token coming with that read.
func TestTrustOnlyWithoutErrorStateSinceArming(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	l := NewLock(c, base)
	var n node
	n.arm(c)
	path, err := c.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential),
		framework.WithProtection(), framework.CreatingParentContainersIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	n.path, n.name = path, path[len(base)+1:]
	if !n.trusted(c) {
		t.Fatal("a node created with no error state since arming is not trusted")
	}
	if unknown := (node{trust: n.trust}); unknown.trusted(c) {
		t.Fatal("a node armed before any session is trusted")
	}

	session := c.SessionID()
	proxy.DropConnections()
	testutil.Recv(t, n.trust.Done(), "the trust's end after SUSPENDED")
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() != session {
		t.Fatalf("session changed (%x to %x): the test wants a reconnect in the same session", session, c.SessionID())
	}
	if n.trusted(c) {
		t.Fatal("trusted after an error state")
	}
	if _, err := newGrant(&l, &n, nil, false).Token(ctx); !errors.Is(err, ErrLockLost) {
		t.Fatalf("token of a grant from the trust before the error state = %v, want ErrLockLost", err)
	}
	if err := l.held(ctx, &n); err != nil {
		t.Fatalf("held after a reconnect in the same session = %v", err)
	}
	_, stat, err := c.Exists(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if !n.trusted(c) || n.token != stat.Czxid {
		t.Fatalf("after the read: trusted %v, token %d, czxid %d", n.trusted(c), n.token, stat.Czxid)
	}
	g := newGrant(&l, &n, nil, false)
	defer g.Release()
	if tok, err := g.Token(ctx); tok != stat.Czxid || err != nil {
		t.Fatalf("token = %d, %v; czxid %d", tok, err, stat.Czxid)
	}
}
