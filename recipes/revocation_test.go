package recipes_test

import (
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// A revocation written before the holder's revocation watch is set (here:
// its connection is slow, and a revoker on a fast one writes as soon as the
// node is there) is heard: the watcher's first read counts. Curator's
// skips it, and the request is lost.
func TestRevocationBeforeTheWatchIsHeard(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	proxy.SetDelay(200 * time.Millisecond) // each way: the watch's read reaches the server well after the node
	h := mustMutex(t, c, base).NewHandle()
	revoked := make(chan struct{})
	h.MakeRevocable(func() { close(revoked) })
	acquired := make(chan error, 1)
	go func() { acquired <- h.Acquire(ctx) }()
	node := testutil.WaitChildren(t, rawConn(t), base, 1)[0]
	testutil.Must(t, recipes.Revoke(ctx, newClient(t, ""), base+"/"+node))
	testutil.Must(t, testutil.Recv(t, acquired, "the acquisition"))
	testutil.Recv(t, revoked, "the revocation listener, for a request made before its watch")
	testutil.Must(t, h.Release(ctx))
}
