package main

import (
	"context"
	"os"
	"sort"
	"strings"
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
	os.RemoveAll(binDir) // what zklockBinary built, if it did
	os.Exit(code)
}

// newClient connects to the shared server and closes the client when the
// test ends.
func newClient(t testing.TB, opts ...framework.Option) *framework.Client {
	t.Helper()
	return testclient.New(t, server.Addr(), opts...)
}

// holdMutex takes the mutex at path on a client of its own, for the rest of
// the test: it is released when the test ends.
func holdMutex(ctx context.Context, t testing.TB, path string) *recipes.Handle {
	t.Helper()
	mu, err := recipes.NewInterProcessMutex(newClient(t), path)
	testutil.Must(t, err)
	h := mu.NewHandle()
	testutil.Must(t, h.Acquire(ctx))
	t.Cleanup(func() { _ = h.Release(context.Background()) })
	return h
}

// holdLease takes a lease of a semaphore of max leases at path with client
// c, returned when the test ends.
func holdLease(ctx context.Context, t testing.TB, c *framework.Client, path string, max int) *recipes.Lease {
	t.Helper()
	sem, err := recipes.NewInterProcessSemaphoreV2(c, path, max)
	testutil.Must(t, err)
	lease, err := sem.Acquire(ctx)
	testutil.Must(t, err)
	t.Cleanup(func() { _ = lease.Close(context.Background()) })
	return lease
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

// Version, help and usage errors, the same in-process and from the binary.
func TestHelpAndUsageErrors(t *testing.T) {
	testutil.CheckLeaks(t)
	code, out, stderr := zklockBin(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "zklock ") || len(strings.Fields(out)) != 2 || stderr != "" {
		t.Errorf("--version: status %d, stdout %q, stderr %q", code, out, stderr)
	}

	// Help asked for goes to stdout and exits 0, with the global flags (the
	// session timeout's default says why it is not the library's). Each
	// command's lists its own flags (has), and no other command's (hasn).
	if 2*defaultSessionTimeout != framework.DefaultSessionTimeout {
		t.Errorf("--session-timeout's default %v is not half the library's %v", defaultSessionTimeout, framework.DefaultSessionTimeout)
	}
	for _, tc := range []struct {
		args      []string
		want      string
		has, hasn []string
	}{
		{[]string{"--help"}, "zklock [global flags] run", nil, nil},
		{[]string{"-h"}, "zklock [global flags] run", nil, nil},
		{[]string{"help"}, "zklock [global flags] run", nil, nil},
		{[]string{"help", "ls"}, "zklock ls [--watch]", nil, nil},
		{[]string{"run", "--help"}, "zklock run [--read", []string{"-acl", "-semaphore", "-revocable", "-servers"}, []string{"-watch", "-force", "-recipe"}},
		{[]string{"ls", "-h"}, "zklock ls [--watch]", []string{"-watch", "-recipe", "-max-leases", "-servers", "-json"}, []string{"-acl", "-force", "-data", "-grace"}},
		{[]string{"--json", "revoke", "--help"}, "zklock revoke [", []string{"-force", "-wait", "-timeout", "-servers", "-json"}, []string{"-acl", "-watch", "-data", "-grace"}},
	} {
		code, out, stderr := both(t, tc.args...)
		if code != 0 || !strings.Contains(out, "Usage:") || !strings.Contains(out, tc.want) || !strings.Contains(out, "-servers") || stderr != "" ||
			!strings.Contains(out, "half the library's 60s") || !strings.Contains(out, "(default 30s)") {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", tc.args, code, out, stderr)
		}
		for _, f := range tc.has {
			if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
				t.Errorf("%q does not list %s:\n%s", tc.args, f, out)
			}
		}
		for _, f := range tc.hasn {
			if strings.Contains(out, "  "+f+" ") || strings.Contains(out, "  "+f+"\n") {
				t.Errorf("%q lists %s:\n%s", tc.args, f, out)
			}
		}
	}

	// A usage error: one line ("zklock: " and msg), then a hint (to the
	// --help of the command it concerns, hint if given), on stderr, not
	// the usage; nothing on stdout. It exits 2, or for run 125, never a
	// status the command could have given. A command's flag given in the
	// wrong place says whose it is.
	for _, tc := range []struct {
		args      []string
		want      int
		msg, hint string
	}{
		{[]string{}, exitUsage, "no command given", "zklock --help"},
		{[]string{"frobnicate"}, exitUsage, "unknown command", "zklock --help"},
		{[]string{"--bogus"}, exitUsage, "flag provided but not defined: -bogus", "zklock --help"},
		{[]string{"ls"}, exitUsage, "zklock ls wants exactly one PATH", "zklock ls --help"},
		{[]string{"--bogus", "ls", "/a"}, exitUsage, "flag provided but not defined: -bogus", "zklock ls --help"},
		{[]string{"ls", "-x", "/a"}, exitUsage, "flag provided but not defined: -x", "zklock ls --help"},
		{[]string{"--timeout", "1s", "revoke", "/a"}, exitUsage, "-timeout is a flag of run and revoke, not a global one", "zklock revoke --help"},
		{[]string{"--acl", "creator", "ls", "/a"}, exitUsage, "-acl is a flag of run, not a global one", "zklock ls --help"},
		{[]string{"ls", "--acl", "open", "/a"}, exitUsage, "ls has no flag -acl: it is a flag of run", "zklock ls --help"},
		{[]string{"revoke", "--watch", "/a"}, exitUsage, "revoke has no flag -watch: it is a flag of ls", "zklock revoke --help"},
		{[]string{"ls", "/a", "/b"}, exitUsage, "", ""},
		{[]string{"ls", "relative"}, exitUsage, "", ""},
		{[]string{"ls", "--recipe", "queue", "/a"}, exitUsage, "", ""},
		{[]string{"--auth", "nocolon", "ls", "/a"}, exitUsage, "", ""},
		{[]string{"revoke", "--acl", "open", "/a"}, exitUsage, "", ""},
		{[]string{"--namespace", "/ns", "ls", "/a"}, exitUsage, "", ""},
		{[]string{"revoke"}, exitUsage, "", ""},
		{[]string{"revoke", "--timeout", "-1s", "/a/b"}, exitUsage, "", ""},
		{[]string{"run", "-x", "/a", "--", "true"}, exitRunFailed, "flag provided but not defined: -x", "zklock run --help"},
		{[]string{"-v", "run", "/a", "--", "true"}, exitRunFailed, "-v is a flag of run, not a global one: give it after the command", "zklock run --help"},
		{[]string{"run", "--semaphore", "0", "/a", "--", "true"}, exitRunFailed, "--semaphore wants a positive number", "zklock run --help"},
		{[]string{"run", "--acl", "creator", "/a", "--", "true"}, exitRunFailed, "--acl creator needs --auth", "zklock run --help"},
		{[]string{"--bogus", "run", "/a", "--", "true"}, exitRunFailed, "flag provided but not defined: -bogus", "zklock run --help"},
		{[]string{"run", "/a"}, exitRunFailed, "", ""},
		{[]string{"run", "/a", "--"}, exitRunFailed, "", ""},
		{[]string{"run", "--read", "--write", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"run", "--semaphore", "-1", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"run", "--semaphore", "2", "--revocable", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"run", "--error-policy", "never", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"run", "--", "/a"}, exitRunFailed, "", ""},
		{[]string{"--auth", "nocolon", "run", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"run", "--acl", "secret", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"--session-timeout", "1s", "--bogus", "run", "/a", "--", "true"}, exitRunFailed, "", ""},
		{[]string{"--session-timeout", "forever", "run", "/a", "--", "true"}, exitRunFailed, "", ""},
	} {
		code, out, stderr := both(t, tc.args...)
		lines := strings.Split(stderr, "\n") // the message, the hint and "" after the last newline
		if code != tc.want || out != "" || len(lines) != 3 || lines[2] != "" || strings.Contains(stderr, "Usage:") ||
			!strings.HasPrefix(lines[0], "zklock: "+tc.msg) || !strings.HasSuffix(lines[1], " --help' for usage.") ||
			(tc.hint != "" && lines[1] != "Run '"+tc.hint+"' for usage.") {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d, %q and a hint to %s", tc.args, code, out, stderr, tc.want, tc.msg, tc.hint)
		}
	}
}

func TestParseArgsInterleaved(t *testing.T) {
	testutil.CheckLeaks(t)
	// Flags may follow run's PATH; then everything from the first argument
	// that is not a flag, or after a "--", is COMMAND (flags may follow
	// PATH for ls: TestBinaryLsEmptyLocksContainer).
	for args, argv := range map[string]string{"--write /p ls -l -- x": "ls -l -- x", "/p --write -- ls -l": "ls -l"} {
		var o runOptions
		err := parseRunArgs(runFlags(&globalOptions{}, &o), strings.Fields(args), &o)
		if err != nil || o.path != "/p" || strings.Join(o.argv, " ") != argv || !o.write {
			t.Errorf("%s: path %q, argv %q, --write %v, %v", args, o.path, o.argv, o.write, err)
		}
	}
}

// No server: an error for ls, zklock's own failure for run (125, not a
// status the command could give).
func TestConnectFailure(t *testing.T) {
	testutil.CheckLeaks(t)
	// A port nothing listens on: the proxy's, once closed.
	p, err := zktest.StartProxy(server.Addr())
	testutil.Must(t, err)
	closed := p.Addr()
	p.Close()
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"ls", "/a"}, exitError},
		{[]string{"run", "/a", "--", "true"}, exitRunFailed},
	} {
		code, _, stderr := both(t, append([]string{"--servers", closed, "--connect-timeout", "300ms"}, tc.args...)...)
		if code != tc.want || !strings.Contains(stderr, "cannot connect") {
			t.Errorf("%q: status %d, stderr %q", tc.args, code, stderr)
		}
	}
}

// Every JSON error line, of every command and of the top level, has the
// same fields, exactly, and its status is the status zklock exits with.
func TestBinaryJSONErrorLines(t *testing.T) {
	_, path := testutil.Begin(t, server.Addr())
	for _, tc := range []struct {
		args    []string
		status  int
		outcome string
	}{
		{[]string{"--json", "--bogus"}, exitUsage, "error"},
		{[]string{"--json", "-v", "run", path, "--", "true"}, exitRunFailed, "error"},
		{[]string{"--json", "run", "--semaphore", "0", path, "--", "true"}, exitRunFailed, "error"},
		{[]string{"--json", "run", path, "--", "/nonexistent/zklock-test-command"}, exitNotFound, "not-found"},
		{[]string{"--json", "ls"}, exitUsage, "error"},
		{[]string{"--json", "ls", "--connect-timeout", "1ns", path}, exitError, "error"},
		{[]string{"--json", "revoke"}, exitUsage, "error"},
		{[]string{"--json", "revoke", path + "/none"}, exitError, "error"},
	} {
		code, _, stderr := zklockBin(t, tc.args...)
		lines := jsonLines(t, stderr)
		last := lines[len(lines)-1]
		var keys []string
		for k := range last {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if code != tc.status || strings.Join(keys, ",") != "event,message,outcome,status" ||
			last["event"] != "error" || last["outcome"] != tc.outcome || last["status"] != float64(tc.status) {
			t.Errorf("%q: status %d, last line of stderr %v; want %d, and exactly event error, outcome %s, status and message", tc.args, code, last, tc.status, tc.outcome)
		}
	}
}
