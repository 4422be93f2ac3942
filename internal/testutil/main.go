package testutil

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework/zktest"
)

// Main is a package's TestMain body for tests that share one real
// ZooKeeper: it starts the server with opts, stores it in *server, points
// ZK_SERVERS at it (examples connect the way a user's program would), runs
// the tests, stops the server, and fails the run if goroutines were left
// behind. It returns the exit code: os.Exit(testutil.Main(m, &server)).
//
// The server runs in ZooKeeper's standalone mode: a one-member quorum,
// zktest's default, has ZooKeeper 3.8.0's ZOOKEEPER-4537, where a lone
// client's request may wait in the server until that client's next ping,
// and its handshake until another client's request (docs/example's test);
// standalone mode's own 3.8.0 bug (a connection made while the server
// starts is left hanging) cannot bite a server that is never restarted.
//
// In a child process of a test (RunChild) it starts no server: the child
// uses its parent's, named by ZK_SERVERS.
func Main(m *testing.M, server **zktest.Server, opts ...zktest.Option) int {
	if IsChild() {
		return m.Run()
	}
	s, err := zktest.StartServer(append([]zktest.Option{zktest.WithStandaloneMode()}, opts...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting ZooKeeper:", err)
		return 1
	}
	*server = s
	os.Setenv("ZK_SERVERS", s.Addr())
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

// LockServer is the options of the server a lock package's tests share
// (recipes', and its engine's): a 100 ms tick, sessions from 200 ms, and
// empty containers reaped every 100 ms, so that the locks meet vanished
// parents all the time.
func LockServer() []zktest.Option {
	return []zktest.Option{zktest.WithTickTime(100 * time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second),
		zktest.WithContainerCheckInterval(100 * time.Millisecond)}
}
