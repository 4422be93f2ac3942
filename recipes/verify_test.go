package recipes

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
)

// CURATOR-604: a node that the children list shows first but that belongs
// to another session (as after a reconnect to a server that has not yet
// applied the old session's close) must not be reported as held.
func TestVerifyRefusesNodeOfAnotherSession(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	ours, other := newClient(t, ""), newClient(t, "")
	path, err := other.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential),
		framework.WithProtection(), framework.CreatingParentContainersIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	li := lockInternals{client: ours, base: base}
	n := &heldNode{path: path, name: path[len(base)+1:]}
	if err := li.verify(ctx, n); !errors.Is(err, errNodeVanished) || !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("verify of another session's node = %v, want errNodeVanished", err)
	}

	mine, err := ours.Create(ctx, base+"/lock-", nil, framework.WithMode(framework.EphemeralSequential), framework.WithProtection())
	if err != nil {
		t.Fatal(err)
	}
	n = &heldNode{path: mine, name: mine[len(base)+1:]}
	if err := li.verify(ctx, n); err != nil {
		t.Fatalf("verify of our own node = %v", err)
	}
	n.stop()
	_, stat, _ := ours.Exists(ctx, mine)
	if n.token != stat.Czxid || n.token == 0 {
		t.Fatalf("token %d, czxid %d", n.token, stat.Czxid)
	}
}
