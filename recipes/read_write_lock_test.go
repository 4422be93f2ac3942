package recipes_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

const uuidRE = `[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`

var (
	readNode  = regexp.MustCompile(`^_c_` + uuidRE + `-__READ__([0-9]{10})$`)
	writeNode = regexp.MustCompile(`^_c_` + uuidRE + `-__WRIT__([0-9]{10})$`)
)

func mustRW(t testing.TB, c *framework.Client, path string, opts ...recipes.LockOption) *recipes.InterProcessReadWriteLock {
	t.Helper()
	rw, err := recipes.NewInterProcessReadWriteLock(c, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rw
}

// rwGuard is the in-test proof of the read-write invariant.
type rwGuard struct {
	mu               sync.Mutex
	readers, writers int
	errs             []error
}

func (g *rwGuard) enter(write bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if write {
		if g.readers > 0 || g.writers > 0 {
			g.errs = append(g.errs, fmt.Errorf("writer in with %d readers and %d writers", g.readers, g.writers))
		}
		g.writers++
	} else {
		if g.writers > 0 {
			g.errs = append(g.errs, fmt.Errorf("reader in with %d writers", g.writers))
		}
		g.readers++
	}
}

func (g *rwGuard) leave(write bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if write {
		g.writers--
	} else {
		g.readers--
	}
}

// 2 writers and 6 readers over 3 clients, 30 rounds each: readers share
// (all 6 are shown to hold at once), writers exclude everyone.
func TestReadWriteLockExclusionAndSharing(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	clients := []*framework.Client{newClient(t, ""), newClient(t, ""), newClient(t, "")}
	const readers, writers, rounds = 6, 2, 30
	var g rwGuard

	// In their first round all readers hold at once: each waits, holding,
	// until every one holds. Writers start once they have.
	allIn := make(chan struct{})
	var in sync.WaitGroup
	in.Add(readers)
	go func() { in.Wait(); close(allIn) }()
	owners := make([]*recipes.ReadWriteHandle, readers+writers)
	for i := range owners {
		owners[i] = mustRW(t, clients[i%len(clients)], base).NewHandle()
	}
	runAll(t, readers+writers, func(i int) error {
		c, owner := clients[i%len(clients)], owners[i]
		write := i >= readers
		l := owner.ReadLock()
		if write {
			l = owner.WriteLock()
			select {
			case <-allIn:
			case <-ctx.Done():
			}
		}
		return lockRounds(ctx, l, rounds, func(r int) error {
			g.enter(write)
			defer g.leave(write)
			if r == 0 && !write {
				in.Done()
				select {
				case <-allIn:
				case <-ctx.Done():
				}
			}
			// work under the lock: a round trip to the server, long enough
			// for a contender that wrongly got in to be seen by the guard
			_, _, err := c.Exists(ctx, base)
			return err
		})
	})
	select {
	case <-allIn:
	default:
		t.Fatal("the readers never all held at once")
	}
	if len(g.errs) > 0 {
		t.Fatalf("%d violations, first: %v", len(g.errs), g.errs[0])
	}
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
}

// Readers R1 holds, writer W queues, reader R2 arrives: R2 may not overtake W.
func TestReadWriteLockNoWriterStarvation(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2, c3 := newClient(t, ""), newClient(t, ""), newClient(t, "")
	r1 := mustRW(t, c1, base).NewHandle().ReadLock()
	w := mustRW(t, c2, base).NewHandle().WriteLock()
	r2 := mustRW(t, c3, base).NewHandle().ReadLock()
	if err := r1.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	var order eventLog
	wDone, r2Done := make(chan error, 1), make(chan error, 1)
	go func() {
		err := w.Acquire(ctx)
		order.note("W")
		if err == nil {
			err = w.Release(ctx)
		}
		wDone <- err
	}()
	waitForChildren(t, c1, base, 2)

	if err := r2.TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("a reader arriving behind a queued writer: TryAcquire = %v, want ErrLocked", err)
	}
	go func() {
		err := r2.Acquire(ctx)
		order.note("R2")
		if err == nil {
			err = r2.Release(ctx)
		}
		r2Done <- err
	}()
	waitForChildren(t, c1, base, 3)
	order.note("R1 releases")
	if err := r1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, wDone, "W's Acquire"); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, r2Done, "R2's Acquire"); err != nil {
		t.Fatal(err)
	}
	if got := order.String(); got != "[R1 releases W R2]" {
		t.Fatalf("order %s, want the writer before the later reader", got)
	}
}

// CURATOR-621: a writer W2 queued while W1 holds; W1 downgrades and releases
// the write lock. The read node takes W1's place, so W2 must not hold while
// the read lock is held.
func TestReadWriteLockDowngrade(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c1, c2 := newClient(t, ""), newClient(t, "")
	raw := testutil.Connect(t, server.Addr())
	owner := mustRW(t, c1, base, recipes.WithLockData([]byte("owner"))).NewHandle()
	if err := owner.WriteLock().Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w2 := mustRW(t, c2, base).NewHandle().WriteLock()
	var order eventLog
	w2Done := make(chan error, 1)
	go func() {
		err := w2.Acquire(ctx)
		order.note("W2 holds")
		w2Done <- err
	}()
	waitForChildren(t, c1, base, 2)

	if err := owner.ReadLock().Acquire(ctx); err != nil {
		t.Fatalf("downgrade: %v", err)
	}
	_, writeName := framework.SplitPath(owner.WriteLock().LockPath())
	_, readName := framework.SplitPath(owner.ReadLock().LockPath())
	wm, rm := writeNode.FindStringSubmatch(writeName), readNode.FindStringSubmatch(readName)
	if wm == nil || rm == nil || wm[1] != rm[1] {
		t.Fatalf("write node %q, read node %q: want __READ__ with the write node's sequence", writeName, readName)
	}
	data, stat, err := raw.Get(owner.ReadLock().LockPath())
	if err != nil || stat.EphemeralOwner != c1.SessionID() || string(data) != "owner" {
		t.Fatalf("downgrade node: data %q owner %x (%v); want ephemeral of %x with the lock data", data, stat.EphemeralOwner, err, c1.SessionID())
	}
	// Non-sequential: a sequential create would have had the parent's cversion
	// appended, so the name would not end in the write node's sequence. Its
	// token is the write lock's, whose place it takes (TestDowngradeTokenIsTheWriteLocks).
	_, wstat, err := raw.Get(owner.WriteLock().LockPath())
	if err != nil {
		t.Fatal(err)
	}
	if tok := tokenOf(t, owner.ReadLock()); tok != wstat.Czxid {
		t.Fatalf("read token %d, the write node's czxid %d", tok, wstat.Czxid)
	}
	if err := owner.WriteLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !owner.ReadLock().IsHeld() || owner.WriteLock().IsHeld() {
		t.Fatal("after releasing the write lock the owner should hold only the read lock")
	}

	// Every participant, Java's included, now sees W2 behind the read node.
	kids := children(t, base)
	var w2Name string
	for _, k := range kids {
		if writeNode.MatchString(k) {
			w2Name = k
		}
	}
	held, watch, found := locktree.Write(locktree.Sort(kids, locktree.ReadWriteSortKey), w2Name)
	if !found || held || watch != readName {
		t.Fatalf("tree %v: W2 held=%v watching %q (found %v); want waiting on the downgrade node %s", kids, held, watch, found, readName)
	}
	select {
	case err := <-w2Done:
		t.Fatalf("W2 got the write lock while the downgraded read lock is held (%v)", err)
	default:
	}
	if err := mustRW(t, c2, base).NewHandle().ReadLock().TryAcquire(ctx); !errors.Is(err, recipes.ErrLocked) {
		t.Fatalf("a new reader behind the queued W2: %v, want ErrLocked", err)
	}
	order.note("read released")
	if err := owner.ReadLock().Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := testutil.Recv(t, w2Done, "W2's Acquire"); err != nil {
		t.Fatal(err)
	}
	if got := order.String(); got != "[read released W2 holds]" {
		t.Fatalf("order %s", got)
	}
	if err := w2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Reentrancy on both halves and releases in any order; an upgrade fails at
// once and leaves no node.
func TestReadWriteLockReentrancyAndUpgrade(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	rw := mustRW(t, c, base)
	o := rw.NewHandle()
	quick, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()

	// read, read again, then write: an upgrade
	for i := 0; i < 2; i++ {
		if err := o.ReadLock().Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if kids := children(t, base); len(kids) != 1 {
		t.Fatalf("reentrant read made nodes %v", kids)
	}
	if err := o.WriteLock().Acquire(quick); !errors.Is(err, recipes.ErrUpgrade) {
		t.Fatalf("upgrade = %v, want ErrUpgrade", err)
	}
	if err := o.WriteLock().TryAcquire(quick); !errors.Is(err, recipes.ErrUpgrade) {
		t.Fatalf("upgrade try = %v, want ErrUpgrade", err)
	}
	if kids := children(t, base); len(kids) != 1 || !readNode.MatchString(kids[0]) {
		t.Fatalf("after the upgrade attempts: %v, want only the read node", kids)
	}
	for i := 0; i < 2; i++ {
		if err := o.ReadLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// write twice, read (downgrade), write again (reentrancy, not upgrade);
	// release the write holds, then the read.
	for _, step := range []func() error{
		func() error { return o.WriteLock().Acquire(ctx) },
		func() error { return o.WriteLock().Acquire(ctx) },
		func() error { return o.ReadLock().Acquire(ctx) },
		func() error { return o.ReadLock().Acquire(ctx) },
		func() error { return o.WriteLock().Acquire(quick) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if kids := children(t, base); len(kids) != 2 {
		t.Fatalf("write x3 + read x2 made %v, want 2 nodes", kids)
	}
	parts, err := rw.ParticipantNodes(ctx)
	if err != nil || len(parts) != 2 || !strings.HasPrefix(parts[0], base+"/") {
		t.Fatalf("ParticipantNodes = %v, %v", parts, err)
	}
	for i := 0; i < 3; i++ {
		if err := o.WriteLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// only the read (downgrade) node is left; asking for write now is an upgrade
	if kids := children(t, base); len(kids) != 1 || !readNode.MatchString(kids[0]) {
		t.Fatalf("after the write releases: %v", kids)
	}
	if err := o.WriteLock().Acquire(quick); !errors.Is(err, recipes.ErrUpgrade) {
		t.Fatalf("write after a downgrade = %v, want ErrUpgrade", err)
	}
	for i := 0; i < 2; i++ {
		if err := o.ReadLock().Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.ReadLock().Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("extra read release = %v", err)
	}
	if err := o.WriteLock().Release(ctx); !errors.Is(err, recipes.ErrNotHeld) {
		t.Fatalf("extra write release = %v", err)
	}
	if kids := children(t, base); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}

	// read then write by another owner works; the halves are Lockers
	var l recipes.Locker = rw.NewHandle().WriteLock()
	if err := recipes.WithLock(ctx, l, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if rw.Path() != base {
		t.Fatalf("Path = %q", rw.Path())
	}
	if _, err := recipes.NewInterProcessReadWriteLock(c, "bad"); err == nil {
		t.Fatal("bad path accepted")
	}
	if _, err := recipes.NewInterProcessReadWriteLock(nil, base); !errors.Is(err, framework.ErrInvalidArgument) {
		t.Fatalf("nil client: %v", err)
	}
}
