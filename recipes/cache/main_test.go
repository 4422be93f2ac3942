package cache

import (
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/internal/treesnap"
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

// snapshot is what c holds, as a tree snapshot (children: without its
// path's own node).
func snapshot(c *Cache) []treesnap.Node {
	var out []treesnap.Node
	for _, n := range c.Nodes() {
		out = append(out, treesnap.Node{Path: n.Path, Data: n.Data, Czxid: n.Stat.Czxid, Mzxid: n.Stat.Mzxid})
	}
	treesnap.Sort(out)
	return out
}

// waitEqual waits until c is current and holds what the server has at and
// below base (to depth, -1: all; children: without base itself), failing
// the test, with the difference, if it does not within the bound.
func waitEqual(t testing.TB, c *Cache, raw *zk.Conn, base string, depth int, children bool, what string) {
	t.Helper()
	testutil.Must(t, c.AwaitCurrent(testutil.Context(t)))
	testutil.Until(t, what+": the cache equal to the server's tree", func() (bool, string) {
		want, err := treesnap.Read(raw, base, depth)
		testutil.Must(t, err)
		if children && len(want) > 0 {
			want = want[1:] // base sorts first
		}
		d := treesnap.Diff(snapshot(c), want)
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
