package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Connect opens a raw go-zookeeper connection for checking the server's
// view of the tree (servers: "host:port[,host:port...]"), waits for its
// session, and closes it when the test ends.
func Connect(t testing.TB, servers string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect(strings.Split(servers, ","), 10*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatalf("connect %s: %v", servers, err)
	}
	t.Cleanup(func() { DrainEvents(t, conn, events) })
	deadline := time.After(Timeout)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-deadline:
			t.Fatalf("no session with %s", servers)
		}
	}
	return conn
}

// rawConns holds each running test's raw connection (RawConn), so that
// checking the server's view opens one session per test, not one per
// check.
var rawConns sync.Map // testing.TB -> *zk.Conn

// RawConn returns the test's raw go-zookeeper connection to servers (one
// per test: made at its first call, closed when the test ends), for
// checking the server's view of the tree.
func RawConn(t testing.TB, servers string) *zk.Conn {
	if c, ok := rawConns.Load(t); ok {
		return c.(*zk.Conn)
	}
	c := Connect(t, servers)
	rawConns.Store(t, c)
	t.Cleanup(func() { rawConns.Delete(t) })
	return c
}

// Children lists path through conn, or fails the test; a missing path has
// none.
func Children(t testing.TB, conn *zk.Conn, path string) []string {
	t.Helper()
	kids, _, err := conn.Children(path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return kids
}

// DrainEvents closes conn and waits, at most Timeout, until its event
// channel is closed (go-zookeeper's goroutines have ended); past the bound
// it fails the test.
func DrainEvents(t testing.TB, conn *zk.Conn, events <-chan zk.Event) {
	t.Helper()
	conn.Close()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	for {
		select {
		case _, open := <-events:
			if !open {
				return
			}
		case <-timer.C:
			t.Errorf("the go-zookeeper client did not stop within %v of Close", Timeout)
			return
		}
	}
}

// Begin is the preamble of a test against the ZooKeeper at servers: it
// checks for leaked goroutines (CheckLeaks: call Begin first), and returns a
// context bounded by Timeout (Context) and the test's own path (Path), which
// is deleted with everything below it when the test ends (CleanupTree).
func Begin(t testing.TB, servers string) (context.Context, string) {
	t.Helper()
	CheckLeaks(t)
	base := Path(t)
	CleanupTree(t, servers, base)
	return Context(t), base
}

// CleanupTree deletes path and everything below it when the test ends, so
// that every test leaves the shared server as it found it.
func CleanupTree(t testing.TB, servers, path string) {
	t.Helper()
	cleanupTree(t, Connect(t, servers), path)
}

// CleanupTreeAs is CleanupTree for a tree whose ACLs only the digest
// identity userPassword ("user:password") may read and delete: it deletes
// as that identity, and returns its connection for the test's own checks.
func CleanupTreeAs(t testing.TB, servers, path, userPassword string) *zk.Conn {
	t.Helper()
	conn := Connect(t, servers)
	if err := conn.AddAuth("digest", []byte(userPassword)); err != nil {
		t.Fatal(err)
	}
	cleanupTree(t, conn, path)
	return conn
}

func cleanupTree(t testing.TB, conn *zk.Conn, path string) {
	if strings.HasPrefix(path, Root+"/") {
		if _, err := conn.Create(Root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			t.Fatalf("creating %s: %v", Root, err)
		}
	}
	t.Cleanup(func() {
		if err := DeleteTree(conn, path); err != nil {
			t.Errorf("cleaning up %s: %v", path, err)
		}
	})
}

// DeleteTree deletes path and its descendants; a missing path is no error.
func DeleteTree(conn *zk.Conn, path string) error {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := DeleteTree(conn, path+"/"+c); err != nil {
			return err
		}
	}
	if err := conn.Delete(path, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	return nil
}

// WaitGone waits until nothing is at path, using a watch, not polling.
func WaitGone(t testing.TB, conn *zk.Conn, path string) {
	t.Helper()
	WaitGoneWithin(t, conn, path, Timeout)
}

// WaitGoneWithin is WaitGone with its own bound; when path is still there
// after d it fails the test and lists what is left under it, with each
// node's ephemeral owner.
func WaitGoneWithin(t testing.TB, conn *zk.Conn, path string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		ok, _, ch, err := conn.ExistsW(path)
		if err != nil {
			t.Fatalf("exists %s: %v", path, err)
		}
		if !ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s is still there after %v: %s", path, d, strings.Join(describeTree(conn, path), ", "))
		}
	}
}

func describeTree(conn *zk.Conn, p string) []string {
	_, st, err := conn.Get(p)
	if err != nil {
		return nil
	}
	out := []string{fmt.Sprintf("%s (owner %x, cversion %d)", p, st.EphemeralOwner, st.Cversion)}
	kids, _, _ := conn.Children(p)
	for _, k := range kids {
		out = append(out, describeTree(conn, p+"/"+k)...)
	}
	return out
}

// NothingCreated notes the server's root children now and returns a check
// that fails the test unless, when it is called, base does not exist and
// the root has no child it did not have before (one may have gone: empty
// containers are reaped): for operations that must make nothing.
func NothingCreated(t testing.TB, servers, base string) (check func()) {
	t.Helper()
	conn := Connect(t, servers)
	root := func() []string {
		kids, _, err := conn.Children("/")
		if err != nil {
			t.Fatal(err)
		}
		return kids
	}
	before := root()
	return func() {
		t.Helper()
		if ok, _, err := conn.Exists(base); err != nil || ok {
			t.Errorf("%s exists (%v): %s", base, err, strings.Join(describeTree(conn, base), ", "))
		}
		for _, k := range root() {
			if !slices.Contains(before, k) {
				t.Errorf("/%s was created; the root had %v", k, before)
			}
		}
	}
}

// WaitChildren waits, with watches, until path has exactly n children
// (path may not exist yet), at most Timeout, and returns them.
func WaitChildren(t testing.TB, conn *zk.Conn, path string, n int) []string {
	t.Helper()
	deadline := time.After(Timeout)
	for {
		kids, _, w, err := conn.ChildrenW(path)
		if errors.Is(err, zk.ErrNoNode) {
			var ok bool
			if ok, _, w, err = conn.ExistsW(path); ok {
				continue // made in between
			}
		}
		if err != nil {
			t.Fatalf("children of %s: %v", path, err)
		}
		if len(kids) == n {
			return kids
		}
		select {
		case <-w:
		case <-deadline:
			t.Fatalf("%s has %d children after %v, not %d: %v", path, len(kids), Timeout, n, kids)
		}
	}
}

// Queued starts acquire on a goroutine, waits until path has n children
// (WaitChildren: acquire has queued), and returns a function that cancels
// the acquire and waits for it to end, which also runs when the test ends.
func Queued(t testing.TB, conn *zk.Conn, path string, n int, acquire func(ctx context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(Context(t))
	done := make(chan error, 1)
	go func() { done <- acquire(ctx) }()
	WaitChildren(t, conn, path, n)
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			Recv(t, done, "the queued contender's end")
		}
	}
	t.Cleanup(stop)
	return stop
}

// Watches parses the output of the four-letter word "wchp": a watched path
// on a line of its own, then the sessions that watch it ("0x…"), indented,
// one a line. It returns the sessions by path.
func Watches(wchp string) map[string][]string {
	out := map[string][]string{}
	path := ""
	for _, line := range strings.Split(wchp, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case trimmed != line:
			if path != "" {
				out[path] = append(out[path], trimmed)
			}
		default:
			path = line
		}
	}
	return out
}

// Watching reports whether a server's "wchp" output shows session watching
// path.
func Watching(wchp string, session int64, path string) bool {
	return slices.Contains(Watches(wchp)[path], fmt.Sprintf("0x%x", session))
}
