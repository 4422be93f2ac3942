package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"

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
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		if binDir, buildErr = os.MkdirTemp("", "zklock-test-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "zklock")
		out, err := exec.Command(goTool, "build", "-o", binPath, ".").CombinedOutput()
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
		{[]string{"help", "ls"}, "zklock ls [--recipe"},
		{[]string{"run", "--help"}, "zklock run [--read"},
		{[]string{"ls", "-h"}, "zklock ls [--recipe"},
		{[]string{"--json", "revoke", "--help"}, "zklock revoke ["},
	} {
		code, out, stderr := zklockBin(t, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) || !strings.Contains(out, "-servers") || stderr != "" {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want 0 and the usage on stdout", tc.args, code, out, stderr)
		}
	}

	// A usage error: the message and the usage on stderr, nothing on
	// stdout; 2, or run's 125.
	for _, tc := range []struct {
		args      []string
		want      int
		msg, used string
	}{
		{[]string{}, exitUsage, "no command", "zklock [global flags] run"},
		{[]string{"frobnicate"}, exitUsage, "unknown command", "zklock [global flags] run"},
		{[]string{"ls"}, exitUsage, "exactly one PATH", "zklock ls [--recipe"},
		{[]string{"--bogus", "ls", "/a"}, exitUsage, "-bogus", "zklock [global flags] run"},
		{[]string{"run", "--semaphore", "0", "/a", "--", "true"}, exitRunFailed, "--semaphore wants a positive number", "zklock run [--read"},
		{[]string{"run", "--semaphore", "x", "/a", "--", "true"}, exitRunFailed, "not a number", "zklock run [--read"},
		{[]string{"--bogus", "run", "/a", "--", "true"}, exitRunFailed, "-bogus", "zklock [global flags] run"},
	} {
		code, out, stderr := zklockBin(t, tc.args...)
		if code != tc.want || out != "" || !strings.Contains(stderr, tc.msg) || !strings.Contains(stderr, "Usage:") || !strings.Contains(stderr, tc.used) {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d, %q and the usage on stderr", tc.args, code, out, stderr, tc.want, tc.msg)
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
	proxy, err := zktest.NewProxy(server.Addr())
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
	p := startZklock(t, "run", path, "--", "true")
	waitChildren(ctx, t, conn, path, 2)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(ctx, t); code != 128+int(syscall.SIGTERM) {
		t.Errorf("SIGTERM while waiting: status %d, stderr %q", code, p.stderr.String())
	}
	if kids := rawChildren(t, conn, path); len(kids) != 1 {
		t.Errorf("zklock's node left behind: %v", kids)
	}
}
