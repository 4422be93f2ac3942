package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Three paths, the third held elsewhere: when the deadline passes, the first
// two are released and nothing of ours is left.
func TestMultiLockDeadlineReleasesTaken(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2 := newClient(t, ""), newClient(t, "")
	paths := []string{base + "/a", base + "/b", base + "/c"}
	holder := mustMutex(t, c2, paths[2]).NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	ml, err := recipes.NewInterProcessMultiLock(c1, paths)
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = ml.Acquire(dctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire = %v, want DeadlineExceeded", err)
	}
	for _, p := range paths[:2] {
		if kids := children(t, p); len(kids) != 0 {
			t.Fatalf("%s still has %v", p, kids)
		}
	}
	assertOnlyHolder(t, paths[2], holder)
	if ml.IsHeld() {
		t.Fatal("reported acquired after a failed acquire")
	}
	if err := ml.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("TryAcquire = %v, want ErrLocked", err)
	}
	for _, p := range paths[:2] {
		if kids := children(t, p); len(kids) != 0 {
			t.Fatalf("TryAcquire left %v under %s", kids, p)
		}
	}

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ml.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if kids := children(t, p); len(kids) != 1 || !mutexNode.MatchString(kids[0]) {
			t.Fatalf("%s: %v, want one mutex node", p, kids)
		}
	}
	if !ml.IsHeld() {
		t.Fatal("not reported acquired")
	}
	if err := ml.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		if kids := children(t, p); len(kids) != 0 {
			t.Fatalf("%s: %v after Release", p, kids)
		}
	}
	if err := ml.Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("second Release = %v", err)
	}
}

// fakeLocker records calls in a shared log; it has no TryAcquire.
type fakeLocker struct {
	name       string
	log        *[]string
	acquireErr error
	releaseErr error
	lost       chan struct{}
}

func (f *fakeLocker) Acquire(context.Context) error {
	*f.log = append(*f.log, "acquire "+f.name)
	return f.acquireErr
}

func (f *fakeLocker) Release(context.Context) error {
	*f.log = append(*f.log, "release "+f.name)
	return f.releaseErr
}

func (f *fakeLocker) Done() <-chan struct{} { return f.lost }

func (f *fakeLocker) Err() error {
	select {
	case <-f.lost:
		return recipes.ErrLockLost
	default:
		return nil
	}
}

// Acquire in list order, release in reverse, every release attempted, every
// error joined; a failed acquire releases what was taken in reverse.
func TestMultiLockOrderAndErrors(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	var log []string
	errB, errC := errors.New("b failed"), errors.New("c failed")
	a := &fakeLocker{name: "a", log: &log, lost: make(chan struct{})}
	b := &fakeLocker{name: "b", log: &log, releaseErr: errB, lost: make(chan struct{})}
	c := &fakeLocker{name: "c", log: &log, releaseErr: errC, lost: make(chan struct{})}
	ml, err := recipes.NewInterProcessMultiLockWithLocks(a, b, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := ml.TryAcquire(ctx); !errors.Is(err, framework.ErrInvalidArgument) || len(log) != 0 {
		t.Fatalf("TryAcquire without TryAcquire methods = %v, calls %v", err, log)
	}
	if err := ml.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	lost := ml.Done()
	select {
	case <-lost:
		t.Fatal("Done closed while every lock is fine")
	default:
	}
	close(b.lost)
	waitClosed(ctx, t, lost, "Done after one lock was lost") // any one is enough
	err = ml.Release(ctx)
	if !errors.Is(err, errB) || !errors.Is(err, errC) {
		t.Fatalf("Release = %v, want both errors", err)
	}
	if got := fmt.Sprint(log); got != "[acquire a acquire b acquire c release c release b release a]" {
		t.Fatalf("calls %s", got)
	}

	log = nil
	c.acquireErr = errors.New("c busy")
	if err := ml.Acquire(ctx); !errors.Is(err, c.acquireErr) || !errors.Is(err, errB) {
		t.Fatalf("Acquire = %v, want c's error and b's release error", err)
	}
	if got := fmt.Sprint(log); got != "[acquire a acquire b acquire c release b release a]" {
		t.Fatalf("calls %s", got)
	}
}

// Lost fires when one real lock of several is lost (its client SUSPENDED).
func TestMultiLockLost(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	good, flaky := newClient(t, ""), newClient(t, proxy.Addr())
	sm, err := recipes.NewInterProcessSemaphoreMutex(good, base+"/sem")
	if err != nil {
		t.Fatal(err)
	}
	ml, err := recipes.NewInterProcessMultiLockWithLocks(mustMutex(t, good, base+"/a").NewHandle(), sm,
		mustRW(t, flaky, base+"/rw").NewHandle().WriteLock())
	if err != nil {
		t.Fatal(err)
	}
	if err := ml.TryAcquire(ctx); err != nil {
		t.Fatal(err)
	}
	done := ml.Done()
	select {
	case <-done:
		t.Fatal("Done closed while held")
	default:
	}
	proxy.DropConnections()
	waitClosed(ctx, t, done, "Done after one client was cut off")
	if err := ml.Err(); !errors.Is(err, recipes.ErrLockLost) || ml.IsHeld() {
		t.Fatalf("Err of a lost multi-lock = %v, acquired %v; want ErrLockLost", err, ml.IsHeld())
	}
	if err := ml.Acquire(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("Acquire of a lost multi-lock = %v, want ErrLockLost", err)
	}
	if err := ml.Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("Release of a lost multi-lock = %v, want ErrLockLost", err)
	}
	assertClosed(t, ml.Done(), "Done of an unheld multi-lock")
	if err := ml.Err(); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("Err of a multi-lock released after its loss = %v, want ErrLockLost", err)
	}
}

func waitClosed(ctx context.Context, t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatalf("%s: not closed", what)
	}
}
