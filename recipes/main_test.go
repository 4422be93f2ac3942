package recipes_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// server is the real ZooKeeper the package's tests share. Empty containers
// are reaped every 100 ms, so the recipes meet vanished parents all the time.
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

// mustMutex makes the mutex at path or fails the test.
func mustMutex(t testing.TB, c *framework.Client, path string, opts ...recipes.LockOption) *recipes.InterProcessMutex {
	t.Helper()
	m, err := recipes.NewInterProcessMutex(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// children lists path on the server, or fails the test; a missing path has none.
func children(t testing.TB, path string) []string {
	t.Helper()
	return testutil.Children(t, rawConn(t), path)
}

// rawConn returns the test's raw go-zookeeper connection to the shared server.
func rawConn(t testing.TB) *zk.Conn { return testutil.RawConn(t, server.Addr()) }

// eventLog records, in order, what goroutines of a test saw happen.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) note(event string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, event)
}

func (l *eventLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return fmt.Sprint(l.events)
}

// assertClosed fails the test unless ch is closed now.
func assertClosed(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	default:
		t.Fatalf("%s is not closed", what)
	}
}

// runAll runs fn(0) to fn(n-1) on goroutines of their own, waits for them,
// and fails the test with the errors they return.
func runAll(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- fn(i)
		}()
	}
	testutil.Wait(t, &wg, "the goroutines of runAll")
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// lockRounds acquires l, runs body(round) under it, and releases it, rounds
// times; it stops at the first error.
func lockRounds(ctx context.Context, l recipes.Locker, rounds int, body func(round int) error) error {
	for r := 0; r < rounds; r++ {
		if err := l.Acquire(ctx); err != nil {
			return err
		}
		err := body(r)
		if rerr := l.Release(ctx); err == nil {
			err = rerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tokenOf returns what FencingToken returns, and fails the test on an error.
func tokenOf(t testing.TB, holder interface {
	FencingToken(context.Context) (int64, error)
}) int64 {
	t.Helper()
	tok, err := holder.FencingToken(testutil.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
