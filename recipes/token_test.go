package recipes_test

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// The fencing token is our node's czxid, not the zxid of the last change
// among the lock's children (pzxid), even when another child is created
// between our create and our listing. (Reading the token off the listing's
// parent Stat would save a request, but ZooKeeper gives no way to tell from
// it whether a child was deleted since our create: see docs/performance.md.)
func TestMutexTokenWhenAChildChangesBeforeTheListing(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, base, nil, framework.CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}
	raw := testutil.Connect(t, server.Addr())
	_, _, created, err := raw.ChildrenW(base)
	if err != nil {
		t.Fatal(err)
	}
	// Our create's reply, and so our listing, come a second after the
	// server applied the create; the other child is created in between.
	proxy.SetDelay(time.Second)
	h := mustMutex(t, c, base).NewHandle()
	done := make(chan error, 1)
	go func() { done <- h.Acquire(ctx) }()
	select {
	case <-created:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	other, err := raw.Create(base+"/other", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, done, "Acquire"); err != nil {
		t.Fatal(err)
	}
	proxy.SetDelay(0)
	_, ours, err := raw.Exists(h.LockPath())
	if err != nil {
		t.Fatal(err)
	}
	_, theirs, err := raw.Exists(other)
	if err != nil {
		t.Fatal(err)
	}
	if tok := tokenOf(t, h); tok != ours.Czxid {
		t.Fatalf("token %d, our czxid %d (the other child's %d)", tok, ours.Czxid, theirs.Czxid)
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := raw.Delete(other, -1); err != nil {
		t.Fatal(err)
	}
}

// A downgrade's read lock takes the write lock's place in the queue, and
// its fencing token: a writer that queued behind the write node holds
// after the read lock is released, and its token must be the higher one,
// though the read node was created after the writer's.
func TestDowngradeTokenIsTheWriteLocks(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	o := mustRW(t, newClient(t, ""), base).NewHandle()
	testutil.Must(t, o.WriteLock().Acquire(ctx))
	writeToken := tokenOf(t, o.WriteLock())
	next := mustRW(t, newClient(t, ""), base).NewHandle().WriteLock()
	acquired := make(chan error, 1)
	go func() { acquired <- next.Acquire(ctx) }()
	testutil.WaitChildren(t, rawConn(t), base, 2) // queued behind our write node
	testutil.Must(t, o.ReadLock().Acquire(ctx))   // the downgrade: its node is created now
	readToken := tokenOf(t, o.ReadLock())
	testutil.Must(t, o.WriteLock().Release(ctx))
	testutil.Must(t, o.ReadLock().Release(ctx))
	testutil.Must(t, testutil.Recv(t, acquired, "the next writer's acquisition"))
	nextToken := tokenOf(t, next)
	if readToken != writeToken || nextToken <= readToken {
		t.Fatalf("tokens: write %d, its downgrade's read %d, the next writer's %d: want the read lock's to be the write lock's, and the next writer's higher",
			writeToken, readToken, nextToken)
	}
	testutil.Must(t, next.Release(ctx))
}
