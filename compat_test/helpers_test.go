package compat_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
)

// javaAcquire asks the peer to acquire lock on worker, qty leases where the
// recipe has leases.
func javaAcquire(p *peer, worker, lock string, qty int, opts ...string) *call {
	return p.send(worker, "acquire", append([]string{lock, "qty=" + strconv.Itoa(qty)}, opts...)...)
}

// waitWatching waits until the server shows that session watches a path
// for which match is true (a Curator waiter watches the node ahead of it,
// or a semaphore's leases), polling the server's watches ("wchp") until the
// test's bound, which fails the test. It returns false, without failing, if
// stop is closed first (the waiter stopped waiting).
func waitWatching(t testing.TB, session int64, match func(path string) bool, stop <-chan struct{}) bool {
	t.Helper()
	ctx := testutil.Context(t)
	want := fmt.Sprintf("0x%x", session)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		out, err := server.FourLetterWord("wchp")
		testutil.Must(t, err)
		for path, sessions := range testutil.Watches(out) {
			if match(path) && slices.Contains(sessions, want) {
				return true
			}
		}
		select {
		case <-stop:
			return false
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("session %s watched nothing it should within %v; the server's watches:\n%s", want, testutil.Timeout, out)
		}
	}
}

// below returns a match for waitWatching: the paths below base, but for
// skip (where the test itself has watched the children).
func below(base, skip string) func(string) bool {
	return func(p string) bool { return strings.HasPrefix(p, base+"/") && p != skip }
}

// children lists path on the server; a missing path has none.
func children(t testing.TB, c *framework.Client, path string) []string {
	t.Helper()
	kids, _, err := c.Children(testutil.Context(t), path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return kids
}

// ownedBy returns the full paths of the children of path whose ephemeral
// owner is session.
func ownedBy(t testing.TB, c *framework.Client, path string, session int64) []string {
	t.Helper()
	var out []string
	for _, k := range children(t, c, path) {
		ok, st, err := c.Exists(testutil.Context(t), path+"/"+k)
		testutil.Must(t, err)
		if ok && st.EphemeralOwner == session {
			out = append(out, path+"/"+k)
		}
	}
	return out
}
