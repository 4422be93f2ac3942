package rawlock

import (
	"context"
	"errors"
	"testing"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// Each kind holds, waits and hands over as its recipe says, against a real
// server: a participant that must wait has not acquired while its node
// sits queued, and acquires once the node it waits for is gone.
func TestKinds(t *testing.T) {
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t)
	ctx, base := testutil.Begin(t, srv.Addr())
	conn := testutil.Connect(t, srv.Addr())
	lock := func(dir, prefix string, kind Kind) *Lock {
		return &Lock{Conn: conn, Dir: base + "/" + dir, Prefix: prefix, Kind: kind, Leases: 2}
	}
	hold := func(l *Lock) {
		t.Helper()
		if err := l.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	release := func(l *Lock) {
		t.Helper()
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	// queue starts l's Acquire and returns once its node is the n-th under
	// its Dir; the channel gets Acquire's result.
	queue := func(ctx context.Context, l *Lock, n int) <-chan error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- l.Acquire(ctx) }()
		for {
			kids, _, ch, err := conn.ChildrenW(l.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(kids) >= n {
				break
			}
			testutil.Recv(t, ch, "a child of "+l.Dir)
		}
		select {
		case err := <-done:
			t.Fatalf("%s acquired (%v) while it must wait", l.Prefix, err)
		default:
		}
		return done
	}
	acquired := func(done <-chan error) {
		t.Helper()
		if err := testutil.Recv(t, done, "an acquisition"); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("exclusive", func(t *testing.T) {
		a, b := lock("m", "lock-", Exclusive), lock("m", "lock-", Exclusive)
		hold(a)
		done := queue(ctx, b, 2)
		release(a)
		acquired(done)
		if Seq(b.Node()) <= 0 {
			t.Errorf("node %q has no sequence number", b.Node())
		}
		release(b)
	})
	t.Run("leases", func(t *testing.T) {
		a, b, c := lock("s", "lease-", Leases), lock("s", "lease-", Leases), lock("s", "lease-", Leases)
		hold(a)
		hold(b)
		done := queue(ctx, c, 3)
		release(a)
		acquired(done)
		release(b)
		release(c)
	})
	t.Run("readers and writers", func(t *testing.T) {
		r1, r2 := lock("rw", "read-", Reader), lock("rw", "read-", Reader)
		w, r3 := lock("rw", "write-", Exclusive), lock("rw", "read-", Reader)
		hold(r1)
		hold(r2)
		wDone := queue(ctx, w, 3)
		rDone := queue(ctx, r3, 4)
		release(r1)
		release(r2)
		acquired(wDone)
		release(w)
		acquired(rDone)
		release(r3)
	})
	t.Run("limit holds at once, contended or not", func(t *testing.T) {
		a, b := lock("l", "lock-", Limit), lock("l", "lock-", Limit)
		hold(a)
		hold(b)
		release(a)
		release(b)
	})
	t.Run("a waiter that gives up deletes its node", func(t *testing.T) {
		a, b := lock("c", "lock-", Exclusive), lock("c", "lock-", Exclusive)
		hold(a)
		bctx, cancel := context.WithCancel(ctx)
		done := queue(bctx, b, 2)
		cancel()
		if err := testutil.Recv(t, done, "the cancelled acquisition"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled acquire: %v", err)
		}
		kids, _, err := conn.Children(b.Dir)
		if err != nil || len(kids) != 1 {
			t.Errorf("after the cancelled acquire: %v, %v; want a's node alone", kids, err)
		}
		release(a)
	})
	if err := EnsurePath(conn, base+"/x/y"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := conn.Exists(base + "/x/y"); !ok || err != nil {
		t.Errorf("EnsurePath: %v, %v", ok, err)
	}
}
