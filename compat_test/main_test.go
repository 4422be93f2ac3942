// Package compat_test proves that gocurator and live Apache Curator 5.4
// processes share the same lock trees: real JVMs running Curator's recipes
// (internal/curatorpeer: CuratorPeer.java, compiled once with javac against
// Debian's Curator jars and cached, driven over its line protocol) and this
// library contend for the same locks on one real ZooKeeper. peer_test.go
// ties a peer to a test.
//
// The tests need Java 17+ with javac and the Curator 5.4 and ZooKeeper jars.
// They fail, rather than skip, when these are missing, saying what to
// install (jvm.InstallHint).
package compat_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/jvm"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
)

// server is the real ZooKeeper every test shares. Empty containers are
// reaped every 200 ms, so both languages meet vanished parents often.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err := curatorpeer.Prepare(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat_test: %v\n", err)
		return 1
	}
	s, err := zktest.StartServer(zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second),
		zktest.WithContainerCheckInterval(200*time.Millisecond))
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat_test: starting ZooKeeper: %v\n", err)
		if errors.Is(err, zktest.ErrNotInstalled) {
			fmt.Fprintln(os.Stderr, jvm.InstallHint)
		}
		return 1
	}
	server = s
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "compat_test: Java peer and ZooKeeper ready in %v\n", time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	s.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	return code
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
