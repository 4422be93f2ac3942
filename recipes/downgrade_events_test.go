package recipes_test

import (
	"errors"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// A downgrade whose write lock is lost while its read node waits is told
// as a failed acquisition, not as a read lock acquired and released: the
// owner never held the read lock, and a team watching its events must not
// see it held. The write lock is lost (SUSPENDED, the default policy) as
// the read node is created: the create's reply is lost, with the
// connection; the create is made good in the same session, the read node
// would hold beside the write node, but the write lock it would take the
// place of can no longer be trusted.
func TestAFailedDowngradeIsToldAsFailed(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	log := newEventLog()
	c := newClient(t, proxy.Addr(), framework.WithEventHook(log))
	rw := mustRW(t, c, base)
	o := rw.NewHandle()
	if err := o.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if got := kinds(log.next(t, 2)); got != "acquire-started write, acquired write" {
		t.Fatalf("events of the write lock: %s", got)
	}
	if _, err := o.WriteLock().FencingToken(ctx); err != nil { // read now: the downgrade's next request is its create
		t.Fatal(err)
	}
	lost := proxy.LoseNextReply(zktest.OpCreate)

	err := o.ReadLock().Acquire(ctx)
	testutil.Recv(t, lost, "the lost reply to the read node's create")
	if !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("the downgrade = %v, want it to fail with ErrLockLost", err)
	}
	got := log.next(t, 3)
	if k := kinds(got[:1]); k != "acquire-started read" {
		t.Fatalf("the downgrade's first event: %s", k)
	}
	if k := kinds(got[1:]); k != "lost write, acquire-failed read" && k != "acquire-failed read, lost write" {
		t.Fatalf("then: %s; want the write lock lost and the read lock failed", k)
	}
	if o.ReadLock().IsHeld() {
		t.Fatal("the read lock is held after a failed downgrade")
	}
	if err := o.WriteLock().Release(ctx); !errors.Is(err, recipes.ErrLockLost) {
		t.Fatalf("the lost write lock's release = %v, want ErrLockLost", err)
	}
	noEphemeralsLeft(t, base, "nothing left behind (the lost write node goes in the background)")
}
