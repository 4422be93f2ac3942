package rawlock

import (
	"context"
	"errors"
	"fmt"
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
	hold := func(t *testing.T, l *Lock) {
		t.Helper()
		testutil.Must(t, l.Acquire(ctx))
	}
	release := func(t *testing.T, l *Lock) {
		t.Helper()
		testutil.Must(t, l.Release())
	}
	// queue starts l's Acquire and returns once its node is the n-th under
	// its Dir and parked Acquires of the test wait (l's among them); the
	// channel gets Acquire's result.
	queue := func(t *testing.T, ctx context.Context, l *Lock, n, parked int) <-chan error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- l.Acquire(ctx) }()
		testutil.WaitChildren(t, conn, l.Dir, n)
		testutil.Until(t, l.Prefix+" waiting", func() (bool, string) {
			select {
			case err := <-done:
				t.Fatalf("%s acquired (%v) while it must wait", l.Prefix, err)
			default:
			}
			p := testutil.Parked("rawlock.(*Lock).Acquire")
			return p == parked, fmt.Sprintf("%d Acquires wait, want %d", p, parked)
		})
		return done
	}
	acquired := func(t *testing.T, done <-chan error) {
		t.Helper()
		testutil.Must(t, testutil.Recv(t, done, "an acquisition"))
	}

	t.Run("exclusive", func(t *testing.T) {
		a, b := lock("m", "lock-", Exclusive), lock("m", "lock-", Exclusive)
		hold(t, a)
		done := queue(t, ctx, b, 2, 1)
		release(t, a)
		acquired(t, done)
		if Seq(b.Node()) <= 0 {
			t.Errorf("node %q has no sequence number", b.Node())
		}
		release(t, b)
	})
	t.Run("leases", func(t *testing.T) {
		a, b, c := lock("s", "lease-", Leases), lock("s", "lease-", Leases), lock("s", "lease-", Leases)
		hold(t, a)
		hold(t, b)
		done := queue(t, ctx, c, 3, 1)
		release(t, a)
		acquired(t, done)
		release(t, b)
		release(t, c)
	})
	t.Run("readers and writers", func(t *testing.T) {
		r1, r2 := lock("rw", "read-", Reader), lock("rw", "read-", Reader)
		w, r3 := lock("rw", "write-", Exclusive), lock("rw", "read-", Reader)
		hold(t, r1)
		hold(t, r2)
		wDone := queue(t, ctx, w, 3, 1)
		rDone := queue(t, ctx, r3, 4, 2)
		release(t, r1)
		release(t, r2)
		acquired(t, wDone)
		release(t, w)
		acquired(t, rDone)
		release(t, r3)
	})
	t.Run("limit holds at once, contended or not", func(t *testing.T) {
		a, b := lock("l", "lock-", Limit), lock("l", "lock-", Limit)
		hold(t, a)
		hold(t, b)
		release(t, a)
		release(t, b)
	})
	t.Run("a waiter that gives up deletes its node", func(t *testing.T) {
		a, b := lock("c", "lock-", Exclusive), lock("c", "lock-", Exclusive)
		hold(t, a)
		bctx, cancel := context.WithCancel(ctx)
		done := queue(t, bctx, b, 2, 1)
		cancel()
		if err := testutil.Recv(t, done, "the cancelled acquisition"); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled acquire: %v", err)
		}
		kids, _, err := conn.Children(b.Dir)
		if err != nil || len(kids) != 1 {
			t.Errorf("after the cancelled acquire: %v, %v; want a's node alone", kids, err)
		}
		release(t, a)
	})
	if err := EnsurePath(conn, base+"/x/y"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := conn.Exists(base + "/x/y"); !ok || err != nil {
		t.Errorf("EnsurePath: %v, %v", ok, err)
	}
}
