package recipes_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// A function under WithLock that panics gives the lock up before the panic
// goes on: a caller that recovers it (net/http does, for every handler)
// finds the lock free for others at once, and the panic is not swallowed.
func TestWithLockReleasesOnPanic(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	count := newEndCounter()
	h := mustMutex(t, newClient(t, "", framework.WithEventHook(count)), base).NewHandle()
	rival := mustMutex(t, newClient(t, ""), base).NewHandle()
	var recovered any
	func() {
		defer func() { recovered = recover() }()
		_ = recipes.WithLock(ctx, h, func(context.Context) error { panic("boom") })
	}()
	if recovered != "boom" {
		t.Fatalf("recovered %v, want the function's panic", recovered)
	}
	testutil.ErrorIs(t, h.Err(), recipes.ErrNotHeld)
	if err := rival.TryAcquire(ctx); err != nil {
		t.Fatalf("another client's try after the recovered panic: %v: the lock was kept", err)
	}
	testutil.Must(t, rival.Release(ctx))
	testutil.Until(t, "the acquisition told as released", func() (bool, string) {
		bad := count.check(recipes.Released)
		return bad == "" && count.nodes() == 1, bad
	})
}

// childClient connects a child process (testutil.RunChild) to its parent's
// server, with a session that outlives the child by far: what it leaves
// behind when it dies stays until the servers expire the session.
func childClient(t *testing.T) *framework.Client {
	c, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewNTimes(3, 10*time.Millisecond), framework.WithSessionTimeout(20*time.Second))
	testutil.Must(t, err)
	testutil.Must(t, c.BlockUntilConnected(testutil.Context(t)))
	return c // not closed: the child dies with it open
}

// TestSelectorPanicChild is TestLeaderSelectorPanicGivesLeadershipUp's
// child: a selector whose function panics, in a process of its own.
func TestSelectorPanicChild(t *testing.T) {
	if !testutil.IsChild() {
		return
	}
	s, err := recipes.NewLeaderSelector(childClient(t), os.Getenv("GOCURATOR_BASE"), func(context.Context) error {
		panic("leadership boom")
	})
	testutil.Must(t, err)
	testutil.Must(t, s.Start())
	<-testutil.Context(t).Done()
	t.Fatal("the leadership function's panic did not end the process")
}

// A leadership function that panics takes its process down (it runs on
// the selector's goroutine, and the panic is not swallowed), but not with
// its leadership: the node is deleted before the panic goes on, so the
// next candidate need not wait for the servers to expire the dead
// process's session (20 s here).
func TestLeaderSelectorPanicGivesLeadershipUp(t *testing.T) {
	_, base := testutil.Begin(t, server.Addr())
	out, err := testutil.RunChild(t, "TestSelectorPanicChild", "GOCURATOR_BASE="+base)
	if err == nil || !strings.Contains(out, "panic: leadership boom") {
		t.Fatalf("the child ended with %v, want the function's panic; it printed:\n%s", err, out)
	}
	if left := children(t, base); len(left) != 0 {
		t.Fatalf("the dead leader's node is still there: %v", left)
	}
}

// TestRevocationPanicChild is TestRevocationListenerPanicGivesTheLockUp's
// child: a revocable holder whose revocation listener panics.
func TestRevocationPanicChild(t *testing.T) {
	if !testutil.IsChild() {
		return
	}
	h := mustMutex(t, childClient(t), os.Getenv("GOCURATOR_BASE")).NewHandle()
	h.MakeRevocable(func() { panic("revocation boom") })
	testutil.Must(t, h.Acquire(testutil.Context(t)))
	<-testutil.Context(t).Done()
	t.Fatal("the revocation listener's panic did not end the process")
}

// A revocation listener that panics (it runs on a goroutine of the
// library's) takes its process down, but not with the lock: the node is
// deleted first.
func TestRevocationListenerPanicGivesTheLockUp(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	ended := make(chan string, 1)
	go func() {
		out, err := testutil.RunChild(t, "TestRevocationPanicChild", "GOCURATOR_BASE="+base)
		if err == nil {
			out = "(exit 0)\n" + out
		}
		ended <- out
	}()
	node := testutil.WaitChildren(t, rawConn(t), base, 1)[0]
	testutil.Must(t, recipes.Revoke(ctx, newClient(t, ""), base+"/"+node))
	if out := testutil.Recv(t, ended, "the child's end"); !strings.Contains(out, "panic: revocation boom") {
		t.Fatalf("the child did not die of its listener's panic; it printed:\n%s", out)
	}
	if left := children(t, base); len(left) != 0 {
		t.Fatalf("the dead holder's node is still there: %v", left)
	}
}
