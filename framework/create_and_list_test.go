package framework

import (
	"slices"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// CreateAndList's listing goes right behind its create: one create and one
// listing pass the proxy, the listing returned is the one sent behind the
// create (not one sent after its reply), and it shows the node, plain or
// protected, with a watch or without.
func TestCreateAndListSendsTheListingBehindTheCreate(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	proxy.SetDelay(20 * time.Millisecond)
	for _, opts := range [][]CreateOption{
		{WithMode(EphemeralSequential)},
		{WithMode(EphemeralSequential), WithProtection()},
		{WithMode(EphemeralSequential), WithProtection(), WatchingParent()},
	} {
		creates, lists := proxy.Requests(zktest.OpCreate), proxy.Requests(zktest.OpGetChildren2)
		l, err := c.CreateAndList(ctx, base+"/n-", nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, name := SplitPath(l.Path)
		if !slices.Contains(l.Children, name) {
			t.Fatalf("the listing %v does not show %s", l.Children, name)
		}
		if n := proxy.Requests(zktest.OpCreate) - creates; n != 1 {
			t.Fatalf("%d creates", n)
		}
		if n := proxy.Requests(zktest.OpGetChildren2) - lists; n != 1 {
			t.Fatalf("%d listings, want the one sent behind the create", n)
		}
		if !l.pipelined {
			t.Fatal("the listing returned is not the one sent behind the create")
		}
		if watched := l.Watch != nil; watched != (len(opts) == 3) {
			t.Fatalf("a watch with the listing: %v, asked for: %v", watched, len(opts) == 3)
		}
	}
}

// The listing sent behind a create is dropped when it cannot be the
// create's, and the parent is listed again after the create, so that the
// listing returned shows the node, and the node is the only one made:
// when the create's reply is lost (the server made the node; the
// connection drops before its reply, and the listing behind it with it);
// when the connection drops between the create's reply and the listing's;
// and when the parent had to be made first (a reaped container: the first
// create fails, and so does the listing behind it).
func TestCreateAndListFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(p *zktest.Proxy) <-chan struct{} // nil: the parent is missing (reaped) instead
	}{
		{"create reply lost", func(p *zktest.Proxy) <-chan struct{} { return p.LoseNextReply(zktest.OpCreate) }},
		{"connection dropped between the two", func(p *zktest.Proxy) <-chan struct{} { return p.LoseNextReply(zktest.OpGetChildren2) }},
		{"parent reaped", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, base := testutil.Begin(t, server.Addr())
			proxy := zktest.NewProxy(t, server.Addr())
			c := newClient(t, proxy.Addr())
			parent := base + "/p"
			var fired <-chan struct{}
			if tc.fault != nil {
				if _, err := c.Create(ctx, parent, nil, CreatingParentsIfNeeded()); err != nil {
					t.Fatal(err)
				}
				fired = tc.fault(proxy)
			}
			lists := proxy.Requests(zktest.OpGetChildren2)
			l, err := c.CreateAndList(ctx, parent+"/n-", nil, WithMode(EphemeralSequential), WithProtection(),
				CreatingParentContainersIfNeeded())
			if err != nil {
				t.Fatal(err)
			}
			if fired != nil {
				testutil.Recv(t, fired, "the fault")
			}
			if l.pipelined {
				t.Fatal("the listing returned is the one sent behind the create, want it dropped")
			}
			if n := proxy.Requests(zktest.OpGetChildren2) - lists; n < 2 {
				t.Fatalf("%d listings: the one behind the create was taken, want it dropped", n)
			}
			_, name := SplitPath(l.Path)
			if !slices.Contains(l.Children, name) {
				t.Fatalf("the listing %v does not show %s", l.Children, name)
			}
			kids, _, err := c.Children(ctx, parent)
			if err != nil || len(kids) != 1 || kids[0] != name {
				t.Fatalf("children of the parent: %v, %v; want %s alone", kids, err, name)
			}
		})
	}
}

// A listing's Written hook may come late (go-zookeeper's writer had taken
// the hook when CreateAndList gave up) or twice: a late one's listing is
// dropped, a second one starts none, and no runner is left behind: Close
// returns, and no goroutine outlives the test.
func TestCreateAndListLateOrRepeatedWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, p *pipelined, z *conn)
	}{
		{"written after the create gave up", func(t *testing.T, p *pipelined, z *conn) {
			p.drop()
			p.Written(z.Conn)
		}},
		{"written after the listing was taken", func(t *testing.T, p *pipelined, z *conn) {
			if _, ok := p.take(testutil.Context(t), "n"); ok {
				t.Fatal("a listing taken before any was sent")
			}
			p.Written(z.Conn)
		}},
		{"written twice", func(t *testing.T, p *pipelined, z *conn) {
			p.Written(z.Conn)
			p.Written(z.Conn)
			p.drop()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, base := testutil.Begin(t, server.Addr()) // checks leaks too
			c, err := New(server.Addr(), retry.NewExponentialBackoff(20*time.Millisecond, 5))
			testutil.Must(t, err)
			t.Cleanup(func() { c.Close() }) // on a failure before the test's own Close
			if err := c.BlockUntilConnected(testutil.Context(t)); err != nil {
				t.Fatal(err)
			}
			p := &pipelined{c: c}
			p.job = callJob[nodeResult]{a: listChildren(false, nil), arg: base}
			tc.run(t, p, c.zk())
			closed := make(chan error, 1)
			go func() { closed <- c.Close() }()
			if err := testutil.Recv(t, closed, "Close, with no runner left out of the pool"); err != nil {
				t.Fatal(err)
			}
		})
	}
}
