package otelmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/retry"
)

// The package's tests use the core module's public API only (framework,
// recipes, zktest): no package of its internal/, which a core release may
// change under an older otelmetrics. Hence the few helpers below, this
// module's own.

// server is the real ZooKeeper the package's tests and its examples share,
// in ZooKeeper's standalone mode (ZooKeeper 3.8.0's one-member quorum can
// hold a lone client's request until its next ping: ZOOKEEPER-4537).
var server *zktest.Server

// timeout bounds every wait of the tests, so that a broken feature fails a
// test instead of hanging it.
const timeout = 60 * time.Second

// TestMain starts the server, points ZK_SERVERS at it (the examples
// connect as a user's program would), runs the tests, and fails the run if
// goroutines were left behind.
func TestMain(m *testing.M) {
	s, err := zktest.StartServer(zktest.WithStandaloneMode())
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper:", err)
		os.Exit(1)
	}
	server = s
	os.Setenv("ZK_SERVERS", s.Addr())
	code := m.Run()
	s.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// begin is a test's preamble: a goroutine-leak check (call begin first), a
// context bounded by timeout, and the test's own path, deleted with all
// below it when the test ends.
func begin(t *testing.T) (context.Context, string) {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	base := "/otelmetrics-test/" + strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	c := newClient(t, server.Addr())
	t.Cleanup(func() {
		if err := deleteTree(ctx, c, base); err != nil {
			t.Errorf("cleaning up %s: %v", base, err)
		}
	})
	return ctx, base
}

// deleteTree deletes path and all below it; a missing path is no error.
func deleteTree(ctx context.Context, c *framework.Client, path string) error {
	kids, _, err := c.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if err := deleteTree(ctx, c, path+"/"+k); err != nil {
			return err
		}
	}
	if err := c.Delete(ctx, path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// newClient connects to servers with a short-fused retry policy, waits for
// the connection, and closes the client when the test ends.
func newClient(t *testing.T, servers string, opts ...framework.Option) *framework.Client {
	t.Helper()
	c, err := framework.New(servers, retry.NewExponentialBackoff(20*time.Millisecond, 10), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// recv returns the next value from ch, waiting at most timeout; past it,
// it fails the test saying what it waited for.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing within %v", what, timeout)
	}
	var zero T
	return zero
}

// errorIs fails the test unless err wraps target and says "gocurator: "
// once at most.
func errorIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("error %v does not wrap %v", err, target)
		return
	}
	if n := strings.Count(err.Error(), "gocurator: "); n > 1 {
		t.Errorf("error says \"gocurator: \" %d times: %v", n, err)
	}
}

// waitChildren waits, with watches, until path has n children.
func waitChildren(t *testing.T, ctx context.Context, c *framework.Client, path string, n int) {
	t.Helper()
	for {
		kids, _, w, err := c.ChildrenW(ctx, path)
		if err != nil {
			t.Fatalf("children of %s: %v", path, err)
		}
		if len(kids) == n {
			return
		}
		select {
		case <-w:
		case <-ctx.Done():
			t.Fatalf("%s has %d children, not %d: %v", path, len(kids), n, kids)
		}
	}
}
