package compat_test

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/internal/treesnap"
	"github.com/gocurator/curator/recipes/cache"
)

// javaCache parses the reply to "cache-dump": what a Java CuratorCache
// holds, as a tree snapshot.
func javaCache(t testing.TB, reply string) []treesnap.Node {
	t.Helper()
	f := strings.Fields(reply)
	if n, err := strconv.Atoi(f[0]); err != nil || n != len(f)-1 {
		t.Fatalf("cache-dump: %q", reply)
	}
	var out []treesnap.Node
	for _, e := range f[1:] {
		parts := strings.Split(e, ":")
		if len(parts) != 4 {
			t.Fatalf("cache-dump: %q", e)
		}
		czxid, err1 := strconv.ParseInt(parts[1], 10, 64)
		mzxid, err2 := strconv.ParseInt(parts[2], 10, 64)
		data, err3 := hex.DecodeString(parts[3])
		if err1 != nil || err2 != nil || err3 != nil {
			t.Fatalf("cache-dump: %q", e)
		}
		out = append(out, treesnap.Node{Path: parts[0], Data: data, Czxid: czxid, Mzxid: mzxid})
	}
	treesnap.Sort(out)
	return out
}

// goCache is what a Go cache holds, as a tree snapshot.
func goCache(c *cache.Cache) []treesnap.Node {
	var out []treesnap.Node
	for _, n := range c.Nodes() {
		out = append(out, treesnap.Node{Path: n.Path, Data: n.Data, Czxid: n.Stat.Czxid, Mzxid: n.Stat.Mzxid})
	}
	treesnap.Sort(out)
	return out
}

// A Go cache and a Java CuratorCache follow one tree that Java Curator
// writes, at random, on a server of the test's own: while all is well,
// through a restart of the server (both clients reconnect, in their
// sessions), and, for the Go cache's client, behind a proxy, through its
// connections dropped, its session expired and a read's reply lost. After
// each stretch of writes, once the tree is quiet, the Go cache is current
// and holds what the server does, and so does Java's.
func TestCacheFollowsJavaWrites(t *testing.T) {
	testutil.CheckLeaks(t)
	srv := zktest.NewServer(t, zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second))
	const base = "/cache"
	raw := testutil.Connect(t, srv.Addr())
	if _, err := raw.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, "cache")
	p.client(t, "writer", srv.Addr(), "tracker=false")
	p.client(t, "reader", srv.Addr(), "tracker=false")
	p.do(t, "-", "cache", "java", "reader", base)
	p.mustEvent(t, "cache java initialized")
	proxy := zktest.NewProxy(t, srv.Addr())
	client := newClient(t, proxy.Addr(), framework.WithSessionTimeout(4*time.Second))
	var stale atomic.Int32 // CacheStale events: a fault reached the Go cache
	c, err := cache.New(client, base, cache.WithListener(cache.ListenerFunc(func(e cache.Event) {
		if e.Type == cache.CacheStale {
			stale.Add(1)
		}
	})))
	testutil.Must(t, err)
	defer c.Close()

	stretch := func(seed int, what string, during func(t *testing.T)) {
		t.Helper()
		stale0 := stale.Load()
		writes := p.send("w", "churn", "writer", base, "ops=300", "pause=2", "seed="+strconv.Itoa(seed))
		during(t)
		t.Logf("%s: Java's writes: %s", what, writes.must(t))
		testutil.Must(t, c.AwaitCurrent(testutil.Context(t)))
		testutil.Until(t, what+": both caches equal to the server's tree", func() (bool, string) {
			want, err := treesnap.Read(raw, base, -1)
			testutil.Must(t, err)
			if d := treesnap.Diff(goCache(c), want); d != "" || c.Stale() {
				return false, fmt.Sprintf("the Go cache (stale: %v):\n%s", c.Stale(), d)
			}
			if d := treesnap.Diff(javaCache(t, p.do(t, "-", "cache-dump", "java")), want); d != "" {
				return false, "Java's CuratorCache:\n" + d
			}
			return true, ""
		})
		t.Logf("%s: %d nodes, equal", what, c.Len())
		if fault := seed > 1; fault && stale.Load() == stale0 {
			t.Errorf("%s: the Go cache never went stale", what)
		}
	}
	stretch(1, "writes", func(*testing.T) {})
	stretch(2, "a server restart", func(t *testing.T) {
		testutil.Until(t, "Java's first writes", func() (bool, string) { return c.Len() > 5, "" })
		testutil.Must(t, srv.Restart())
	})
	stretch(3, "the Go client's connections dropped", func(*testing.T) { proxy.DropConnections() })
	stretch(4, "the Go client's session expired", func(t *testing.T) {
		testutil.Must(t, proxy.ExpireSession(client.SessionID()))
	})
	stretch(5, "a Go read's reply lost", func(t *testing.T) {
		testutil.Recv(t, proxy.LoseNextReply(zktest.OpGetData), "a read whose reply is lost")
	})
	p.do(t, "-", "cache-close", "java")
}
