// Package testclient makes framework clients for gocurator's own tests. It
// is separate from internal/testutil because it imports framework, whose own
// tests use testutil.
package testclient

import (
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
