package framework

import (
	"os"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// server is the real ZooKeeper the package's tests share; each test works
// under its own path and removes it.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second)))
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
