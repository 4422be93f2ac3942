package nodes_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/recipes/nodes"
)

// created records the paths a node's listener hears, and the NodeCreated
// events its client's hook hears.
type created struct {
	mu     sync.Mutex
	paths  []string
	events []framework.Event
	more   chan struct{} // closed and replaced at each path heard
}

func newCreated() *created { return &created{more: make(chan struct{})} }

func (c *created) listener(path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.paths = append(c.paths, path)
	close(c.more)
	c.more = make(chan struct{})
}

func (c *created) hook() framework.Option {
	return framework.WithEventHook(framework.EventFunc(func(e framework.Event) {
		if e.Kind == nodes.NodeCreated {
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	}))
}

// wait waits until the listener has heard n creates, and returns them.
func (c *created) wait(t testing.TB, n int) []string {
	t.Helper()
	ctx := testutil.Context(t)
	for {
		c.mu.Lock()
		paths, more := slices.Clone(c.paths), c.more
		c.mu.Unlock()
		if len(paths) >= n {
			return paths
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("the listener heard %d creates (%v), want %d", len(paths), paths, n)
		}
	}
}

func mustNode(t testing.TB, c *framework.Client, mode framework.CreateMode, path string, data []byte, opts ...nodes.Option) *nodes.PersistentNode {
	t.Helper()
	n, err := nodes.NewPersistentNode(c, mode, path, data, opts...)
	testutil.Must(t, err)
	t.Cleanup(func() { n.Close() })
	return n
}

// The node of every mode is made as Curator makes it: its name (the
// sequence of a sequential mode, the "_c_<uuid>-" prefix of a protected
// node), its data, its mode (an ephemeral node is the session's, a TTL
// node carries its TTL); its listener and the client's hook hear its
// create; Close deletes it.
func TestPersistentNodeModes(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		name      string
		mode      framework.CreateMode
		opts      []nodes.Option
		want      string // the name's pattern
		ephemeral bool
	}{
		{"ephemeral", framework.Ephemeral, nil, `^n$`, true},
		{"ephemeral-sequential", framework.EphemeralSequential, nil, `^n\d{10}$`, true},
		{"persistent", framework.Persistent, nil, `^n$`, false},
		{"persistent-sequential", framework.PersistentSequential, nil, `^n\d{10}$`, false},
		{"protected-ephemeral", framework.Ephemeral, []nodes.Option{nodes.WithProtection()}, `^_c_[0-9a-f-]{36}-n$`, true},
		{"protected-ephemeral-sequential", framework.EphemeralSequential, []nodes.Option{nodes.WithProtection()}, `^_c_[0-9a-f-]{36}-n\d{10}$`, true},
		{"ttl", framework.Persistent, []nodes.Option{nodes.WithTTL(time.Minute)}, `^n$`, false},
		{"ttl-sequential", framework.PersistentSequential, []nodes.Option{nodes.WithTTL(time.Minute)}, `^n\d{10}$`, false},
		{"container", framework.Container, nil, `^n$`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newCreated()
			c := testclient.New(t, server.Addr(), rec.hook())
			raw := testutil.Connect(t, server.Addr())
			ctx := testutil.Context(t)
			b := base(t)
			n := mustNode(t, c, tc.mode, b+"/parent/n", []byte("data"), tc.opts...)
			n.AddListener(rec.listener)
			testutil.ErrorIs(t, n.WaitForInitialCreate(ctx), recipes.ErrInvalidState, "not started")
			testutil.Must(t, n.Start())
			testutil.Must(t, n.WaitForInitialCreate(ctx))
			path := n.ActualPath()
			dir, name := framework.SplitPath(path)
			if dir != b+"/parent" || !regexp.MustCompile(tc.want).MatchString(name) {
				t.Fatalf("ActualPath %q, want %s/parent/ and a name like %s", path, b, tc.want)
			}
			if got := rec.wait(t, 1); !slices.Equal(got, []string{path}) {
				t.Fatalf("the listener heard %v, want [%s]", got, path)
			}
			data, st, err := raw.Get(path)
			testutil.Must(t, err)
			if string(data) != "data" {
				t.Errorf("data %q, want %q", data, "data")
			}
			switch {
			case tc.ephemeral && st.EphemeralOwner != c.SessionID():
				t.Errorf("ephemeral owner %x, want the session %x", st.EphemeralOwner, c.SessionID())
			case !tc.ephemeral && st.EphemeralOwner != 0: // the servers show a TTL node's and a container's as 0 too
				t.Errorf("ephemeral owner %x of a persistent node", st.EphemeralOwner)
			}
			testutil.Must(t, n.Close())
			if st := stat(t, raw, path); st != nil {
				t.Errorf("%s is still there after Close", path)
			}
			testutil.ErrorIs(t, n.WaitForInitialCreate(ctx), framework.ErrClosed)
			testutil.ErrorIs(t, n.Start(), recipes.ErrInvalidState)
			testutil.Must(t, n.Close()) // idempotent
			c.Close()
			<-c.Closed()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.events) != 1 || rec.events[0].Node != path || rec.events[0].Path != b+"/parent/n" || rec.events[0].Detail != (nodes.NodeEvent{Recipe: "persistent-node"}) {
				t.Errorf("events %v, want one NodeCreated of %s", rec.events, path)
			}
		})
	}
}

// A node deleted by someone else is made again, under the same name (a
// sequential and protected one's included), with its data: SetData's, if
// it changed; the listener hears each create.
func TestPersistentNodeComesBackWhenDeleted(t *testing.T) {
	testutil.CheckLeaks(t)
	rec := newCreated()
	c := testclient.New(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	n := mustNode(t, c, framework.EphemeralSequential, base(t)+"/n", nil, nodes.WithProtection())
	n.AddListener(rec.listener)
	testutil.ErrorIs(t, n.SetData(ctx, []byte("x")), recipes.ErrInvalidState, "not started")
	testutil.Must(t, n.Start())
	testutil.Must(t, n.WaitForInitialCreate(ctx))
	path := n.ActualPath()
	if data, _, _ := raw.Get(path); len(data) != 0 {
		t.Fatalf("nil data made the node with %q, want empty data", data)
	}
	for i, data := range []string{"one", "two"} {
		testutil.Must(t, n.SetData(ctx, []byte(data)))
		testutil.Must(t, raw.Delete(path, -1))
		if got := rec.wait(t, i+2); got[i+1] != path {
			t.Fatalf("made again as %s, want %s", got[i+1], path)
		}
		got, _, err := raw.Get(path)
		testutil.Must(t, err)
		if string(got) != data {
			t.Fatalf("made again with %q, want %q", got, data)
		}
	}
	if !bytes.Equal(n.Data(), []byte("two")) {
		t.Fatalf("Data() = %q", n.Data())
	}
}

// A node that is there already (left by an earlier process, or made by
// another client) is taken, with our data written to it: no create is told;
// and the initial create is done.
func TestPersistentNodeTakesANodeThere(t *testing.T) {
	testutil.CheckLeaks(t)
	rec := newCreated()
	c := testclient.New(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	path := base(t) + "/n"
	_, err := c.Create(ctx, path, []byte("theirs"), framework.CreatingParentsIfNeeded())
	testutil.Must(t, err)
	n := mustNode(t, c, framework.Persistent, path, []byte("ours"))
	n.AddListener(rec.listener)
	testutil.Must(t, n.Start())
	testutil.Must(t, n.WaitForInitialCreate(ctx))
	data, _, err := raw.Get(path)
	testutil.Must(t, err)
	if string(data) != "ours" || n.ActualPath() != path {
		t.Fatalf("data %q at %s, want %q at %s", data, n.ActualPath(), "ours", path)
	}
	rec.mu.Lock()
	heard := len(rec.paths)
	rec.mu.Unlock()
	if heard != 0 {
		t.Fatalf("the listener heard a create of a node that was there")
	}
}

// The servers' refusal is said, not waited out: a node without parent
// creation under a missing parent fails WaitForInitialCreate at once with
// NoNode; once the parent is there, the next reconnect makes the node.
func TestPersistentNodeRefusedIsAnError(t *testing.T) {
	testutil.CheckLeaks(t)
	c := testclient.New(t, server.Addr())
	ctx := testutil.Context(t)
	b := base(t)
	n := mustNode(t, c, framework.Ephemeral, b+"/missing/n", nil, nodes.WithoutParentCreation())
	testutil.Must(t, n.Start())
	testutil.ErrorIs(t, n.WaitForInitialCreate(ctx), zk.ErrNoNode, "cannot be created")
}

// Close never waits for a listener: a listener that closes its node, and
// one that waits for another goroutine's Close, both end; the node is
// deleted once the listener returns.
func TestPersistentNodeCloseWaitsForNoListener(t *testing.T) {
	testutil.CheckLeaks(t)
	c := testclient.New(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	b := base(t)

	self := mustNode(t, c, framework.Ephemeral, b+"/self", nil)
	closed := make(chan error, 1)
	self.AddListener(func(string) { closed <- self.Close() })
	testutil.Must(t, self.Start())
	testutil.Must(t, testutil.Recv(t, closed, "Close from the node's listener"))

	other := mustNode(t, c, framework.Ephemeral, b+"/other", nil)
	inListener, returned := make(chan struct{}), make(chan struct{})
	other.AddListener(func(string) {
		close(inListener)
		<-returned // waits for Close, which must not wait for it
	})
	testutil.Must(t, other.Start())
	testutil.Recv(t, inListener, "the listener")
	testutil.Must(t, other.WaitForInitialCreate(ctx))
	testutil.Must(t, other.Close())
	close(returned)
	testutil.Until(t, "the node deleted once the listener returned", func() (bool, string) {
		return stat(t, raw, b+"/other") == nil && stat(t, raw, b+"/self") == nil, "a node is still there"
	})
}

// Misuse is an error, never a panic or a hang.
func TestPersistentNodeMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	c := testclient.New(t, server.Addr())
	b := base(t)
	for _, tc := range []struct {
		name string
		make func() error
		want error
	}{
		{"nil client", func() error {
			_, err := nodes.NewPersistentNode(nil, framework.Ephemeral, b, nil)
			return err
		}, framework.ErrInvalidArgument},
		{"root", func() error { _, err := nodes.NewPersistentNode(c, framework.Ephemeral, "/", nil); return err }, zk.ErrInvalidPath},
		{"reserved", func() error {
			_, err := nodes.NewPersistentNode(c, framework.Ephemeral, "/zookeeper/x", nil)
			return err
		}, zk.ErrInvalidPath},
		{"bad mode", func() error { _, err := nodes.NewPersistentNode(c, 42, b, nil); return err }, framework.ErrInvalidArgument},
		{"ttl of an ephemeral", func() error {
			_, err := nodes.NewPersistentNode(c, framework.Ephemeral, b, nil, nodes.WithTTL(time.Second))
			return err
		}, framework.ErrInvalidArgument},
		{"ttl too short", func() error {
			_, err := nodes.NewPersistentNode(c, framework.Persistent, b, nil, nodes.WithTTL(time.Microsecond))
			return err
		}, framework.ErrInvalidArgument},
		{"ttl node's option", func() error {
			_, err := nodes.NewPersistentNode(c, framework.Persistent, b, nil, nodes.WithChildNodeName("x"))
			return err
		}, framework.ErrInvalidArgument},
		{"node's option", func() error {
			_, err := nodes.NewPersistentTtlNode(c, b, time.Second, nil, nodes.WithProtection())
			return err
		}, framework.ErrInvalidArgument},
		{"ttl node's ttl", func() error { _, err := nodes.NewPersistentTtlNode(c, b, 0, nil); return err }, framework.ErrInvalidArgument},
		{"ttl node's factor", func() error {
			_, err := nodes.NewPersistentTtlNode(c, b, time.Second, nil, nodes.WithTouchScheduleFactor(0))
			return err
		}, framework.ErrInvalidArgument},
		{"ttl node's child", func() error {
			_, err := nodes.NewPersistentTtlNode(c, b, time.Second, nil, nodes.WithChildNodeName("a/b"))
			return err
		}, zk.ErrInvalidPath},
	} {
		testutil.ErrorIs(t, tc.make(), tc.want)
	}
	for _, bad := range testutil.BadPaths(b) {
		_, err := nodes.NewPersistentNode(c, framework.Ephemeral, bad.Path, nil)
		testutil.ErrorIs(t, err, zk.ErrInvalidPath, bad.Problem)
	}
	n := mustNode(t, c, framework.Ephemeral, b+"/n", nil)
	var nilCtx context.Context
	testutil.ErrorIs(t, n.WaitForInitialCreate(nilCtx), framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, n.SetData(nilCtx, nil), framework.ErrInvalidArgument, "nil context")
	testutil.Must(t, n.Start())
	testutil.ErrorIs(t, n.Start(), recipes.ErrInvalidState, "started twice")
	if remove := n.AddListener(nil); remove == nil {
		t.Fatal("AddListener(nil) returned a nil remove")
	}
	closedClient := testclient.New(t, server.Addr())
	underClosed := mustNode(t, closedClient, framework.Ephemeral, b+"/closed", nil)
	closedClient.Close()
	_, err := nodes.NewPersistentNode(closedClient, framework.Ephemeral, b, nil)
	testutil.ErrorIs(t, err, framework.ErrClosed)
	testutil.Must(t, underClosed.Start()) // its client closed: it says so, and closes
	testutil.ErrorIs(t, underClosed.WaitForInitialCreate(testutil.Context(t)), framework.ErrClosed, "cannot be created")
	testutil.Must(t, underClosed.Close())
	for _, v := range []any{&nodes.PersistentNode{}, (*nodes.PersistentNode)(nil), &nodes.PersistentTtlNode{}, (*nodes.PersistentTtlNode)(nil)} {
		if testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument) == 0 {
			t.Errorf("%T: no method called", v)
		}
	}
}

// A PersistentTtlNode makes its node a TTL node with its data, touches a
// child (a TTL node too, with the client's default data) every ttl/factor,
// and Close leaves both to the servers, which delete the child and then the
// node once their TTL has passed untouched.
func TestPersistentTtlNode(t *testing.T) {
	testutil.CheckLeaks(t)
	const ttl = 400 * time.Millisecond
	c := testclient.New(t, server.Addr(), framework.WithDefaultData([]byte("default")))
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	path := base(t) + "/ttl"
	n, err := nodes.NewPersistentTtlNode(c, path, ttl, []byte("data"), nodes.WithTouchScheduleFactor(4))
	testutil.Must(t, err)
	defer n.Close()
	testutil.Must(t, n.Start())
	testutil.Must(t, n.WaitForInitialCreate(ctx))
	data, st, err := raw.Get(path)
	testutil.Must(t, err)
	if string(data) != "data" || st.EphemeralOwner != 0 {
		t.Fatalf("node %q, owner %x: want data %q and no owner", data, st.EphemeralOwner, "data")
	}
	child := n.ChildPath()
	if child != path+"/touch" {
		t.Fatalf("ChildPath %s", child)
	}
	// Touched every 100 ms, the child outlives its TTL twice over (it is
	// never reaped and made again: its czxid stays), and so the node does.
	var czxid int64
	testutil.Until(t, "the child touched again and again", func() (bool, string) {
		data, st, err := raw.Get(child)
		if err != nil {
			return false, err.Error()
		}
		if czxid == 0 {
			czxid = st.Czxid
		}
		if st.Czxid != czxid {
			t.Fatalf("the child was reaped and made again while touched")
		}
		return time.Since(time.UnixMilli(st.Ctime)) > 2*ttl && string(data) == "default",
			fmt.Sprintf("version %d, data %q", st.Version, data)
	})
	testutil.Must(t, n.Close())
	if stat(t, raw, path) == nil {
		t.Fatal("Close deleted the node")
	}
	testutil.WaitGone(t, raw, path)
}

// Close during the node's create sees the create through and then deletes
// the node: a create Close cut short went on in the client, and its node
// landed after the delete. The create is the first of a node whose parent
// is missing (create, NoNode, the parent, create again), with replies held
// back 100 ms; Close comes as the first is on its way.
func TestPersistentNodeCloseDuringCreate(t *testing.T) {
	testutil.CheckLeaks(t)
	proxy := zktest.NewProxy(t, server.Addr())
	c := testclient.New(t, proxy.Addr())
	ctx := testutil.Context(t)
	path := base(t) + "/missing/n"
	n := mustNode(t, c, framework.Persistent, path, nil)
	proxy.SetDelays(0, 100*time.Millisecond)
	before := proxy.Requests(zktest.OpCreate)
	testutil.Must(t, n.Start())
	testutil.Must(t, proxy.WaitRequests(ctx, zktest.OpCreate, before+1))
	testutil.Must(t, n.Close())
	testutil.Must(t, proxy.WaitRequests(ctx, zktest.OpCreate, before+2)) // the create after the parent
	// Behind that create, on the same connection:
	ok, _, err := c.Exists(ctx, path)
	testutil.Must(t, err)
	if ok {
		t.Fatalf("%s is there after Close: its create landed after the delete", path)
	}
}
