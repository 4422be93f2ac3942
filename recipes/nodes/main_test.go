package nodes_test

import (
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// server is the real ZooKeeper the package's tests share, with TTL nodes
// (extended types) on. Empty containers and expired TTL nodes are reaped
// every 100 ms.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, testutil.QuickServer(100*time.Millisecond,
		zktest.WithJVMFlags("-Dzookeeper.extendedTypesEnabled=true"))...))
}

// base returns the test's own path on the shared server, deleted with
// everything below it when the test ends.
func base(t testing.TB) string {
	t.Helper()
	p := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), p)
	return p
}

// stat returns the node's Stat on the server, or nil if it is not there.
func stat(t testing.TB, raw *zk.Conn, path string) *zk.Stat {
	t.Helper()
	ok, st, err := raw.Exists(path)
	testutil.Must(t, err)
	if !ok {
		return nil
	}
	return st
}
