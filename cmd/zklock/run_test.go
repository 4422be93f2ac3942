package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

func TestRunPassesTokenAndNode(t *testing.T) {
	testutil.CheckLeaks(t)
	path := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), path)
	conn := testutil.Connect(t, server.Addr())
	out := tempFile(t, "env")
	code, _, stderr := zklock(t, "run", path, "--", "sh", "-c",
		`echo "$ZKLOCK_TOKEN $ZKLOCK_NODE $ZKLOCK_KIND $ZKLOCK_PATH $ZKLOCK_SESSION" > "$0"`, out)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	if len(f) != 5 {
		t.Fatalf("env %q", b)
	}
	token, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil || token <= 0 {
		t.Errorf("ZKLOCK_TOKEN %q", f[0])
	}
	parent, name := framework.SplitPath(f[1])
	if parent != path || !framework.IsProtectedName(name) || !strings.Contains(name, "-lock-") {
		t.Errorf("ZKLOCK_NODE %q is not a Curator mutex node under %s", f[1], path)
	}
	if f[2] != "mutex" || f[3] != path || !strings.HasPrefix(f[4], "0x") {
		t.Errorf("ZKLOCK_KIND, _PATH, _SESSION: %q", f[2:])
	}
	if kids := rawChildren(t, conn, path); len(kids) != 0 {
		t.Errorf("lock node left behind: %v", kids)
	}

	// A second run gets a higher token.
	code, _, stderr = zklock(t, "run", path, "--", "sh", "-c", `echo "$ZKLOCK_TOKEN" > "$0"`, out)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	b, _ = os.ReadFile(out)
	if next, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); next <= token {
		t.Errorf("second token %d is not above %d", next, token)
	}
}

// A lock whose fencing token cannot be read after acquiring runs nothing.
// Here the reply to the token's Exists is lost and the connection dropped,
// so the lock is lost (SUSPENDED) before the token comes: zklock exits 4 and
// the command does not run. With PATH already there, the token's is the
// first Exists zklock sends (an uncontended acquire is a create and a
// listing; only missing parents cost Exists calls). Closing the session
// removes the node.
func TestRunNoTokenRunsNothing(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	createNode(t, conn, path)
	proxy := zktest.NewProxy(t, server.Addr())
	fired := proxy.LoseNextReply(zktest.OpExists)
	out := tempFile(t, "ran")
	inv := newInvocation()
	code := inv.run(ctx, "--servers", proxy.Addr(), "run", path, "--", "sh", "-c", `echo ran > "$0"`, out)
	select {
	case <-fired:
	default:
		t.Fatalf("no Exists reply was lost; status %d, stderr %q", code, inv.stderr.String())
	}
	stderr := inv.stderr.String()
	if code != exitLost || !strings.Contains(stderr, "fencing token") || !strings.Contains(stderr, "nothing was run") {
		t.Errorf("status %d, stderr %q; want %d and a report that the token could not be read", code, stderr, exitLost)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("the command ran without a fencing token")
	}
	testutil.WaitChildren(t, conn, path, 0)
}

func TestRunExitStatus(t *testing.T) {
	testutil.CheckLeaks(t)
	path := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), path)
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
		code, _, stderr := zklock(t, append([]string{"run", path, "--"}, tc.argv...)...)
		if code != tc.want {
			t.Errorf("%q: status %d, want %d (stderr %q)", tc.argv, code, tc.want, stderr)
		}
	}
	conn := testutil.Connect(t, server.Addr())
	if kids := rawChildren(t, conn, path); len(kids) != 0 {
		t.Errorf("lock nodes left behind: %v", kids)
	}
}

func TestRunTryOnceOnHeldLock(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	h := holdMutex(ctx, t, path)

	marker := tempFile(t, "ran")
	code, _, stderr := zklock(t, "run", "--try-once", path, "--", "touch", marker)
	if code != exitNotAcquired || !strings.Contains(stderr, "held by another participant") {
		t.Errorf("status %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without the lock")
	}
	_, holder := framework.SplitPath(h.LockPath())
	if kids := rawChildren(t, conn, path); len(kids) != 1 || kids[0] != holder {
		t.Errorf("children %v, want only the holder %s", kids, holder)
	}

	// --timeout: the same, after waiting.
	code, _, stderr = zklock(t, "run", "--timeout", "200ms", path, "--", "touch", marker)
	if code != exitNotAcquired || !strings.Contains(stderr, "not acquired within") {
		t.Errorf("--timeout: status %d, stderr %q", code, stderr)
	}
	if kids := rawChildren(t, conn, path); len(kids) != 1 {
		t.Errorf("--timeout left %v", kids)
	}
}

func TestRunSignalWhileWaiting(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	holdMutex(ctx, t, path)

	inv := newInvocation()
	done := make(chan int, 1)
	go func() { done <- inv.run(ctx, "--servers", server.Addr(), "run", path, "--", "true") }()
	testutil.WaitChildren(t, conn, path, 2) // zklock is queued
	inv.signals <- syscall.SIGTERM
	if code := testutil.Recv(t, done, "zklock's exit"); code != 128+int(syscall.SIGTERM) {
		t.Errorf("status %d, stderr %q", code, inv.stderr.String())
	}
	if kids := rawChildren(t, conn, path); len(kids) != 1 {
		t.Errorf("zklock's node left behind: %v", kids)
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
			testutil.CheckLeaks(t)
			path := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), path)
			conn := testutil.Connect(t, server.Addr())
			ctx := testutil.Context(t)
			inv := newInvocation()
			done := make(chan int, 1)
			// wait returns at once when a trapped signal arrives; the trap
			// also ends the background sleep.
			script := fmt.Sprintf(`sleep 60 & trap 'kill $!; echo got %s; exit 42' %s; echo ready; wait`, name, name)
			go func() {
				done <- inv.run(ctx, "--servers", server.Addr(), "run", path, "--", "sh", "-c", script)
			}()
			inv.stdout.waitFor(ctx, t, "ready")
			inv.signals <- sig
			if code := testutil.Recv(t, done, "zklock's exit"); code != 42 {
				t.Errorf("status %d, want the command's 42; stdout %q stderr %q", code, inv.stdout.String(), inv.stderr.String())
			}
			if !strings.Contains(inv.stdout.String(), "got "+name) {
				t.Errorf("the command did not see %v: %q", sig, inv.stdout.String())
			}
			if kids := rawChildren(t, conn, path); len(kids) != 0 {
				t.Errorf("lock node left behind: %v", kids)
			}
		})
	}
}

func TestRunLockLostSignalsCommand(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		// The command exits on SIGTERM.
		{"sigterm", `echo ready; exec sleep 60`, "sending SIGTERM"},
		// The command ignores SIGTERM: SIGKILL after the grace period.
		{"sigkill", `trap '' TERM; echo ready; while :; do sleep 1; done`, "sending SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testutil.CheckLeaks(t)
			path := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), path)
			ctx := testutil.Context(t)
			proxy := zktest.NewProxy(t, server.Addr())
			inv := newInvocation()
			done := make(chan int, 1)
			go func() {
				done <- inv.run(ctx, "--servers", proxy.Addr(), "--session-timeout", "1s",
					"run", "--grace", "200ms", path, "--", "sh", "-c", tc.script)
			}()
			inv.stdout.waitFor(ctx, t, "ready")
			proxy.BlackHole() // SUSPENDED after ~2/3 of the session timeout: lost under the Standard policy
			code := testutil.Recv(t, done, "zklock's exit")
			if code != exitLost {
				t.Errorf("status %d, want %d; stderr %q", code, exitLost, inv.stderr.String())
			}
			stderr := inv.stderr.String()
			if !strings.Contains(stderr, "lost") || !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q, want a loss report with %q", stderr, tc.want)
			}
			proxy.Restore()
		})
	}
}

func TestRunReadWriteAndSemaphore(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	client := newClient(t, "")
	rw, err := recipes.NewInterProcessReadWriteLock(client, path+"/rw")
	if err != nil {
		t.Fatal(err)
	}
	reader := rw.NewHandle().ReadLock()
	if err := reader.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// Readers share; a writer does not get in.
	code, out, stderr := zklock(t, "run", "--read", "--try-once", path+"/rw", "--", "sh", "-c", `echo "$ZKLOCK_KIND $ZKLOCK_NODE"`)
	if code != 0 || !strings.HasPrefix(out, "read ") || !strings.Contains(out, "-__READ__") {
		t.Errorf("--read beside a reader: status %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, _, stderr = zklock(t, "run", "--write", "--try-once", path+"/rw", "--", "true")
	if code != exitNotAcquired {
		t.Errorf("--write beside a reader: status %d, stderr %q", code, stderr)
	}
	if err := reader.Release(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, _ = zklock(t, "run", "--write", "--try-once", path+"/rw", "--", "sh", "-c", `echo "$ZKLOCK_KIND $ZKLOCK_NODE"`)
	if code != 0 || !strings.HasPrefix(out, "write ") || !strings.Contains(out, "-__WRIT__") {
		t.Errorf("--write on a free lock: status %d, stdout %q", code, out)
	}

	holdLease(ctx, t, client, path+"/sem", 2)
	code, out, stderr = zklock(t, "run", "--semaphore", "2", "--try-once", path+"/sem", "--", "sh", "-c", `echo "$ZKLOCK_KIND $ZKLOCK_NODE $ZKLOCK_TOKEN"`)
	if code != 0 || !strings.HasPrefix(out, "lease "+path+"/sem/leases/") || !strings.Contains(out, "-lease-") {
		t.Errorf("--semaphore 2 with one lease out: status %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = zklock(t, "run", "--semaphore", "1", "--try-once", path+"/sem", "--", "sh", "-c", `echo "$ZKLOCK_NODE"`)
	if code != exitNotAcquired {
		t.Errorf("--semaphore 1 with one lease out: status %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestRunRevocable(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	inv := newInvocation()
	done := make(chan int, 1)
	go func() {
		done <- inv.run(ctx, "--servers", server.Addr(), "run", "--revocable", path, "--",
			"sh", "-c", `echo "node=$ZKLOCK_NODE;"; exec sleep 60`)
	}()
	out := inv.stdout.waitFor(ctx, t, ";")
	node := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(out), "node="), ";")
	code, rout, rerr := zklock(t, "revoke", "--wait", node)
	if code != 0 || !strings.Contains(rout, "released: "+node) {
		t.Errorf("revoke --wait: status %d, stdout %q, stderr %q", code, rout, rerr)
	}
	if code := testutil.Recv(t, done, "zklock's exit"); code != exitRevoked {
		t.Errorf("run status %d, want %d; stderr %q", code, exitRevoked, inv.stderr.String())
	}
}

func TestRunNamespaceAndAuth(t *testing.T) {
	testutil.CheckLeaks(t)
	ns := strings.TrimPrefix(testutil.Path(t), "/")
	conn := testutil.Connect(t, server.Addr())
	if err := conn.AddAuth("digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := testutil.DeleteTree(conn, "/"+ns); err != nil {
			t.Errorf("cleaning up: %v", err)
		}
	})
	ctx := testutil.Context(t)
	inv := newInvocation()
	done := make(chan int, 1)
	go func() {
		done <- inv.run(ctx, "--servers", server.Addr(), "--namespace", ns, "--auth", "alice:secret",
			"run", "--acl", "creator", "/lock", "--", "sh", "-c", `echo "$ZKLOCK_NODE $ZKLOCK_NAMESPACE ready"; exec sleep 60`)
	}()
	out := inv.stdout.waitFor(ctx, t, "ready")
	f := strings.Fields(out)
	if len(f) != 3 || !strings.HasPrefix(f[0], "/lock/_c_") || f[1] != ns {
		t.Fatalf("ZKLOCK_NODE, ZKLOCK_NAMESPACE: %q", out)
	}
	// The node is in the namespace, with the creator's ACL, as is its parent.
	for _, p := range []string{"/" + ns + f[0], "/" + ns + "/lock"} {
		acl, _, err := conn.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(acl) != 1 || acl[0].Scheme != "digest" || !strings.HasPrefix(acl[0].ID, "alice:") {
			t.Errorf("ACL of %s: %+v", p, acl)
		}
	}
	// ls through the namespace, with the auth that may read it.
	code, lsOut, stderr := zklock(t, "--namespace", ns, "--auth", "alice:secret", "ls", "/lock")
	if code != 0 || !strings.Contains(lsOut, "/lock: mutex") || !strings.Contains(lsOut, "holder") {
		t.Errorf("ls in the namespace: status %d, stdout %q, stderr %q", code, lsOut, stderr)
	}
	inv.signals <- syscall.SIGTERM
	if code := testutil.Recv(t, done, "zklock's exit"); code != 128+int(syscall.SIGTERM) {
		t.Errorf("status %d, stderr %q", code, inv.stderr.String())
	}
}
