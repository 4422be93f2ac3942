package testutil

import (
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Connect opens a raw go-zookeeper connection for checking the server's
// view of the tree, waits for its session, and closes it when the test ends.
func Connect(t testing.TB, servers string) *zk.Conn {
	t.Helper()
	conn, events, err := zk.Connect([]string{servers}, 10*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatalf("connect %s: %v", servers, err)
	}
	t.Cleanup(func() {
		conn.Close()
		for range events { // wait for go-zookeeper's goroutines to end
		}
	})
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

// CleanupTree deletes path and everything below it when the test ends, so
// that every test leaves the shared server as it found it.
func CleanupTree(t testing.TB, servers, path string) {
	t.Helper()
	conn := Connect(t, servers)
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
