// Package compat_test proves that gocurator and live Apache Curator 5.4
// processes share the same lock trees: real JVMs running Curator's recipes
// (internal/curatorpeer: CuratorPeer.java, compiled once with javac against
// Debian's Curator jars and cached, driven over its line protocol) and this
// library contend for the same locks on one real ZooKeeper. peer_test.go
// ties a peer to a test.
//
// The tests need Java 17+ with javac and the Curator 5.4 and ZooKeeper jars.
// They fail, rather than skip, when these are missing, saying what to
// install.
package compat_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
)

// server is the real ZooKeeper every test shares. Empty containers are
// reaped every 200 ms, so both languages meet vanished parents often.
var server *zktest.Server

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err := curatorpeer.Prepare(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat_test: %v\n", err)
		os.Exit(1)
	}
	os.Exit(testutil.Main(m, &server, testutil.QuickServer(200*time.Millisecond)...))
}

// newClient connects to addr (the shared server if "") and closes the
// client when the test ends.
func newClient(t testing.TB, addr string, opts ...framework.Option) *framework.Client {
	t.Helper()
	if addr == "" {
		addr = server.Addr()
	}
	return testclient.New(t, addr, opts...)
}

// serverPath returns the test's own path on the shared server, which is
// deleted with everything below it when the test ends.
func serverPath(t testing.TB) string {
	t.Helper()
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	return base
}
