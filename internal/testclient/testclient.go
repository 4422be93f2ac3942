// Package testclient makes framework clients for gocurator's own tests. It
// is separate from internal/testutil because it imports framework, whose own
// tests use testutil.
package testclient

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// New connects to servers with a short-fused retry policy, waits for the
// connection, and closes the client when the test ends.
func New(t testing.TB, servers string, opts ...framework.Option) *framework.Client {
	t.Helper()
	c, err := framework.New(servers, retry.NewExponentialBackoff(20*time.Millisecond, 10), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.BlockUntilConnected(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	return c
}

// Connect is the godoc examples' client: connected to the ZooKeeper in
// ZK_SERVERS ("zk1:2181,zk2:2181" in real life; testutil.Main sets it), with
// a context for the example's calls, and a function that ends both.
func Connect() (client *framework.Client, ctx context.Context, done func(), err error) {
	client, err = framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 5))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done = func() {
		cancel()
		client.Close()
	}
	if err := client.BlockUntilConnected(ctx); err != nil {
		done()
		return nil, nil, nil, err
	}
	return client, ctx, done, nil
}
