package recipes

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

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
	li := lockInternals{client: ours, base: base}
	n := newGrant(&li)
	n.path, n.name = path, path[len(base)+1:]
	if err := li.verify(ctx, n); !errors.Is(err, errNodeVanished) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("verify of another session's node = %v, want errNodeVanished", err)
	}

	mine, err := ours.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
	if err != nil {
		t.Fatal(err)
	}
	n = newGrant(&li)
	n.path, n.name = mine, mine[len(base)+1:]
	if err := li.verify(ctx, n); err != nil {
		t.Fatalf("verify of our own node = %v", err)
	}
	n.release()
	_, stat, _ := ours.Exists(ctx, mine)
	if tok := n.token.Load(); tok != stat.Czxid || tok == 0 {
		t.Fatalf("token %d, czxid %d", tok, stat.Czxid)
	}
}

// A node is trusted without a round trip only while no error state has come
// since its grant's context was made, before its create; after one (here a
// dropped connection, SUSPENDED then RECONNECTED in the same session), the
// grant reads the node again, and the token comes with that read.
func TestTrustOnlyWithoutErrorStateSinceArming(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	li := lockInternals{client: c, base: base}
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	n := newGrant(&li)
	defer func() { n.release() }()
	path, err := c.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential),
		framework.WithProtection(), framework.CreatingParentContainersIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	n.path, n.name = path, path[len(base)+1:]
	if !li.trusted(n) {
		t.Fatal("a node created with no error state since arming is not trusted")
	}
	if unknown := (&grant{ctx: n.ctx}); li.trusted(unknown) {
		t.Fatal("a node armed before any session is trusted")
	}

	session := c.SessionID()
	proxy.DropConnections()
	testutil.Recv(t, n.done(), "the grant's end after SUSPENDED")
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if c.SessionID() != session {
		t.Fatalf("session changed (%x to %x): the test wants a reconnect in the same session", session, c.SessionID())
	}
	if li.trusted(n) {
		t.Fatal("trusted after an error state")
	}
	if _, err := li.token(ctx, n); !errors.Is(err, ErrLockLost) {
		t.Fatalf("token after an error state = %v, want ErrLockLost", err)
	}
	if err := li.grantHeld(ctx, n); err != nil {
		t.Fatalf("grant after a reconnect in the same session = %v", err)
	}
	_, stat, err := c.Exists(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if !li.trusted(n) || n.token.Load() != stat.Czxid {
		t.Fatalf("after the grant's read: trusted %v, token %d, czxid %d", li.trusted(n), n.token.Load(), stat.Czxid)
	}
	if tok, err := li.token(ctx, n); tok != stat.Czxid || err != nil {
		t.Fatalf("token = %d, %v; czxid %d", tok, err, stat.Czxid)
	}
}
