//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// terminal is a tmux server of the test's own (on its own socket) showing
// the built zklock in a pane of 200x60 characters, as an operator's
// terminal shows it. zklock runs under sh, which says how it exited:
// "[zklock exited N]" (sh ignores SIGINT; zklock gets Ctrl-C's).
type terminal struct {
	t    testing.TB
	tmux string
	sock string
}

// startTerminal runs the zklock binary with args, ZK_SERVERS pointing at
// the shared server, in a new terminal, stopped (by pid) when the test ends.
func startTerminal(t testing.TB, args ...string) *terminal {
	t.Helper()
	return startTerminalAt(t, server.Addr(), args...)
}

// startTerminalAt is startTerminal with ZK_SERVERS set to servers.
func startTerminalAt(t testing.TB, servers string, args ...string) *terminal {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatal("tmux is needed (Debian package tmux; make deps installs it)")
	}
	dir, err := os.MkdirTemp("", "zklock-tmux-") // short: a socket path has at most 108 bytes
	testutil.Must(t, err)
	term := &terminal{t: t, tmux: tmux, sock: filepath.Join(dir, "s")}
	conf := filepath.Join(dir, "tmux.conf")
	testutil.Must(t, os.WriteFile(conf, []byte("set -g remain-on-exit on\n"), 0o600))
	script := "trap '' INT; '" + zklockBinary(t) + "'"
	for _, a := range args {
		script += " '" + a + "'"
	}
	script += `; echo "[zklock exited $?]"`
	if out, err := exec.Command(tmux, "-S", term.sock, "-f", conf, "new-session", "-d", "-x", "200", "-y", "60",
		"-e", "ZK_SERVERS="+servers, "sh", "-c", script).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	var serverPid, shPid int
	fmt.Sscan(term.run("display-message", "-p", "#{pid} #{pane_pid}"), &serverPid, &shPid)
	t.Cleanup(func() {
		// zklock, if it still runs, is sh's one child (SIGHUP ends it).
		kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", shPid, shPid))
		pids := []int{shPid, serverPid}
		for _, f := range strings.Fields(string(kids)) {
			pid, _ := strconv.Atoi(f)
			pids = append(pids, pid)
		}
		exec.Command(tmux, "-S", term.sock, "kill-server").Run()
		for _, pid := range pids {
			for deadline := time.Now().Add(10 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					syscall.Kill(pid, syscall.SIGKILL)
					t.Errorf("pid %d outlived tmux's kill-server", pid)
					break
				}
			}
		}
		os.RemoveAll(dir)
	})
	return term
}

// run runs a tmux command against the terminal and returns its output.
func (term *terminal) run(args ...string) string {
	term.t.Helper()
	out, err := exec.Command(term.tmux, append([]string{"-S", term.sock}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = errors.New(err.Error() + ": " + string(ee.Stderr))
		}
		term.t.Fatalf("tmux %q: %v", args, err)
	}
	return string(out)
}

// screen returns what the terminal shows now.
func (term *terminal) screen() string { return term.run("capture-pane", "-p") }

// waitScreen polls the screen, at most until ctx ends, until check accepts
// it, and returns it. Polling is the only way to learn what a terminal
// shows: it waits on a condition, not a time.
func (term *terminal) waitScreen(ctx context.Context, what string, check func(screen string) bool) string {
	term.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		s := term.screen()
		if check(s) {
			return s
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			term.t.Fatalf("the screen never showed %s; it shows:\n%s", what, s)
		}
	}
}

// waitFor waits until the screen shows every one of texts.
func (term *terminal) waitFor(ctx context.Context, texts ...string) string {
	term.t.Helper()
	return term.waitScreen(ctx, strconv.Quote(strings.Join(texts, `", "`)), func(s string) bool {
		for _, x := range texts {
			if !strings.Contains(s, x) {
				return false
			}
		}
		return true
	})
}

// waitExit waits until zklock has exited and returns its status.
func (term *terminal) waitExit(ctx context.Context) int {
	term.t.Helper()
	exited := regexp.MustCompile(`\[zklock exited (\d+)\]`)
	m := exited.FindStringSubmatch(term.waitScreen(ctx, "zklock's exit", exited.MatchString))
	status, _ := strconv.Atoi(m[1])
	return status
}

// ctrlC types Ctrl-C and fails the test unless zklock then exits 0.
func (term *terminal) ctrlC(ctx context.Context) {
	term.t.Helper()
	term.run("send-keys", "C-c")
	if status := term.waitExit(ctx); status != 0 {
		term.t.Errorf("Ctrl-C: status %d, screen:\n%s", status, term.screen())
	}
}

// holderRow returns the screen's line for the holder of a mutex, "" if none.
func holderRow(screen string) string {
	for _, l := range strings.Split(screen, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[1] == "holder" {
			return l
		}
	}
	return ""
}

// ls --watch in a terminal, on a mutex that does not exist yet: it redraws
// as holders come and go, after the empty path is reaped and when it is
// made again, and Ctrl-C ends it with status 0.
func TestBinaryLsWatchMutex(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	path := base + "/lock"
	createNode(t, conn, base)
	term := startTerminal(t, "ls", "--watch", path)
	term.waitFor(ctx, "zklock ls --watch "+path, "connection CONNECTED", path+": no participants (no node there")

	mu, err := recipes.NewInterProcessMutex(newClient(t), path)
	testutil.Must(t, err)
	first, second := mu.NewHandle(), mu.NewHandle()
	testutil.Must(t, first.Acquire(ctx))
	_, firstNode := framework.SplitPath(first.LockPath())
	term.waitFor(ctx, "; 1 holding", firstNode)

	acquired := make(chan error, 1)
	go func() { acquired <- second.Acquire(ctx) }()
	term.waitFor(ctx, "; 1 holding, 1 waiting")
	testutil.Must(t, first.Release(ctx))
	testutil.Must(t, testutil.Recv(t, acquired, "the second holder's acquire"))
	_, secondNode := framework.SplitPath(second.LockPath())
	term.waitScreen(ctx, "the second holder holding", func(s string) bool {
		return strings.Contains(holderRow(s), secondNode) && !strings.Contains(s, "waiting")
	})

	// Released: the path is empty, then reaped by the server, then made again.
	testutil.Must(t, second.Release(ctx))
	term.waitFor(ctx, path+": no participants (no node there")
	testutil.Must(t, first.Acquire(ctx))
	defer first.Release(context.Background())
	_, firstNode = framework.SplitPath(first.LockPath())
	term.waitScreen(ctx, "the first holder holding again", func(s string) bool {
		return strings.Contains(holderRow(s), firstNode)
	})

	term.ctrlC(ctx)
}

// ls --watch in a terminal, on a semaphore (PATH/locks and PATH/leases,
// each a container of its own): leases taken and returned are redrawn.
func TestBinaryLsWatchSemaphore(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	path := base + "/sem"
	createNode(t, conn, base)
	term := startTerminal(t, "ls", "--watch", "--max-leases", "2", path)
	term.waitFor(ctx, path+": no participants (no node there")

	sem, err := recipes.NewInterProcessSemaphoreV2(newClient(t), path, 2)
	testutil.Must(t, err)
	var leases []*recipes.Lease
	defer func() { recipes.ReturnAll(context.Background(), leases) }()
	for _, want := range []string{"limit 2; 1 leases held", "limit 2; 2 leases held"} {
		l, err := sem.Acquire(ctx)
		testutil.Must(t, err)
		leases = append(leases, l)
		_, node := framework.SplitPath(l.Path())
		term.waitFor(ctx, want, "leases/"+node)
	}
	testutil.Must(t, leases[0].Close(ctx))
	_, gone := framework.SplitPath(leases[0].Path())
	term.waitScreen(ctx, "one lease returned", func(s string) bool {
		return strings.Contains(s, "limit 2; 1 leases held") && !strings.Contains(s, gone)
	})
	term.ctrlC(ctx)
}

// ls --watch --json, to a pipe, of a PATH that is not there yet and then
// becomes a parent of locks: one JSON object per line, a line per change,
// of a lock below PATH too, not only of PATH's own children; SIGINT ends
// it with status 0.
func TestBinaryLsWatchJSON(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	p := startZklock(t, false, "--json", "ls", "--watch", path)
	p.stdout.waitFor(ctx, t, `"exists":false`)
	h := holdMutex(ctx, t, path+"/app/a")
	p.stdout.waitFor(ctx, t, `"recipe":"parent"`)
	mu, err := recipes.NewInterProcessMutex(newClient(t), path+"/app/a")
	testutil.Must(t, err)
	testutil.Queued(t, conn, path+"/app/a", 2, mu.NewHandle().Acquire)
	p.stdout.waitFor(ctx, t, `"role":"waiting"`)
	p.signal(syscall.SIGINT)
	if code := p.wait(); code != 0 || p.stderr.String() != "" {
		t.Errorf("SIGINT: status %d, stderr %q", code, p.stderr.String())
	}
	lines := jsonLines(t, p.stdout.String())
	if last := lines[len(lines)-1]; len(lines) < 3 || lines[0]["exists"] != false || last["recipe"] != "parent" ||
		!strings.Contains(fmt.Sprint(last["locks"]), h.LockPath()) {
		t.Errorf("lines %v, want a missing path first and, last, the parent with the holder %s", lines, h.LockPath())
	}
}

// ls --watch in a terminal through an outage of its server: the banner
// under the title says the connection's state (CONNECTED; SUSPENDED since
// when, and that no server answered, naming the server and its dial's
// error; LOST once zklock's 3s session is given up), the last listing
// stays on the screen marked stale, and it is listed afresh, not stale,
// once the server is back. AGE ticks between changes of the tree.
func TestBinaryLsWatchThroughAnOutage(t *testing.T) {
	testutil.CheckLeaks(t) // first: its check runs once the server is closed
	s := zktest.NewServer(t, zktest.WithTickTime(100*time.Millisecond), zktest.WithSessionTimeoutRange(200*time.Millisecond, time.Minute))
	ctx, path := testutil.Context(t), testutil.Path(t) // the server is the test's own: no tree to clean up
	mu, err := recipes.NewInterProcessMutex(testclient.New(t, s.Addr(), framework.WithSessionTimeout(time.Minute)), path)
	testutil.Must(t, err)
	h := mu.NewHandle()
	testutil.Must(t, h.Acquire(ctx))
	defer h.Release(context.Background())
	_, node := framework.SplitPath(h.LockPath())

	term := startTerminalAt(t, s.Addr(), "ls", "--watch", "--session-timeout", "8s", path) // SUSPENDED shows for seconds before LOST
	first := holderRow(term.waitFor(ctx, "connection CONNECTED", node))
	term.waitScreen(ctx, "the holder's AGE ticking", func(screen string) bool {
		row := holderRow(screen)
		return row != "" && strings.Fields(row)[4] != strings.Fields(first)[4]
	})

	testutil.Must(t, s.Stop())
	down := term.waitFor(ctx, "connection SUSPENDED since ", "no server answered for ", s.Addr()+" (connection refused)", "STALE: listed at ")
	if !strings.Contains(holderRow(down), node) || !strings.Contains(down, "  AGE@") {
		t.Errorf("the stale listing is gone, or its ages are not as of its last confirmation:\n%s", down)
	}
	term.waitFor(ctx, "connection LOST since ", s.Addr()+" (connection refused)", "STALE: listed at ", node)

	testutil.Must(t, s.Restart())
	back := term.waitScreen(ctx, "a fresh listing", func(screen string) bool {
		return strings.Contains(screen, "connection RECONNECTED") && !strings.Contains(screen, "STALE")
	})
	if !strings.Contains(holderRow(back), node) {
		t.Errorf("the holder is not listed once the server is back:\n%s", back)
	}
	term.ctrlC(ctx)
}

// ls --watch on a parent of locks sees a holder appear at every level a
// one-shot ls would find it (issue 36, point 1): in a lock path that is
// already there, empty (as a container an earlier holder left, until the
// server reaps it), in a new lock path one level below an existing node,
// and two levels below (ParentDepth down from PATH); and in a semaphore
// whose leases node is there, empty. Each holder is taken after the
// watch's first listing, so only a watch can show it.
func TestBinaryLsWatchSeesEveryLevel(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	app := base + "/app"
	createNode(t, conn, base)
	createNode(t, conn, app)
	createNode(t, conn, app+"/empty") // persistent here: a container would be reaped between the steps
	createNode(t, conn, app+"/sem")
	createNode(t, conn, app+"/sem/leases")
	first := holdMutex(ctx, t, app+"/a")
	_, firstNode := framework.SplitPath(first.LockPath())
	term := startTerminal(t, "ls", "--watch", base)
	term.waitFor(ctx, base+": not a lock, but a parent of 1 locks", firstNode, "connection CONNECTED")

	nodes := []string{firstNode}
	for _, lock := range []string{app + "/empty", app + "/x", app + "/deep/er"} {
		h := holdMutex(ctx, t, lock)
		_, node := framework.SplitPath(h.LockPath())
		nodes = append(nodes, node)
		term.waitFor(ctx, append([]string{fmt.Sprintf("a parent of %d locks", len(nodes)), lock + ": mutex"}, nodes...)...)
	}
	lease := holdLease(ctx, t, newClient(t), app+"/sem", 2)
	_, node := framework.SplitPath(lease.Path())
	nodes = append(nodes, "leases/"+node)
	screen := term.waitFor(ctx, append([]string{"a parent of 5 locks", app + "/sem: semaphore"}, nodes...)...)

	// What the watch shows is what a one-shot ls shows.
	out := startZklock(t, true, "ls", base).succeeds("a parent of 5 locks")
	for _, n := range nodes {
		if !strings.Contains(out, n) {
			t.Errorf("ls shows no %s:\n%s\nthe watch shows:\n%s", n, out, screen)
		}
	}
	term.ctrlC(ctx)
}

// ls --watch behind a connection gone silent (issue 36, points 2 and 5): the
// proxy between zklock and the server black-holes, and the lock changes
// hands where zklock cannot see it. The client still says CONNECTED (at a
// 20 s session, go-zookeeper notices after about 13 s), but the listing is
// marked STALE within staleAfter of its last confirmation, and its AGE no
// longer ticks: it is as of that confirmation, and its column says so. Once
// the proxy forwards again, the new holder is listed, not stale.
func TestBinaryLsWatchSilentConnection(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	mu, err := recipes.NewInterProcessMutex(newClient(t), path)
	testutil.Must(t, err)
	first, second := mu.NewHandle(), mu.NewHandle()
	testutil.Must(t, first.Acquire(ctx))
	_, firstNode := framework.SplitPath(first.LockPath())

	term := startTerminalAt(t, proxy.Addr(), "ls", "--watch", "--session-timeout", "20s", path)
	term.waitFor(ctx, "connection CONNECTED", "confirmed by a server at ", firstNode)
	proxy.BlackHole()
	defer proxy.Restore()
	testutil.Must(t, first.Release(ctx))
	testutil.Must(t, second.Acquire(ctx))
	_, secondNode := framework.SplitPath(second.LockPath())

	stale := term.waitFor(ctx, "connection CONNECTED, as far as the client knows: no server has answered zklock for ", "STALE: listed at ")
	if row := holderRow(stale); !strings.Contains(row, firstNode) {
		t.Errorf("the stale listing does not show the last holder seen, %s:\n%s", firstNode, stale)
	}
	if !strings.Contains(stale, "AGE as of then") || !strings.Contains(stale, "  AGE@") {
		t.Errorf("the stale listing does not say its ages are as of its last confirmation:\n%s", stale)
	}
	// The AGE of a stale listing stands still while the clock in the title moves.
	title := strings.Fields(stale)[0]
	later := term.waitScreen(ctx, "the title's clock move", func(s string) bool {
		return strings.Contains(s, "STALE") && strings.Fields(s)[0] != title
	})
	if a, b := holderRow(stale), holderRow(later); a == "" || a != b {
		t.Errorf("the stale listing's holder row changed from\n%s\nto\n%s", a, b)
	}
	if strings.Contains(later, secondNode) {
		t.Errorf("the new holder %s is shown through a black hole:\n%s", secondNode, later)
	}

	proxy.Restore()
	back := term.waitScreen(ctx, "a fresh listing", func(s string) bool {
		return strings.Contains(s, "connection RECONNECTED") && !strings.Contains(s, "STALE")
	})
	if !strings.Contains(holderRow(back), secondNode) {
		t.Errorf("the new holder %s is not listed once the proxy forwards again:\n%s", secondNode, back)
	}
	testutil.Must(t, second.Release(ctx))
	term.ctrlC(ctx)
}

// ls --watch --json through outages (issue 36, point 3): each listing line
// says when it was taken (listed_at), and each change of the connection,
// or of whether the listing is stale, is a line of its own (event
// "connection": state, since, stale, silent, listed_at, confirmed_at): the
// proxy black-holes (CONNECTED, stale and silent), forwards again
// (RECONNECTED, not stale, and a listing); the server stops (SUSPENDED,
// stale) while the lock changes hands behind zklock's back, and starts
// again (RECONNECTED, and a listing with the new holder).
func TestBinaryLsWatchJSONThroughOutages(t *testing.T) {
	testutil.CheckLeaks(t) // first: its check runs once the server is closed
	s := zktest.NewServer(t, zktest.WithTickTime(100*time.Millisecond), zktest.WithSessionTimeoutRange(200*time.Millisecond, time.Minute))
	ctx, path := testutil.Context(t), testutil.Path(t) // the server is the test's own: no tree to clean up
	proxy := zktest.NewProxy(t, s.Addr())
	mu, err := recipes.NewInterProcessMutex(testclient.New(t, s.Addr(), framework.WithSessionTimeout(time.Minute)), path)
	testutil.Must(t, err)
	first, second := mu.NewHandle(), mu.NewHandle()
	testutil.Must(t, first.Acquire(ctx))
	_, firstNode := framework.SplitPath(first.LockPath())

	p := startZklock(t, false, "--servers", proxy.Addr(), "--json", "ls", "--watch", "--session-timeout", "20s", path)
	lines := jsonLineReader{p: p}
	isListing := func(l map[string]any) bool { return l["participants"] != nil }
	isConnection := func(l map[string]any) bool { return l["event"] == "connection" }
	listed := lines.next(ctx, "the first listing", isListing)
	if bad := checkFields(listed, map[string]any{"event": "listing", "listed_at": anyValue, "recipe": "mutex"}); len(bad) > 0 || lines.read != 1 ||
		!strings.Contains(fmt.Sprint(listed["participants"]), firstNode) {
		t.Errorf("first line %v: %v; want the first listing, with %s", listed, bad, firstNode)
	}
	listedAt := listed["listed_at"]

	// Black-holed: the lock changes hands unseen; the client stays
	// CONNECTED for seconds, the listing is stale at once.
	proxy.BlackHole()
	defer proxy.Restore()
	testutil.Must(t, first.Release(ctx))
	testutil.Must(t, second.Acquire(ctx))
	defer second.Release(context.Background())
	_, secondNode := framework.SplitPath(second.LockPath())
	c := lines.next(ctx, "a line saying the listing is stale", isConnection)
	if bad := checkFields(c, map[string]any{"state": "CONNECTED", "stale": true, "silent": true, "since": anyValue,
		"listed_at": listedAt, "confirmed_at": anyValue, "message": anyValue}); len(bad) > 0 {
		t.Errorf("black-holed: %v: %v", c, bad)
	}

	// Forwarding again: the proxy closes the connection, the client
	// reconnects; then the new holder is listed.
	proxy.Restore()
	var seen []map[string]any
	listed = lines.next(ctx, "a listing with the new holder", func(l map[string]any) bool {
		seen = append(seen, l)
		return isListing(l) && strings.Contains(fmt.Sprint(l["participants"]), secondNode)
	})
	if c := seen[len(seen)-2]; len(seen) < 2 || !isConnection(c) || c["state"] != "RECONNECTED" || c["stale"] != false || c["silent"] != false {
		t.Errorf("after the black hole: lines %v; want a connection line RECONNECTED, not stale, before the listing", seen)
	}

	// The server stops: SUSPENDED, stale; then back, listed again.
	testutil.Must(t, s.Stop())
	stopped := time.Now()
	c = lines.next(ctx, "a line saying the connection is down", func(l map[string]any) bool {
		return isConnection(l) && l["state"] != "CONNECTED" // a server that stops may first be silent
	})
	if bad := checkFields(c, map[string]any{"state": "SUSPENDED", "stale": true, "silent": false, "listed_at": listed["listed_at"]}); len(bad) > 0 {
		t.Errorf("server stopped: %v: %v", c, bad)
	}
	testutil.Must(t, s.Restart())
	listed = lines.next(ctx, "a listing once the server is back", isListing)
	if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(listed["listed_at"])); err != nil || !at.After(stopped) ||
		!strings.Contains(fmt.Sprint(listed["participants"]), secondNode) {
		t.Errorf("server back: %v (%v); want a listing taken after %v, with %s", listed, err, stopped, secondNode)
	}
	p.signal(syscall.SIGINT)
	if code := p.wait(); code != 0 || p.stderr.String() != "" {
		t.Errorf("SIGINT: status %d, stderr %q", code, p.stderr.String())
	}
}

// jsonLineReader reads the JSON lines of a zklock's stdout as they come.
type jsonLineReader struct {
	p    *process
	read int // lines read so far
}

// next waits for the next line that want accepts (what says which, in
// the error) and returns it; lines before it are passed by.
func (r *jsonLineReader) next(ctx context.Context, what string, want func(line map[string]any) bool) map[string]any {
	r.p.t.Helper()
	for {
		out := r.p.stdout.waitUntil(ctx, r.p.t, what, func(out string) bool { return strings.Count(out, "\n") > r.read })
		line := jsonLines(r.p.t, strings.Split(out, "\n")[r.read])[0]
		r.read++
		if want(line) {
			return line
		}
	}
}
