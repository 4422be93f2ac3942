package framework

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// server is the real ZooKeeper the package's tests share; each test works
// under its own path and removes it.
var server *zktest.Server

func TestMain(m *testing.M) {
	s, err := zktest.StartServer(zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper:", err)
		os.Exit(1)
	}
	server = s
	os.Setenv("ZK_SERVERS", s.Addr()) // the examples connect to it as a user's program would
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

// newClient connects to servers (the shared server by default) with a
// short-fused policy and closes the client when the test ends.
func newClient(t *testing.T, servers string, opts ...Option) *Client {
	t.Helper()
	if servers == "" {
		servers = server.Addr()
	}
	c, err := New(servers, retry.NewExponentialBackoff(20*time.Millisecond, 5), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.BlockUntilConnected(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	return c
}
