package nodes_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes/nodes"
)

// The invariant of a persistent node under every fault: once the client
// is connected again, the node is there, once, under the name it was first
// given, with its data, and (an ephemeral node) owned by the client's
// current session. The faults are real: the zktest proxy between the client
// and the server expires the session on the server, drops the connection,
// black-holes it until the client gives its session up, or loses the reply
// to the node's create.
func TestPersistentNodeFaults(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, p *zktest.Proxy, c *framework.Client)
	}{
		{"session-expired", func(t *testing.T, p *zktest.Proxy, c *framework.Client) {
			testutil.Must(t, p.ExpireSession(c.SessionID()))
		}},
		{"connection-dropped", func(t *testing.T, p *zktest.Proxy, c *framework.Client) {
			p.DropConnections()
		}},
		{"black-holed-until-lost", func(t *testing.T, p *zktest.Proxy, c *framework.Client) {
			_, ended := c.Session()
			p.BlackHole()
			testutil.Recv(t, ended, "the client giving its session up (LOST)")
			p.Restore()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newCreated()
			proxy := zktest.NewProxy(t, server.Addr())
			c := testclient.New(t, proxy.Addr(), framework.WithSessionTimeout(time.Second), rec.hook())
			raw := testutil.Connect(t, server.Addr())
			ctx := testutil.Context(t)
			parent := base(t)
			n := mustNode(t, c, framework.EphemeralSequential, parent+"/n", []byte("data"), nodes.WithProtection())
			n.AddListener(rec.listener)
			testutil.Must(t, n.Start())
			testutil.Must(t, n.WaitForInitialCreate(ctx))
			path, before := n.ActualPath(), c.SessionID()
			watching(t)

			tc.fault(t, proxy, c)
			testutil.Must(t, c.BlockUntilConnected(ctx))
			presentOnce(t, raw, c, parent, path, before)
		})
	}
}

// watching waits until the node's goroutine waits with its node watched
// (or for a reconnect): the fault then finds it there, not on its way.
func watching(t *testing.T) {
	t.Helper()
	testutil.WaitBlocked(t, "nodes.(*PersistentNode).loop", nil)
}

// presentOnce waits until the node at path is the only child of parent,
// with its data, owned by c's current session, the client connected; a
// new session must differ from before, the one the node was made in.
func presentOnce(t *testing.T, raw *zk.Conn, c *framework.Client, parent, path string, before int64) {
	t.Helper()
	testutil.Until(t, "the node there once, the current session's", func() (bool, string) {
		kids, _, err := raw.Children(parent)
		if err != nil {
			return false, err.Error()
		}
		data, st, err := raw.Get(path)
		if err != nil {
			return false, fmt.Sprintf("%s: %v; children %v", path, err, kids)
		}
		sid := c.SessionID()
		return len(kids) == 1 && string(data) == "data" && st.EphemeralOwner == sid && c.State().IsConnected(),
			fmt.Sprintf("children %v, data %q, owner %x, session %x (was %x), state %v", kids, data, st.EphemeralOwner, sid, before, c.State())
	})
}

// The reply to the node's first create is lost (the server made it): a
// protected node is found by its prefix, not made twice.
func TestPersistentNodeLostCreateReply(t *testing.T) {
	testutil.CheckLeaks(t)
	proxy := zktest.NewProxy(t, server.Addr())
	c := testclient.New(t, proxy.Addr())
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	parent := base(t)
	_, err := raw.Create(parent, nil, 0, zk.WorldACL(zk.PermAll))
	testutil.Must(t, err)
	n := mustNode(t, c, framework.EphemeralSequential, parent+"/n", []byte("data"), nodes.WithProtection())
	lost := proxy.LoseNextReply(zktest.OpCreate)
	testutil.Must(t, n.Start())
	testutil.Recv(t, lost, "the create's reply lost")
	testutil.Must(t, n.WaitForInitialCreate(ctx))
	presentOnce(t, raw, c, parent, n.ActualPath(), c.SessionID())
}
