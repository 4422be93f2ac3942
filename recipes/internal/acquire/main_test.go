package acquire

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
)

// The engine's tests: what the recipes cannot see of it (its lister, its
// watches, its trust in a node, its holdings, the settling of a grant's
// end), through its own API, with drivers of the tests' own. What the
// recipes make of it is tested through their public API (recipes_test).

// server is the real ZooKeeper the package's tests share. Empty containers
// are reaped every 100 ms, so the engine meets vanished parents all the time.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, testutil.QuickServer(100*time.Millisecond)...))
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

// queue is the tests' driver of a plain queue, a mutex's rule
// (locktree.Standard with one lease) with neither hand-off nor lookahead:
// a waiter lists again whenever the node it watches goes.
type queue struct{}

func (queue) Sort(children []string) []string {
	return locktree.Sort(children, locktree.KeyFor(locktree.MutexName))
}
func (queue) Order() string { return locktree.MutexName }

func (queue) Check(sorted []string, ourName string) (bool, string, error) {
	held, watch, found := locktree.Standard(sorted, ourName, 1)
	if !found {
		return false, "", ErrVanished
	}
	return held, watch, nil
}

// counting is the tests' counting driver: at most max nodes hold (a
// semaphore's leases, locktree.Leases).
type counting struct{ max int }

func (counting) Sort(children []string) []string { return children }
func (counting) Order() string                   { return "server" }
func (counting) Changed() <-chan struct{}        { return nil }

func (d counting) Check(children []string, ourName string) (bool, string, error) {
	held, found := locktree.Leases(children, ourName, d.max)
	if !found {
		return false, "", ErrVanished
	}
	return held, "", nil
}

// queueAt is the attempt of a plain queue's node at l.
func queueAt(l *Lock) Attempt {
	return Attempt{Path: l.joinPath(locktree.MutexName), Mode: framework.EphemeralSequential, Driver: queue{}}
}

// holdAt acquires a plain queue at base, on a client of its own: a holder
// for the test's waiters to queue behind.
func holdAt(t testing.TB, ctx context.Context, base string) *Grant {
	t.Helper()
	l := NewLock(newClient(t, ""), base)
	g, err := l.Acquire(ctx, queueAt(&l))
	testutil.Must(t, err)
	return g
}

// release releases g and deletes its node, or fails the test.
func release(t testing.TB, ctx context.Context, g *Grant) {
	t.Helper()
	if lost, _ := g.Release(); lost != nil {
		t.Fatal(lost)
	}
	testutil.Must(t, g.Delete(ctx))
}

// acquireAsync acquires a of l on a goroutine of its own.
func acquireAsync(ctx context.Context, l *Lock, a Attempt) <-chan result {
	got := make(chan result, 1)
	go func() {
		g, err := l.Acquire(ctx, a)
		got <- result{g, err}
	}()
	return got
}

type result struct {
	g   *Grant
	err error
}

// children lists path on the server, or fails the test; a missing path has none.
func children(t testing.TB, path string) []string {
	t.Helper()
	return testutil.Children(t, rawConn(t), path)
}

// rawConn returns the test's raw go-zookeeper connection to the shared server.
func rawConn(t testing.TB) *zk.Conn { return testutil.RawConn(t, server.Addr()) }
