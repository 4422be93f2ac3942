package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// run passes the lock's fencing token, node, kind, path and session to the
// command, and with --json -v reports them on every line: the last one
// also has the outcome, the status zklock exits with and the command's
// own. In-process and from the binary; the second run gets a higher token.
func TestRunPassesTokenAndNode(t *testing.T) {
	_, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	var last int64
	for _, inProcess := range []bool{true, false} {
		code, out, stderr := startZklock(t, inProcess, "--json", "run", "-v", path, "--", "sh", "-c",
			`echo "$ZKLOCK_TOKEN $ZKLOCK_NODE $ZKLOCK_KIND $ZKLOCK_PATH $ZKLOCK_SESSION"; exit 3`).result()
		f, lines := strings.Fields(out), jsonLines(t, stderr)
		if code != 3 || len(f) != 5 || len(lines) != 3 {
			t.Fatalf("status %d, stdout %q, stderr %q; want 3, the environment, and acquired, released, exit", code, out, stderr)
		}
		token, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || token <= last {
			t.Errorf("ZKLOCK_TOKEN %q is not above the last run's %d", f[0], last)
		}
		last = token
		parent, name := framework.SplitPath(f[1])
		if parent != path || !framework.IsProtectedName(name) || !strings.Contains(name, "-lock-") {
			t.Errorf("ZKLOCK_NODE %q is not a Curator mutex node under %s", f[1], path)
		}
		if f[2] != "mutex" || f[3] != path || !strings.HasPrefix(f[4], "0x") {
			t.Errorf("ZKLOCK_KIND, _PATH, _SESSION: %q", f[2:])
		}
		for i, ev := range []string{"acquired", "released", "exit"} {
			want := map[string]any{"event": ev, "path": path, "kind": "mutex", "node": f[1], "session": f[4], "token": anyValue, "message": anyValue}
			if bad := checkFields(lines[i], want); len(bad) > 0 || lines[i]["token"] != float64(token) {
				t.Errorf("line %d %v: %v, token not %d", i, lines[i], bad, token)
			}
		}
		if bad := checkFields(lines[2], map[string]any{"outcome": "ok", "status": 3, "command_status": 3}); len(bad) > 0 {
			t.Errorf("last line %v: %v", lines[2], bad)
		}
		if bad := checkFields(lines[0], map[string]any{"outcome": nil, "status": nil, "command_status": nil}); len(bad) > 0 {
			t.Errorf("first line %v: %v", lines[0], bad)
		}
		if kids := testutil.Children(t, conn, path); len(kids) != 0 {
			t.Errorf("lock node left behind: %v", kids)
		}
	}
}

// A lock whose fencing token cannot be read after acquiring runs nothing.
// Here the reply to the token's Exists is lost and the connection dropped,
// so the lock is lost (SUSPENDED) before the token comes: zklock exits 122
// and the command does not run. With PATH already there, the token's is
// the first Exists zklock sends (an uncontended acquire is a create and a
// listing; only missing parents cost Exists calls). Closing the session
// removes the node.
func TestRunNoTokenRunsNothing(t *testing.T) {
	_, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	createNode(t, conn, path)
	proxy := zktest.NewProxy(t, server.Addr())
	fired := proxy.LoseNextReply(zktest.OpExists)
	code, out, stderr := zklock(t, "--servers", proxy.Addr(), "run", path, "--", "echo", "ran")
	select {
	case <-fired:
	default:
		t.Fatalf("no Exists reply was lost; status %d, stderr %q", code, stderr)
	}
	if code != exitLost || !strings.Contains(stderr, "fencing token") || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("status %d, stderr %q; want %d and a report that the token could not be read", code, stderr, exitLost)
	}
	if out != "" {
		t.Errorf("the command ran without a fencing token: stdout %q", out)
	}
	testutil.WaitChildren(t, conn, path, 0)
}

// run's exit statuses: the command's own status, whatever it is, and
// zklock's reserved codes for its own outcomes, the same in-process and
// from the binary.
func TestRunExitStatus(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	for _, tc := range []struct {
		argv []string
		want int
	}{
		{[]string{"true"}, 0},
		{[]string{"sh", "-c", "exit 7"}, 7},
		// The command's own status, even where it is one of zklock's.
		{[]string{"sh", "-c", "exit 3"}, 3},
		{[]string{"sh", "-c", "exit 124"}, 124},
		{[]string{"sh", "-c", "kill -TERM $$"}, 128 + int(syscall.SIGTERM)},
		{[]string{"/nonexistent/zklock-test-command"}, exitNotFound},
		{[]string{os.DevNull}, exitCannotRun},
	} {
		code, _, stderr := both(t, append([]string{"run", path, "--"}, tc.argv...)...)
		if code != tc.want {
			t.Errorf("%q: status %d, want %d (stderr %q)", tc.argv, code, tc.want, stderr)
		}
	}
	conn := testutil.Connect(t, server.Addr())
	if kids := testutil.Children(t, conn, path); len(kids) != 0 {
		t.Errorf("lock nodes left behind: %v", kids)
	}

	// Held by another: not acquired (124), at once with --try-once (with
	// --json: no node, no command status), after --timeout otherwise, or
	// until a signal. Nothing is run and no node is left.
	h := holdMutex(ctx, t, path)
	code, out, stderr := both(t, "run", "--try-once", path, "--", "echo", "ran")
	if code != exitNotAcquired || !strings.Contains(stderr, "held by another participant") || out != "" {
		t.Errorf("status %d, stdout %q, stderr %q", code, out, stderr)
	}
	startZklock(t, false, "--json", "run", "--try-once", path, "--", "true").jsonLine(exitNotAcquired, map[string]any{"event": "not-acquired",
		"outcome": "not-acquired", "status": exitNotAcquired, "path": path, "kind": "mutex", "node": nil, "command_status": nil, "message": anyValue})
	_, holder := framework.SplitPath(h.LockPath())
	if kids := testutil.Children(t, conn, path); len(kids) != 1 || kids[0] != holder {
		t.Errorf("children %v, want only the holder %s", kids, holder)
	}

	startZklock(t, true, "run", "--timeout", "200ms", path, "--", "echo", "ran").fails(exitNotAcquired, "not acquired within")
	if kids := testutil.Children(t, conn, path); len(kids) != 1 {
		t.Errorf("--timeout left %v", kids)
	}

	// A signal while waiting, in-process and to the binary: 128+N, nothing
	// run, the queued node removed.
	for _, inProcess := range []bool{true, false} {
		p := startZklock(t, inProcess, "--json", "run", path, "--", "true")
		testutil.WaitChildren(t, conn, path, 2) // zklock is queued
		p.signal(syscall.SIGTERM)
		if code := p.wait(); code != 128+int(syscall.SIGTERM) {
			t.Errorf("in-process %v: status %d, stderr %q", inProcess, code, p.stderr.String())
		}
		lines := jsonLines(t, p.stderr.String())
		if bad := checkFields(lines[len(lines)-1], map[string]any{"event": "interrupted", "outcome": "interrupted",
			"status": 128 + int(syscall.SIGTERM), "command_status": nil}); len(bad) > 0 {
			t.Errorf("in-process %v: %v", inProcess, bad)
		}
		if kids := testutil.Children(t, conn, path); len(kids) != 1 {
			t.Errorf("in-process %v: zklock's node left behind: %v", inProcess, kids)
		}
	}
}

func TestRunForwardsSignals(t *testing.T) {
	for name, sig := range map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT} {
		t.Run(name, func(t *testing.T) {
			if signal.Ignored(sig) {
				// Inherited by the command, where a shell cannot trap it
				// (a test binary started in the background ignores SIGINT).
				t.Skipf("%v is ignored by this process, and so by the command", sig)
			}
			ctx, path := testutil.Begin(t, server.Addr())
			conn := testutil.Connect(t, server.Addr())
			// wait returns at once when a trapped signal arrives; the trap
			// also ends the background sleep.
			script := fmt.Sprintf(`sleep 60 & trap 'kill $!; echo got %s; exit 42' %s; echo ready; wait`, name, name)
			p := startZklock(t, true, "run", path, "--", "sh", "-c", script)
			p.stdout.waitFor(ctx, t, "ready")
			p.signal(sig)
			if code := p.wait(); code != 42 {
				t.Errorf("status %d, want the command's 42; stdout %q stderr %q", code, p.stdout.String(), p.stderr.String())
			}
			if !strings.Contains(p.stdout.String(), "got "+name) {
				t.Errorf("the command did not see %v: %q", sig, p.stdout.String())
			}
			if kids := testutil.Children(t, conn, path); len(kids) != 0 {
				t.Errorf("lock node left behind: %v", kids)
			}
		})
	}
}

// A lock lost while the command runs: SIGTERM to the command, SIGKILL
// after --grace if it ignores that; 122, and with --json the command's own
// status on the last line.
func TestRunLockLost(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
		inProcess, json    bool
	}{
		// The command exits on SIGTERM.
		{"sigterm", `echo ready; exec sleep 60`, "sending SIGTERM", true, false},
		// The command ignores SIGTERM: SIGKILL after the grace period.
		{"sigkill", `trap '' TERM; echo ready; while :; do sleep 1; done`, "sending SIGKILL", true, false},
		{"binary-json", `echo ready; exec sleep 60`, "sending SIGTERM", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, path := testutil.Begin(t, server.Addr())
			proxy := zktest.NewProxy(t, server.Addr())
			args := []string{"--servers", proxy.Addr(), "--session-timeout", "1s", "run", "--grace", "200ms", path, "--", "sh", "-c", tc.script}
			if tc.json {
				args = append([]string{"--json"}, args...)
			}
			p := startZklock(t, tc.inProcess, args...)
			p.stdout.waitFor(ctx, t, "ready")
			proxy.BlackHole() // SUSPENDED after ~2/3 of the session timeout: lost under the Standard policy
			code := p.wait()
			proxy.Restore()
			stderr := p.stderr.String()
			if code != exitLost || !strings.Contains(stderr, "lost") || !strings.Contains(stderr, tc.want) {
				t.Errorf("status %d, stderr %q; want %d and a loss report with %q", code, stderr, exitLost, tc.want)
			}
			if !tc.json {
				return
			}
			lines := jsonLines(t, stderr)
			last := lines[len(lines)-1]
			if lines[0]["event"] != "lost" {
				t.Errorf("first line %v, want event lost", lines[0])
			}
			if bad := checkFields(last, map[string]any{"event": "exit", "outcome": "lost", "status": exitLost,
				"command_status": 128 + int(syscall.SIGTERM), "node": anyValue, "session": anyValue, "token": anyValue}); len(bad) > 0 {
				t.Errorf("last line %v: %v", last, bad)
			}
		})
	}
}

func TestRunReadWriteAndSemaphore(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	client := newClient(t)
	rw, err := recipes.NewInterProcessReadWriteLock(client, path+"/rw")
	testutil.Must(t, err)
	reader := rw.NewHandle().ReadLock()
	testutil.Must(t, reader.Acquire(ctx))
	// Readers share; a writer does not get in.
	startZklock(t, true, "run", "--read", "--try-once", path+"/rw", "--", "sh", "-c", `echo "$ZKLOCK_KIND $ZKLOCK_NODE"`).succeeds("read "+path+"/rw/", "-__READ__")
	startZklock(t, true, "run", "--write", "--try-once", path+"/rw", "--", "true").fails(exitNotAcquired, "held by another participant")
	testutil.Must(t, reader.Release(ctx))
	startZklock(t, true, "run", "--write", "--try-once", path+"/rw", "--", "sh", "-c", `echo "$ZKLOCK_KIND $ZKLOCK_NODE"`).succeeds("write "+path+"/rw/", "-__WRIT__")

	holdLease(ctx, t, client, path+"/sem", 2)
	startZklock(t, true, "run", "--semaphore", "2", "--try-once", path+"/sem", "--", "sh", "-c", `echo "$ZKLOCK_KIND $ZKLOCK_NODE"`).succeeds("lease "+path+"/sem/leases/", "-lease-")
	startZklock(t, true, "run", "--semaphore", "1", "--try-once", path+"/sem", "--", "true").fails(exitNotAcquired, "no lease free now")
}

// run --json when the command was stopped (its own status apart; when it
// did not run: TestRunExitStatus).
func TestRunJSON(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())

	// Revoked while the command ran (revoke --wait NODE says it asked, then
	// that the node has gone), in-process and from the binary: stopped,
	// exiting 123, its own status apart.
	for _, inProcess := range []bool{true, false} {
		p := startZklock(t, inProcess, "--json", "run", "--revocable", path+"/rev", "--", "sh", "-c", `echo "node=$ZKLOCK_NODE;"; exec sleep 60`)
		out := p.stdout.waitFor(ctx, t, ";")
		node := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(out), "node="), ";")
		startZklock(t, true, "revoke", "--wait", node).succeeds("revocation requested: "+node, "released: "+node)
		code := p.wait()
		lines := jsonLines(t, p.stderr.String())
		last := lines[len(lines)-1]
		if code != exitRevoked || lines[0]["event"] != "revoked" {
			t.Errorf("revoked, in-process %v: status %d, stderr %q", inProcess, code, p.stderr.String())
		}
		if bad := checkFields(last, map[string]any{"event": "exit", "outcome": "revoked", "status": exitRevoked,
			"command_status": 128 + int(syscall.SIGTERM), "node": node, "kind": "mutex"}); len(bad) > 0 {
			t.Errorf("revoked, in-process %v, last line %v: %v", inProcess, last, bad)
		}
	}
}

// run in a namespace, with --acl creator: the nodes it makes are the
// creator's, so that ls needs its credentials, and so does revoke: without
// them, or with a wrong password, revoke fails (zk.ErrNoAuth) and the
// command runs on; with them, the command is stopped (123).
func TestRunNamespaceAndAuth(t *testing.T) {
	testutil.CheckLeaks(t)
	ns := strings.TrimPrefix(testutil.Path(t), "/")
	conn := testutil.CleanupTreeAs(t, server.Addr(), "/"+ns, "alice:secret")
	ctx := testutil.Context(t)
	p := startZklock(t, true, "--namespace", ns, "--auth", "alice:secret",
		"run", "--acl", "creator", "--revocable", "/lock", "--", "sh", "-c", `echo "$ZKLOCK_NODE $ZKLOCK_NAMESPACE ready"; exec sleep 60`)
	out := p.stdout.waitFor(ctx, t, "ready")
	f := strings.Fields(out)
	if len(f) != 3 || !strings.HasPrefix(f[0], "/lock/_c_") || f[1] != ns {
		t.Fatalf("ZKLOCK_NODE, ZKLOCK_NAMESPACE: %q", out)
	}
	// The node is in the namespace, with the creator's ACL, as is its parent.
	for _, node := range []string{"/" + ns + f[0], "/" + ns + "/lock"} {
		acl, _, err := conn.GetACL(node)
		testutil.Must(t, err)
		if len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "alice:") {
			t.Errorf("ACL of %s: %+v", node, acl)
		}
	}
	// ls and revoke through the namespace, with the auth that may read it.
	startZklock(t, true, "--namespace", ns, "--auth", "alice:secret", "ls", "/lock").succeeds("/lock: mutex", "holder")
	for _, auth := range [][]string{nil, {"--auth", "alice:wrong"}} {
		startZklock(t, true, append(auth, "--namespace", ns, "revoke", f[0])...).fails(exitError, zk.ErrNoAuth.Error())
	}
	select {
	case <-p.done:
		t.Fatalf("a revocation without the creator's credentials stopped the command: stderr %q", p.stderr.String())
	default:
	}
	startZklock(t, true, "--namespace", ns, "--auth", "alice:secret", "revoke", f[0]).succeeds()
	if code := p.wait(); code != exitRevoked {
		t.Errorf("status %d, stderr %q", code, p.stderr.String())
	}
}

// A signal while run waits for its release's answer, after the command
// exited, ends the wait (the session's end removes the node) instead of
// holding zklock for releaseTimeout; run still exits with the command's
// status. The server's answers are held back by the proxy (its replies
// delayed a minute), so the release's delete is sent and never answered.
func TestBinaryRunSignalWhileReleasing(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	fifo := filepath.Join(t.TempDir(), "go")
	testutil.Must(t, syscall.Mkfifo(fifo, 0o600))
	p := startZklock(t, false, "--servers", proxy.Addr(), "--session-timeout", "20s", "--json",
		"run", path, "--", "sh", "-c", `echo ready; read x < "$1"; exit 3`, "sh", fifo)
	p.stdout.waitFor(ctx, t, "ready")
	deletes := proxy.Requests(zktest.OpDelete)
	proxy.SetDelays(0, time.Minute)
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0) // the command reads EOF and exits 3
	testutil.Must(t, err)
	f.Close()
	testutil.Must(t, proxy.WaitRequests(ctx, zktest.OpDelete, deletes+1)) // the release is sent
	p.signal(syscall.SIGINT)
	code := p.wait()
	lines := jsonLines(t, p.stderr.String())
	if code != 3 || len(lines) != 2 || lines[0]["event"] != "release" ||
		!strings.Contains(fmt.Sprint(lines[0]["message"]), "got interrupt while releasing") || lines[1]["event"] != "exit" {
		t.Errorf("status %d, stderr %q; want the command's 3, a release line that says the wait was interrupted, and the exit line", code, p.stderr.String())
	}
}
