package recipes

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
)

// A downgrade whose write lock is lost while its read node waits is told
// as a failed acquisition, not as a read lock acquired and released: the
// owner never held the read lock, and a team watching its events must not
// see it held. The write lock is lost (its node found gone, as by another
// client's delete) the moment the read node's first listing is taken.
func TestAFailedDowngradeIsToldAsFailed(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	log := newEventLog()
	c := newClient(t, "", framework.WithEventHook(log))
	rw := mustRW(t, c, base)
	o := rw.NewHandle()
	if err := o.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kinds(log.next(t, 2)); got != "acquire-started write, acquired write" {
		t.Fatalf("events of the write lock: %s", got)
	}
	w := o.WriteLock().current()
	var once sync.Once
	rw.write.li.listHook = func(listEvent, context.Context, uint64) { once.Do(w.lose) }

	err := o.ReadLock().Acquire(ctx)
	if !errors.Is(err, ErrLockLost) {
		t.Fatalf("the downgrade = %v, want it to fail with ErrLockLost", err)
	}
	if got, want := kinds(log.next(t, 3)), "acquire-started read, lost write, acquire-failed read"; got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if o.ReadLock().IsHeld() {
		t.Fatal("the read lock is held after a failed downgrade")
	}
	if err := o.WriteLock().Release(ctx); !errors.Is(err, ErrLockLost) {
		t.Fatalf("the lost write lock's release = %v, want ErrLockLost", err)
	}
	noEphemeralsLeft(t, base, "nothing left behind (the lost write node goes in the background)")
}
