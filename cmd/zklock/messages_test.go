package main

import (
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// zklock's errors speak its own flags and say what is wrong and what it
// wants: a chroot in --servers points to --namespace, not to the Go API;
// run without a PATH before "--" says PATH is missing; a duration without
// its unit says a duration is wanted.
func TestMessagesSpeakZklocksFlags(t *testing.T) {
	testutil.CheckLeaks(t)
	for _, tc := range []struct {
		args []string
		want int
		msg  string
	}{
		{[]string{"--servers", "127.0.0.1:2181/billing", "ls", "/a"}, exitUsage,
			`--servers "127.0.0.1:2181/billing" ends in a chroot path (/billing); zklock takes none: give the servers alone and --namespace billing`},
		{[]string{"--servers", "127.0.0.1:x", "ls", "/a"}, exitUsage, `--servers: connect string "127.0.0.1:x": bad port "x"`},
		{[]string{"run", "--", "echo", "hi"}, exitRunFailed, "PATH is missing: run wants the lock's PATH before --"},
		{[]string{"--session-timeout", "1", "ls", "/a"}, exitUsage, `--session-timeout "1" is not a duration with its unit, such as 30s, 1m30s or 500ms`},
		{[]string{"ls", "--connect-timeout", "soon", "/a"}, exitUsage, `--connect-timeout "soon" is not a duration with its unit`},
		{[]string{"run", "--timeout", "5", "/a", "--", "true"}, exitRunFailed, `--timeout "5" is not a duration with its unit`},
		{[]string{"ls", "--max-leases", "two", "/a"}, exitUsage, `--max-leases "two" is not a whole number`},
	} {
		code, out, stderr := both(t, tc.args...)
		if code != tc.want || out != "" || !strings.HasPrefix(stderr, "zklock: "+tc.msg) {
			t.Errorf("%q: status %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, stderr, tc.want, tc.msg)
		}
	}
}

// Servers that all refuse are reported as soon as each has refused, not
// at --connect-timeout (an hour here), each named with its dial's error.
func TestUnreachableServersAreNamedAtOnce(t *testing.T) {
	testutil.CheckLeaks(t)
	named := regexp.MustCompile(`^zklock: cannot connect: no server answered: 127\.0\.0\.1:1 \(connection refused\), 127\.0\.0\.1:2 \(connection refused\)\n$`)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"ls", "/a"}, exitError},
		{[]string{"run", "/a", "--", "true"}, exitRunFailed},
	} {
		code, _, stderr := both(t, append([]string{"--servers", "127.0.0.1:1,127.0.0.1:2", "--connect-timeout", "1h"}, tc.args...)...)
		if code != tc.want || !named.MatchString(stderr) {
			t.Errorf("%q: status %d, stderr %q; want %d and %s", tc.args, code, stderr, tc.want, named)
		}
	}
}

// ls / under a --namespace lists every lock of the namespace; the root
// of the whole tree is listed the same way.
func TestLsRootOfANamespace(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	holdMutex(ctx, t, base+"/billing/invoices")
	holdMutex(ctx, t, base+"/billing/jobs/nightly")
	ns := base[1:] + "/billing"
	out := startZklock(t, true, "--namespace", ns, "ls", "/").succeeds(
		"/: not a lock, but a parent of 2 locks", "/invoices: mutex", "/jobs/nightly: mutex")
	if strings.Contains(out, base) {
		t.Errorf("ls / under --namespace %s shows paths outside it:\n%s", ns, out)
	}
}

// silentServer listens on a port of its own, takes every connection and
// never answers (as a server stalled before its first session does), until
// the test ends. It returns its address and a channel that gets a value at
// each connection taken.
func silentServer(t testing.TB) (addr string, accepted <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testutil.Must(t, err)
	took := make(chan struct{}, 16)
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			select {
			case took <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), took
}

// A real SIGINT to the zklock binary while it waits for a server that
// takes the connection and never answers ends every command at once with
// 128+2, well before --connect-timeout (issue 36, point 4): run too, which
// says that nothing was run.
func TestBinarySignalWhileConnecting(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	addr, accepted := silentServer(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "/a", "--", "echo", "ran"}, "zklock: got interrupt while connecting to " + addr + "; nothing was run"},
		{[]string{"run", "--semaphore", "2", "/a", "--", "echo", "ran"}, "zklock: got interrupt while connecting to " + addr + "; nothing was run"},
		{[]string{"ls", "/a"}, "zklock: interrupted by interrupt"},
		{[]string{"ls", "--watch", "/a"}, "zklock: interrupted by interrupt"},
		{[]string{"revoke", "/a"}, "zklock: interrupted by interrupt"},
	} {
		for len(accepted) > 0 {
			<-accepted // the connections of the commands before
		}
		p := startZklock(t, false, append([]string{"--servers", addr, "--connect-timeout", "8s"}, tc.args...)...)
		select {
		case <-accepted: // zklock is connecting
		case <-p.done:
			t.Fatalf("%q exited before it connected: status %d, stderr %q", tc.args, p.code, p.stderr.String())
		case <-ctx.Done():
			t.Fatalf("%q never connected to the silent server", tc.args)
		}
		p.signal(syscall.SIGINT)
		if code, out, stderr := p.result(); code != exitSignalBase+int(syscall.SIGINT) || out != "" || stderr != tc.msg+"\n" {
			t.Errorf("%q, SIGINT while connecting: status %d, stdout %q, stderr %q; want %d and %q",
				tc.args, code, out, stderr, exitSignalBase+int(syscall.SIGINT), tc.msg)
		}
	}
}

// When --connect-timeout passes with no server answering, zklock says how
// long it waited: the timeout, not the 0s the last check took.
func TestConnectTimeoutSaysTheWait(t *testing.T) {
	testutil.CheckLeaks(t)
	addr, _ := silentServer(t)
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"ls", "/a"}, exitError},
		{[]string{"run", "/a", "--", "true"}, exitRunFailed},
	} {
		code, _, stderr := zklock(t, append([]string{"--servers", addr, "--connect-timeout", "1s"}, tc.args...)...)
		want := "zklock: cannot connect within 1s (--connect-timeout): no server answered for 1s: " + addr + " (connected, no session yet): context deadline exceeded\n"
		if code != tc.want || stderr != want {
			t.Errorf("%q: status %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.want, want)
		}
	}
}
