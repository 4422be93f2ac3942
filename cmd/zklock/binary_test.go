package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// The zklock binary, built once for the package's tests by zklockBinary
// into binDir, which TestMain removes.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// zklockBinary builds zklock with go build (once per test run) and returns
// its path: exit statuses, signals and stdout/stderr are checked on the
// program operators run, not only on zklockMain.
func zklockBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "zklock-test-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "zklock")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// removeBinary removes what zklockBinary built.
func removeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// process is one run of the zklock binary.
type process struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// startZklock starts the zklock binary with args, ZK_SERVERS pointing at the
// shared server. A process still running when the test ends is killed.
func startZklock(t testing.TB, args ...string) *process {
	t.Helper()
	p := &process{
		cmd:    exec.Command(zklockBinary(t), args...),
		stdout: newSyncBuffer(),
		stderr: newSyncBuffer(),
		done:   make(chan struct{}),
	}
	p.cmd.Env = append(os.Environ(), "ZK_SERVERS="+server.Addr())
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	// After a kill, Wait gives up on pipes a child of the command still
	// holds open (a `sleep` the command ran) instead of waiting for it.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		default:
			p.code = -1
		}
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the process to exit and returns its exit status.
func (p *process) wait(ctx context.Context, t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-ctx.Done():
		t.Fatalf("zklock %q still running: %v; stderr %q", p.cmd.Args[1:], ctx.Err(), p.stderr.String())
		return -1
	}
}

// zklockBin runs the zklock binary with args to its end and returns its
// exit status, stdout and stderr.
func zklockBin(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	p := startZklock(t, args...)
	code := p.wait(testutil.Context(t), t)
	return code, p.stdout.String(), p.stderr.String()
}

func TestBinaryVersionAndHelp(t *testing.T) {
	testutil.CheckLeaks(t)
	code, out, stderr := zklockBin(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "zklock ") || len(strings.Fields(out)) != 2 || stderr != "" {
		t.Errorf("--version: status %d, stdout %q, stderr %q", code, out, stderr)
	}

	// Help asked for goes to stdout and exits 0.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "zklock [global flags] run"},
		{[]string{"-h"}, "zklock [global flags] run"},
		{[]string{"help"}, "zklock [global flags] run"},
		{[]string{"help", "ls"}, "zklock ls [--watch]"},
		{[]string{"run", "--help"}, "zklock run [--read"},
		{[]string{"ls", "-h"}, "zklock ls [--watch]"},
		{[]string{"--json", "revoke", "--help"}, "zklock revoke ["},
	} {
		code, out, stderr := zklockBin(t, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "-servers") || stderr != "" {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", tc.args, code, out, stderr)
		}
	}
	// The session timeout's default, and why it differs from the library's.
	if _, out, _ := zklockBin(t, "-h"); !strings.Contains(out, "half the library's 60s") || !strings.Contains(out, "(default 30s)") ||
		2*defaultSessionTimeout != framework.DefaultSessionTimeout {
		t.Errorf("--session-timeout's help does not give the reason for its default (%v, the library's %v):\n%s", defaultSessionTimeout, framework.DefaultSessionTimeout, out)
	}
	// Each command's help lists its own flags and the global ones, and no
	// other command's.
	for _, tc := range []struct {
		cmd       string
		has, hasn []string
	}{
		{"run", []string{"-acl", "-semaphore", "-revocable", "-servers"}, []string{"-watch", "-force", "-recipe"}},
		{"ls", []string{"-watch", "-recipe", "-max-leases", "-servers", "-json"}, []string{"-acl", "-force", "-data", "-grace"}},
		{"revoke", []string{"-force", "-wait", "-timeout", "-servers", "-json"}, []string{"-acl", "-watch", "-data", "-grace"}},
	} {
		_, out, _ := zklockBin(t, tc.cmd, "-h")
		for _, f := range tc.has {
			if !strings.Contains(out, "  "+f+" ") && !strings.Contains(out, "  "+f+"\n") {
				t.Errorf("%s -h does not list %s:\n%s", tc.cmd, f, out)
			}
		}
		for _, f := range tc.hasn {
			if strings.Contains(out, "  "+f+" ") || strings.Contains(out, "  "+f+"\n") {
				t.Errorf("%s -h lists %s:\n%s", tc.cmd, f, out)
			}
		}
	}

	// A usage error: one line, then a hint to the --help of the command
	// it concerns, on stderr; nothing on stdout; 2, or run's 125. A
	// command's flag given in the wrong place says whose it is.
	for _, tc := range []struct {
		args      []string
		want      int
		msg, hint string
	}{
		{[]string{}, exitUsage, "zklock: no command given", "zklock --help"},
		{[]string{"frobnicate"}, exitUsage, "zklock: unknown command", "zklock --help"},
		{[]string{"ls"}, exitUsage, "zklock: zklock ls wants exactly one PATH", "zklock ls --help"},
		{[]string{"--bogus", "ls", "/a"}, exitUsage, "zklock: flag provided but not defined: -bogus", "zklock ls --help"},
		{[]string{"ls", "-x", "/a"}, exitUsage, "zklock: flag provided but not defined: -x", "zklock ls --help"},
		{[]string{"run", "-x", "/a", "--", "true"}, exitRunFailed, "zklock: flag provided but not defined: -x", "zklock run --help"},
		{[]string{"-v", "run", "/a", "--", "true"}, exitRunFailed, "zklock: -v is a flag of run, not a global one: give it after the command", "zklock run --help"},
		{[]string{"--timeout", "1s", "revoke", "/a"}, exitUsage, "zklock: -timeout is a flag of run and revoke, not a global one", "zklock revoke --help"},
		{[]string{"--acl", "creator", "ls", "/a"}, exitUsage, "zklock: -acl is a flag of run, not a global one", "zklock ls --help"},
		{[]string{"ls", "--acl", "open", "/a"}, exitUsage, "zklock: ls has no flag -acl: it is a flag of run", "zklock ls --help"},
		{[]string{"revoke", "--watch", "/a"}, exitUsage, "zklock: revoke has no flag -watch: it is a flag of ls", "zklock revoke --help"},
		{[]string{"run", "--semaphore", "0", "/a", "--", "true"}, exitRunFailed, "zklock: --semaphore wants a positive number", "zklock run --help"},
		{[]string{"run", "--acl", "creator", "/a", "--", "true"}, exitRunFailed, "zklock: --acl creator needs --auth", "zklock run --help"},
		{[]string{"--bogus", "run", "/a", "--", "true"}, exitRunFailed, "zklock: flag provided but not defined: -bogus", "zklock run --help"},
		{[]string{"--bogus"}, exitUsage, "zklock: flag provided but not defined: -bogus", "zklock --help"},
	} {
		code, out, stderr := zklockBin(t, tc.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != tc.want || out != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], tc.msg) ||
			lines[1] != "Run '"+tc.hint+"' for usage." {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d, %q and a hint to %s", tc.args, code, out, stderr, tc.want, tc.msg, tc.hint)
		}
	}
}

// run's exit statuses, through the program itself: the command's own
// status, whatever it is, and zklock's reserved codes for its own outcomes.
func TestBinaryRunExitStatus(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	for _, tc := range []struct {
		argv []string
		want int
	}{
		{[]string{"sh", "-c", "exit 3"}, 3}, // once zklock's "not acquired"
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + int(syscall.SIGTERM)},
		{[]string{"/nonexistent/zklock-test-command"}, exitNotFound},
	} {
		code, _, stderr := zklockBin(t, append([]string{"run", path, "--"}, tc.argv...)...)
		if code != tc.want {
			t.Errorf("%q: status %d, want %d (stderr %q)", tc.argv, code, tc.want, stderr)
		}
	}

	// No connection: zklock's own failure.
	proxy, err := zktest.StartProxy(server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	closed := proxy.Addr()
	proxy.Close()
	code, _, stderr := zklockBin(t, "--servers", closed, "--connect-timeout", "300ms", "run", path, "--", "true")
	if code != exitRunFailed || !strings.Contains(stderr, "cannot connect") {
		t.Errorf("no server: status %d, stderr %q", code, stderr)
	}

	// Held by another: not acquired, at once with --try-once.
	if kids := rawChildren(t, conn, path); len(kids) != 0 {
		t.Fatalf("lock nodes left behind: %v", kids)
	}
	holdMutex(ctx, t, path)
	code, _, stderr = zklockBin(t, "run", "--try-once", path, "--", "true")
	if code != exitNotAcquired {
		t.Errorf("--try-once on a held lock: status %d, want %d (stderr %q)", code, exitNotAcquired, stderr)
	}

	// A signal while waiting for the lock: 128+N, nothing run, the queued
	// node removed.
	p := startZklock(t, "--json", "run", path, "--", "true")
	testutil.WaitChildren(t, conn, path, 2)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(ctx, t); code != 128+int(syscall.SIGTERM) {
		t.Errorf("SIGTERM while waiting: status %d, stderr %q", code, p.stderr.String())
	}
	lines := jsonLines(t, p.stderr.String())
	if bad := checkFields(lines[len(lines)-1], map[string]any{"event": "interrupted", "outcome": "interrupted",
		"status": 128 + int(syscall.SIGTERM), "command_status": nil}); len(bad) > 0 {
		t.Errorf("SIGTERM while waiting: %v", bad)
	}
	if kids := rawChildren(t, conn, path); len(kids) != 1 {
		t.Errorf("zklock's node left behind: %v", kids)
	}
}

// jsonLines decodes each line of out as a JSON object.
func jsonLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v in line %q of %q", err, l, out)
		}
		lines = append(lines, m)
	}
	return lines
}

// checkFields reports, as "key: got, want" items, the fields of line that
// differ from want; a want of nil means the field must be absent, and
// anyValue that it must be present.
func checkFields(line map[string]any, want map[string]any) []string {
	var bad []string
	for k, w := range want {
		got, ok := line[k]
		switch {
		case w == nil && ok:
			bad = append(bad, fmt.Sprintf("%s: %v, want none", k, got))
		case w == anyValue && !ok:
			bad = append(bad, fmt.Sprintf("%s: missing", k))
		case w != nil && w != anyValue && fmt.Sprint(got) != fmt.Sprint(w):
			bad = append(bad, fmt.Sprintf("%s: %v, want %v", k, got, w))
		}
	}
	sort.Strings(bad)
	return bad
}

// anyValue in checkFields' want: the field must be there, with any value.
const anyValue = "<any>"

// run --json: every line carries the lock's fields, and the last one the
// outcome, the status zklock exits with and the command's own status.
func TestBinaryRunJSON(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())

	// The command ran: its status, and the node, session and token it held.
	code, _, stderr := zklockBin(t, "--json", "run", "-v", path+"/ok", "--", "sh", "-c", "exit 3")
	lines := jsonLines(t, stderr)
	if code != 3 || len(lines) != 3 {
		t.Fatalf("status %d, stderr %q; want 3 and acquired, released, exit", code, stderr)
	}
	for i, ev := range []string{"acquired", "released", "exit"} {
		want := map[string]any{"event": ev, "path": path + "/ok", "kind": "mutex", "node": anyValue, "session": anyValue, "token": anyValue, "message": anyValue}
		if bad := checkFields(lines[i], want); len(bad) > 0 {
			t.Errorf("line %d %v: %v", i, lines[i], bad)
		}
	}
	if bad := checkFields(lines[2], map[string]any{"outcome": "ok", "status": 3, "command_status": 3}); len(bad) > 0 {
		t.Errorf("last line %v: %v", lines[2], bad)
	}
	if bad := checkFields(lines[0], map[string]any{"outcome": nil, "status": nil, "command_status": nil}); len(bad) > 0 {
		t.Errorf("first line %v: %v", lines[0], bad)
	}
	node, _ := lines[2]["node"].(string)
	session, _ := lines[2]["session"].(string)
	token, _ := lines[2]["token"].(float64)
	if !strings.HasPrefix(node, path+"/ok/_c_") || !strings.HasPrefix(session, "0x") || token <= 0 {
		t.Errorf("node %q, session %q, token %v", node, session, token)
	}

	// Not acquired: no node, no command status.
	holdMutex(ctx, t, path+"/held")
	code, _, stderr = zklockBin(t, "--json", "run", "--try-once", path+"/held", "--", "true")
	lines = jsonLines(t, stderr)
	if code != exitNotAcquired || len(lines) != 1 {
		t.Fatalf("not acquired: status %d, stderr %q", code, stderr)
	}
	if bad := checkFields(lines[0], map[string]any{"event": "not-acquired", "outcome": "not-acquired", "status": exitNotAcquired,
		"path": path + "/held", "kind": "mutex", "node": nil, "command_status": nil, "message": anyValue}); len(bad) > 0 {
		t.Errorf("not acquired: %v: %v", lines[0], bad)
	}

	// Revoked while the command ran: stopped, its own status apart.
	p := startZklock(t, "--json", "run", "--revocable", path+"/rev", "--", "sh", "-c", `echo "node=$ZKLOCK_NODE;"; exec sleep 60`)
	out := p.stdout.waitFor(ctx, t, ";")
	node = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(out), "node="), ";")
	if code, _, rerr := zklock(t, "revoke", node); code != 0 {
		t.Fatalf("revoke: status %d, stderr %q", code, rerr)
	}
	code = p.wait(ctx, t)
	lines = jsonLines(t, p.stderr.String())
	last := lines[len(lines)-1]
	if code != exitRevoked || lines[0]["event"] != "revoked" {
		t.Errorf("revoked: status %d, stderr %q", code, p.stderr.String())
	}
	if bad := checkFields(last, map[string]any{"event": "exit", "outcome": "revoked", "status": exitRevoked,
		"command_status": 128 + int(syscall.SIGTERM), "node": node, "kind": "mutex"}); len(bad) > 0 {
		t.Errorf("revoked, last line %v: %v", last, bad)
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

// A lock lost while the command runs: 122, and the command's own status on
// the last line.
func TestBinaryRunLostJSON(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	p := startZklock(t, "--json", "--servers", proxy.Addr(), "--session-timeout", "1s",
		"run", "--grace", "200ms", path, "--", "sh", "-c", "echo ready; exec sleep 60")
	p.stdout.waitFor(ctx, t, "ready")
	proxy.BlackHole() // SUSPENDED after ~2/3 of the session timeout
	code := p.wait(ctx, t)
	proxy.Restore()
	lines := jsonLines(t, p.stderr.String())
	last := lines[len(lines)-1]
	if code != exitLost || lines[0]["event"] != "lost" {
		t.Errorf("status %d, stderr %q", code, p.stderr.String())
	}
	if bad := checkFields(last, map[string]any{"event": "exit", "outcome": "lost", "status": exitLost,
		"command_status": 128 + int(syscall.SIGTERM), "node": anyValue, "session": anyValue, "token": anyValue}); len(bad) > 0 {
		t.Errorf("last line %v: %v", last, bad)
	}
}
