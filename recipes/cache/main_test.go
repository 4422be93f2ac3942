package cache

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
)

// server is the real ZooKeeper the package's tests share; each test works
// under its own path and removes it.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second)))
}

// newClient connects to servers (the shared server if "") and closes the
// client when the test ends.
func newClient(t testing.TB, servers string, opts ...framework.Option) *framework.Client {
	t.Helper()
	if servers == "" {
		servers = server.Addr()
	}
	return testclient.New(t, servers, opts...)
}

// basePath is the test's own path on the shared server, removed with
// everything below it when the test ends.
func basePath(t testing.TB) string {
	t.Helper()
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	return base
}

// mustCache makes a cache and closes it when the test ends.
func mustCache(t testing.TB, make func() (*Cache, error)) *Cache {
	t.Helper()
	c, err := make()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// serverTree reads the nodes at and below base from the server, as a cache
// of them holds them (sorted as Nodes sorts them), to depth levels below
// base (-1: all).
func serverTree(t testing.TB, raw *zk.Conn, base string, depth int) []Node {
	t.Helper()
	var out []Node
	var visit func(p string, d int) bool
	visit = func(p string, d int) bool {
		data, stat, err := raw.Get(p)
		if err == zk.ErrNoNode {
			return false // gone meanwhile: the caller reads again
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Node{Path: p, Data: data, Stat: *stat})
		if depth >= 0 && d >= depth {
			return true
		}
		kids, _, err := raw.Children(p)
		if err == zk.ErrNoNode {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(kids)
		for _, k := range kids {
			if !visit(framework.JoinPath(p, k), d+1) {
				return false
			}
		}
		return true
	}
	for !visit(base, 0) {
		out = out[:0]
		if ok, _, err := raw.Exists(base); err != nil {
			t.Fatal(err)
		} else if !ok {
			return nil
		}
	}
	return out
}

// diff says how two copies of a tree differ: "" when equal (paths, data,
// and the zxids of each node's creation and last change).
func diff(got, want []Node) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i].Path < want[j].Path:
			fmt.Fprintf(&b, "  extra %s\n", got[i].Path)
			i++
		case i == len(got) || want[j].Path < got[i].Path:
			fmt.Fprintf(&b, "  missing %s\n", want[j].Path)
			j++
		default:
			g, w := got[i], want[j]
			if !bytes.Equal(g.Data, w.Data) || g.Stat.Czxid != w.Stat.Czxid || g.Stat.Mzxid != w.Stat.Mzxid {
				fmt.Fprintf(&b, "  %s: holds %q (czxid %d, mzxid %d), the server %q (czxid %d, mzxid %d)\n",
					g.Path, g.Data, g.Stat.Czxid, g.Stat.Mzxid, w.Data, w.Stat.Czxid, w.Stat.Mzxid)
			}
			i, j = i+1, j+1
		}
	}
	return b.String()
}

// sortedByPath returns nodes sorted by path (Nodes sorts parents first and
// siblings by name, which is not byte order: "/a/b" < "/a-c" < "/a/c").
func sortedByPath(nodes []Node) []Node {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
	return nodes
}

// waitEqual waits until c is current and holds what the server has at and
// below base (to depth, -1: all; children: without base itself), failing
// the test, with the difference, if it does not within the bound.
func waitEqual(t testing.TB, c *Cache, raw *zk.Conn, base string, depth int, children bool, what string) {
	t.Helper()
	testutil.Must(t, c.AwaitCurrent(testutil.Context(t)))
	testutil.Until(t, what+": the cache equal to the server's tree", func() (bool, string) {
		want := serverTree(t, raw, base, depth)
		if children && len(want) > 0 {
			want = want[1:]
		}
		d := diff(sortedByPath(c.Nodes()), sortedByPath(want))
		if d == "" && c.Stale() {
			d = "stale"
		}
		return d == "", "\n" + d
	})
}

// recorder is a listener that keeps what it hears for the test to wait on.
type recorder struct {
	mu     sync.Mutex
	events []Event
	added  chan struct{}
	next   int
}

func newRecorder() *recorder { return &recorder{added: make(chan struct{}, 1)} }

func (r *recorder) CacheEvent(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	select {
	case r.added <- struct{}{}:
	default:
	}
}

// want waits for the next event and fails unless it has type typ and (for a
// node event) path.
func (r *recorder) want(t testing.TB, typ EventType, path string) Event {
	t.Helper()
	deadline := time.After(testutil.Timeout)
	for {
		r.mu.Lock()
		if r.next < len(r.events) {
			e := r.events[r.next]
			r.next++
			r.mu.Unlock()
			if e.Type != typ || e.Node.Path != path {
				t.Fatalf("heard %v; want %v %s", e, typ, path)
			}
			return e
		}
		r.mu.Unlock()
		select {
		case <-r.added:
		case <-deadline:
			t.Fatalf("no event within %v; want %v %s", testutil.Timeout, typ, path)
		}
	}
}

// rest returns the events not yet taken, and takes them.
func (r *recorder) rest() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.events[r.next:])
	r.next = len(r.events)
	return out
}
