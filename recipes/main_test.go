package recipes

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// server is the real ZooKeeper the package's tests share. Empty containers
// are reaped every 100 ms, so the recipes meet vanished parents all the time.
var server *zktest.Server

func TestMain(m *testing.M) {
	s, err := zktest.StartServer(zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second),
		zktest.WithContainerCheckInterval(100*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper:", err)
		os.Exit(1)
	}
	server = s
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

// newClient connects to servers (the shared server if "") and closes the
// client when the test ends.
func newClient(t testing.TB, servers string, opts ...framework.Option) *framework.Client {
	t.Helper()
	if servers == "" {
		servers = server.Addr()
	}
	c, err := framework.New(servers, retry.NewExponentialBackoff(20*time.Millisecond, 5), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.BlockUntilConnected(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

// mustMutex makes the mutex at path or fails the test.
func mustMutex(t testing.TB, c *framework.Client, path string, opts ...LockOption) *InterProcessMutex {
	t.Helper()
	m, err := NewInterProcessMutex(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// children lists path on the server, or fails the test; a missing path has none.
func children(t testing.TB, path string) []string {
	t.Helper()
	raw := testutil.Connect(t, server.Addr())
	kids, _, err := raw.Children(path)
	if err != nil && err.Error() != "zk: node does not exist" {
		t.Fatal(err)
	}
	return kids
}
