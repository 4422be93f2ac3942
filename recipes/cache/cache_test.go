package cache

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/internal/treesnap"
)

var openACL = zk.WorldACL(zk.PermAll)

// makeNodes makes the nodes at paths, in order, each with its path as its
// data.
func makeNodes(t testing.TB, raw *zk.Conn, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := raw.Create(p, []byte(p), 0, openACL); err != nil {
			t.Fatal(err)
		}
	}
}

// A cache loads a tree that is there before it (every node told as created,
// then CacheInitialized), and follows it: a node made, changed, deleted and
// made again (told as created, changed with what it held before, deleted),
// a subtree deleted from the leaves up, its path deleted and made again.
// After each change it holds what the server does.
func TestCacheFollowsTheTree(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := basePath(t)
	raw := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
	makeNodes(t, raw, base, base+"/a", base+"/a/x", base+"/b")
	rec := newRecorder()
	c := mustCache(t, func() (*Cache, error) { return New(client, base, WithListener(rec)) })
	rec.want(t, NodeCreated, base)
	rec.want(t, NodeCreated, base+"/a") // the build reads what it holds and lists, in order
	rec.want(t, NodeCreated, base+"/b")
	rec.want(t, NodeCreated, base+"/a/x")
	rec.want(t, CacheInitialized, "")
	testutil.Recv(t, c.Initialized(), "Initialized")
	waitEqual(t, c, raw, base, -1, false, "loaded")
	if got := c.Children(base); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Children(%s) = %v", base, got)
	}
	if n, ok := c.Get(base + "/a/x"); !ok || string(n.Data) != base+"/a/x" || c.Len() != 4 {
		t.Fatalf("Get: %+v %v, Len %d", n, ok, c.Len())
	}

	if _, err := client.Create(ctx, base+"/b/c/d", []byte("d"), framework.CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}
	rec.want(t, NodeCreated, base+"/b/c")
	rec.want(t, NodeCreated, base+"/b/c/d")
	if _, err := client.SetData(ctx, base+"/b/c/d", []byte("d2"), -1); err != nil {
		t.Fatal(err)
	}
	e := rec.want(t, NodeChanged, base+"/b/c/d")
	if string(e.Old.Data) != "d" || string(e.Node.Data) != "d2" {
		t.Fatalf("changed: old %q, new %q", e.Old.Data, e.Node.Data)
	}
	if err := client.Delete(ctx, base+"/b/c/d"); err != nil {
		t.Fatal(err)
	}
	e = rec.want(t, NodeDeleted, base+"/b/c/d")
	if string(e.Node.Data) != "d2" {
		t.Fatalf("deleted: %q", e.Node.Data)
	}
	waitEqual(t, c, raw, base, -1, false, "after a create, a change and a delete")

	// Deleted and made again, in one transaction: the cache hears it
	// deleted and created (or, had it read it later, changed: a later
	// incarnation).
	if _, err := client.Multi(ctx, &zk.DeleteRequest{Path: base + "/a/x", Version: -1},
		&zk.CreateRequest{Path: base + "/a/x", Data: []byte("again"), Acl: openACL}); err != nil {
		t.Fatal(err)
	}
	rec.want(t, NodeDeleted, base+"/a/x")
	rec.want(t, NodeCreated, base+"/a/x")
	for _, p := range []string{base + "/b/c", base + "/b", base + "/a/x", base + "/a", base} {
		if err := raw.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{base + "/b/c", base + "/b", base + "/a/x", base + "/a", base} {
		rec.want(t, NodeDeleted, p)
	}
	if c.Len() != 0 || c.Nodes() == nil || len(c.Nodes()) != 0 {
		t.Fatalf("the tree gone, the cache holds %d: %v", c.Len(), c.Nodes())
	}
	if _, err := raw.Create(base, []byte("new"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	rec.want(t, NodeCreated, base)
	waitEqual(t, c, raw, base, -1, false, "the path made again")
	if extra := rec.rest(); len(extra) != 0 {
		t.Fatalf("events no change called for: %v", extra)
	}
}

// The shapes: a NodeCache holds its node alone (its watch is not recursive:
// the server shows no watch but the node's) and hears it made, changed and
// deleted; a PathChildrenCache holds the children, not the node nor the
// grandchildren; MaxDepth(1) holds the node and its children; WithoutData
// holds the Stats and no data.
func TestCacheShapes(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := basePath(t)
	raw := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
	makeNodes(t, raw, base, base+"/a", base+"/a/x", base+"/b")
	rec := newRecorder()
	nodeCache := mustCache(t, func() (*Cache, error) { return NewNodeCache(client, base+"/a", WithListener(rec)) })
	kids := mustCache(t, func() (*Cache, error) { return NewPathChildrenCache(client, base) })
	shallow := mustCache(t, func() (*Cache, error) { return New(client, base, MaxDepth(1)) })
	stats := mustCache(t, func() (*Cache, error) { return NewTreeCache(client, base, WithoutData()) })
	rec.want(t, NodeCreated, base+"/a")
	rec.want(t, CacheInitialized, "")
	waitEqual(t, nodeCache, raw, base+"/a", 0, false, "a NodeCache")
	waitEqual(t, kids, raw, base, 1, true, "a PathChildrenCache")
	waitEqual(t, shallow, raw, base, 1, false, "MaxDepth(1)")
	testutil.Must(t, stats.AwaitCurrent(ctx))
	if n, ok := stats.Get(base + "/a/x"); !ok || n.Data != nil || n.Stat.Czxid == 0 || stats.Len() != 4 {
		t.Fatalf("WithoutData: %+v %v, %d nodes", n, ok, stats.Len())
	}

	if _, err := raw.Set(base+"/a", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	rec.want(t, NodeChanged, base+"/a")
	if _, err := raw.Create(base+"/a/y", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(base+"/c", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(base+"/c/z", nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	waitEqual(t, kids, raw, base, 1, true, "a PathChildrenCache, after a child and a grandchild made")
	waitEqual(t, shallow, raw, base, 1, false, "MaxDepth(1), after a child and a grandchild made")
	for _, p := range []string{base + "/a/y", base + "/a/x", base + "/a"} {
		if err := raw.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	rec.want(t, NodeDeleted, base+"/a")
	waitEqual(t, kids, raw, base, 1, true, "a PathChildrenCache, after a child deleted")
	if extra := rec.rest(); len(extra) != 0 {
		t.Fatalf("the NodeCache heard more than its node: %v", extra)
	}
	if n, ok := kids.Get(base); ok {
		t.Fatalf("a PathChildrenCache holds its node: %+v", n)
	}
	testutil.Until(t, "WithoutData following the tree", func() (bool, string) {
		want, err := treesnap.Read(raw, base, -1)
		testutil.Must(t, err)
		for i := range want {
			want[i].Data = nil
		}
		d := treesnap.Diff(snapshot(stats), want)
		return d == "", d
	})
}

// Misuse is an error, never a panic: a nil client, a closed one, a bad
// path, a nil listener, a negative depth, SingleNode with a
// PathChildrenCache; the methods of a nil or zero Cache; AwaitCurrent with
// a nil context, or after Close.
func TestCacheMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	client := newClient(t, "")
	for name, make := range map[string]func() (*Cache, error){
		"nil client":   func() (*Cache, error) { return New(nil, "/a") },
		"zero client":  func() (*Cache, error) { return New(&framework.Client{}, "/a") },
		"bad path":     func() (*Cache, error) { return New(client, "a/b") },
		"nil option":   func() (*Cache, error) { return New(client, "/a", nil) },
		"nil listener": func() (*Cache, error) { return New(client, "/a", WithListener(nil)) },
		"nil func":     func() (*Cache, error) { return New(client, "/a", WithListener(ListenerFunc(nil))) },
		"depth -1":     func() (*Cache, error) { return New(client, "/a", MaxDepth(-1)) },
		"single kids":  func() (*Cache, error) { return NewPathChildrenCache(client, "/a", SingleNode()) },
	} {
		if c, err := make(); !errors.Is(err, framework.ErrInvalidArgument) || c != nil {
			t.Errorf("%s: %v, %v; want an error wrapping ErrInvalidArgument", name, c, err)
		}
	}
	if _, err := New(client, "a/b"); !errors.Is(err, zk.ErrInvalidPath) {
		t.Errorf("bad path: %v; want zk.ErrInvalidPath too", err)
	}
	for _, c := range []*Cache{nil, {}} {
		if _, ok := c.Get("/a"); ok || c.Len() != 0 || c.Nodes() != nil || c.Children("/a") != nil || !c.Stale() ||
			c.Path() != "" || c.Initialized() != nil {
			t.Errorf("a zero cache holds something")
		}
		c.Listen(ListenerFunc(func(Event) {}))()
		if err := c.AwaitCurrent(testutil.Context(t)); !errors.Is(err, framework.ErrInvalidArgument) {
			t.Errorf("AwaitCurrent of a zero cache: %v", err)
		}
		if err := c.Close(); !errors.Is(err, framework.ErrInvalidArgument) {
			t.Errorf("Close of a zero cache: %v", err)
		}
	}
	c, err := New(client, testutil.Path(t))
	testutil.Must(t, err)
	c.Listen(nil)() // ignored
	//lint:ignore SA1012 a nil context is the misuse tested
	if err := c.AwaitCurrent(nil); !errors.Is(err, framework.ErrInvalidArgument) { //nolint:staticcheck
		t.Errorf("AwaitCurrent(nil): %v", err)
	}
	testutil.Must(t, c.Close())
	testutil.Must(t, c.Close()) // idempotent
	if err := c.AwaitCurrent(testutil.Context(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("AwaitCurrent after Close: %v", err)
	}
	testutil.Must(t, client.Close())
	if _, err := New(client, "/a"); !errors.Is(err, framework.ErrClosed) {
		t.Errorf("a closed client: %v", err)
	}
}
