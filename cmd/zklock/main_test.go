package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// server is the real ZooKeeper every test of the package shares, each under
// its own path. Sessions may be as short as 200 ms, so lock loss is quick.
var server *zktest.Server

func TestMain(m *testing.M) {
	code := testutil.Main(m, &server, zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second))
	removeBinary()
	os.Exit(code)
}

// newClient connects to servers (the shared server if "") and closes the
// client when the test ends.
func newClient(t testing.TB, servers string, opts ...framework.Option) *framework.Client {
	t.Helper()
	if servers == "" {
		servers = server.Addr()
	}
	return testclient.New(t, servers, opts...)
}

// holdMutex takes the mutex at path on a client of its own, for the rest of
// the test: it is released when the test ends.
func holdMutex(ctx context.Context, t testing.TB, path string) *recipes.Handle {
	t.Helper()
	mu, err := recipes.NewInterProcessMutex(newClient(t, ""), path)
	if err != nil {
		t.Fatal(err)
	}
	h := mu.NewHandle()
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Release(context.Background()) })
	return h
}

// holdLease takes a lease of a semaphore of max leases at path with client
// c, returned when the test ends.
func holdLease(ctx context.Context, t testing.TB, c *framework.Client, path string, max int) *recipes.Lease {
	t.Helper()
	sem, err := recipes.NewInterProcessSemaphoreV2(c, path, max)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lease.Close(context.Background()) })
	return lease
}

// syncBuffer is an io.Writer safe for the command's output copier and the
// test at once, which can wait for a text to appear in it.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

// Write appends p and wakes waitFor.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output contains s, and returns the output.
func (b *syncBuffer) waitFor(ctx context.Context, t testing.TB, s string) string {
	t.Helper()
	for {
		b.mu.Lock()
		out, ch := b.buf.String(), b.changed
		b.mu.Unlock()
		if strings.Contains(out, s) {
			return out
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %q in output: %v; output so far:\n%s", s, ctx.Err(), out)
		}
	}
}

// invocation is one in-process run of zklock.
type invocation struct {
	stdout, stderr *syncBuffer
	signals        chan os.Signal
	env            map[string]string
}

func newInvocation() *invocation {
	return &invocation{stdout: newSyncBuffer(), stderr: newSyncBuffer(), signals: make(chan os.Signal, 1), env: map[string]string{}}
}

// run runs zklock with args and returns its exit status.
func (inv *invocation) run(ctx context.Context, args ...string) int {
	s := streams{stdout: inv.stdout, stderr: inv.stderr, getenv: func(k string) string { return inv.env[k] }}
	return zklockMain(ctx, args, s, inv.signals)
}

// zklock runs zklock against the shared server and returns its status,
// stdout and stderr.
func zklock(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	inv := newInvocation()
	inv.env["ZK_SERVERS"] = server.Addr()
	code := inv.run(testutil.Context(t), args...)
	return code, inv.stdout.String(), inv.stderr.String()
}

// rawChildren lists path on the server; a missing path has none.
func rawChildren(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	kids, _, err := conn.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return kids
}

// createNode creates a persistent node at path, a test's own path: its
// parent, testutil.Root, is a persistent node that testutil.Begin made, so
// no ancestor is missing and none can be reaped.
func createNode(t testing.TB, conn *zk.Conn, path string) {
	t.Helper()
	if _, err := conn.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
}

// tempFile returns a path in the test's temporary directory.
func tempFile(t testing.TB, name string) string {
	return filepath.Join(t.TempDir(), name)
}

func TestUsageErrors(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		want int
		args []string
	}{
		{exitUsage, []string{}},
		{exitUsage, []string{"frobnicate"}},
		{exitUsage, []string{"--bogus", "ls", "/a"}},
		{exitUsage, []string{"ls"}},
		{exitUsage, []string{"ls", "/a", "/b"}},
		{exitUsage, []string{"ls", "relative"}},
		{exitUsage, []string{"ls", "--recipe", "queue", "/a"}},
		{exitUsage, []string{"--auth", "nocolon", "ls", "/a"}},
		{exitUsage, []string{"--acl", "creator", "ls", "/a"}},
		{exitUsage, []string{"ls", "--acl", "open", "/a"}},
		{exitUsage, []string{"revoke", "--acl", "open", "/a"}},
		{exitUsage, []string{"--namespace", "/ns", "ls", "/a"}},
		{exitUsage, []string{"revoke"}},
		{exitUsage, []string{"revoke", "--timeout", "-1s", "/a/b"}},
		// run's usage errors are its own failures: 125, never a status
		// the command could have given.
		{exitRunFailed, []string{"run", "/a"}},
		{exitRunFailed, []string{"run", "/a", "--"}},
		{exitRunFailed, []string{"run", "--read", "--write", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--semaphore", "-1", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--semaphore", "0", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--semaphore", "2", "--revocable", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--error-policy", "never", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--", "/a"}},
		{exitRunFailed, []string{"--auth", "nocolon", "run", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--acl", "creator", "/a", "--", "true"}},
		{exitRunFailed, []string{"run", "--acl", "secret", "/a", "--", "true"}},
		{exitRunFailed, []string{"--bogus", "run", "/a", "--", "true"}},
		{exitRunFailed, []string{"--session-timeout", "1s", "--bogus", "run", "/a", "--", "true"}},
		{exitRunFailed, []string{"--session-timeout", "forever", "run", "/a", "--", "true"}},
	} {
		args := tc.args
		code, _, stderr := zklock(t, args...)
		if code != tc.want {
			t.Errorf("zklock %q: status %d, want %d (stderr %q)", args, code, tc.want, stderr)
		}
		if strings.Contains(stderr, "Usage:") || !strings.HasSuffix(stderr, " --help' for usage.\n") {
			t.Errorf("zklock %q: stderr %q; want the error and a hint, not the usage", args, stderr)
		}
	}
	if code, out, stderr := zklock(t, "ls", "-h"); code != exitOK || !strings.Contains(out, "Usage:") || stderr != "" {
		t.Errorf("ls -h: status %d, stdout %q, stderr %q", code, out, stderr)
	}
	if code, out, _ := zklock(t, "help"); code != exitOK || !strings.Contains(out, "zklock [global flags] run") {
		t.Errorf("help: status %d, output %q", code, out)
	}
}

func TestParseArgsInterleaved(t *testing.T) {
	testutil.CheckLeaks(t)
	// Flags may follow PATH for ls; everything after PATH is COMMAND for a
	// run without "--".
	code, out, stderr := zklock(t, "ls", "/gocurator-test/none", "--json", "--recipe", "rw")
	if code != 0 || !strings.Contains(out, `"exists":false`) {
		t.Errorf("ls PATH --json on a missing path: status %d, stdout %q, stderr %q", code, out, stderr)
	}
	var o runOptions
	fs := runFlags(&globalOptions{}, &o)
	if err := parseRunArgs(fs, []string{"--write", "/p", "ls", "-l", "--", "x"}, &o); err != nil {
		t.Fatal(err)
	}
	if o.path != "/p" || strings.Join(o.argv, " ") != "ls -l -- x" {
		t.Errorf("without --: path %q argv %q", o.path, o.argv)
	}
	o = runOptions{}
	if err := parseRunArgs(fs, []string{"/p", "--write", "--", "ls", "-l"}, &o); err != nil {
		t.Fatal(err)
	}
	if o.path != "/p" || strings.Join(o.argv, " ") != "ls -l" {
		t.Errorf("with --: path %q argv %q", o.path, o.argv)
	}
}

func TestConnectFailure(t *testing.T) {
	testutil.CheckLeaks(t)
	inv := newInvocation()
	// A port nothing listens on: the proxy's, once closed.
	p, err := zktest.StartProxy(server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	addr := p.Addr()
	p.Close()
	code := inv.run(testutil.Context(t), "--servers", addr, "--connect-timeout", "300ms", "ls", "/a")
	if code != exitError || !strings.Contains(inv.stderr.String(), "cannot connect") {
		t.Errorf("ls: status %d, stderr %q", code, inv.stderr.String())
	}
	// run: zklock's own failure, 125, not a status the command could give.
	inv = newInvocation()
	code = inv.run(testutil.Context(t), "--servers", addr, "--connect-timeout", "300ms", "run", "/a", "--", "true")
	if code != exitRunFailed || !strings.Contains(inv.stderr.String(), "cannot connect") {
		t.Errorf("run: status %d, stderr %q", code, inv.stderr.String())
	}
}
