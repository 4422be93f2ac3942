package main

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// The README shows this program as it is, and it runs against a real
// ZooKeeper, leaving no goroutine behind.
func TestREADMEShowsTheExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	program, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)<!-- docs/example/main.go -->\n```go\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no code block marked <!-- docs/example/main.go -->")
	}
	if !bytes.Equal(block[1], program) {
		t.Fatal("README.md's example differs from docs/example/main.go: copy the file into the README")
	}
}

// The server runs in standalone mode, as testutil.Main's do: zktest's
// default, a quorum of one, has ZooKeeper 3.8.0's ZOOKEEPER-4537 (fixed in
// 3.8.1), a lost wake-up in the quorum's CommitProcessor that strands a
// committed request until the server's next request. For the example's
// lone client that is its next ping, 20 s on, past WithLock's 5 s bound on
// a release; and when the request stranded is the handshake's
// createSession, the client sends none: the first create waited out run's
// 30 s context. Standalone mode's own 3.8.0 bug (a connection made while
// the server starts is left hanging) cannot bite a server never restarted.
func TestExampleRuns(t *testing.T) {
	testutil.CheckLeaks(t)
	s := zktest.NewServer(t, zktest.WithStandaloneMode(), zktest.WithTickTime(100*time.Millisecond))
	t.Setenv("ZK_SERVERS", s.Addr())
	if err := run(); err != nil {
		t.Fatal(err)
	}
	if kids := childrenOf(t, s.Addr(), "/locks/orders"); len(kids) != 0 {
		t.Fatalf("lock nodes left: %v", kids)
	}
}

func childrenOf(t *testing.T, servers, path string) []string {
	kids, _, err := testutil.Connect(t, servers).Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return kids
}
