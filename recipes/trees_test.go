package recipes_test

import (
	"errors"
	"sort"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// The trees of docs/tree-format.md, name for name, as Java Curator 5.4 writes them: node names, modes
// (ephemeral owner; sequence numbers the server gave, or not), data.

type nodeWant struct {
	match func(string) bool
	data  string
	owner int64
}

// assertTree checks path's children against want, in sequence order (the
// last 10 characters of each name).
func assertTree(t *testing.T, raw *zk.Conn, path string, want []nodeWant) {
	t.Helper()
	kids, _, err := raw.Children(path)
	if errors.Is(err, zk.ErrNoNode) && len(want) == 0 {
		return // an empty container, reaped already
	}
	if err != nil {
		t.Fatalf("children of %s: %v", path, err)
	}
	seq := func(s string) string { return s[max(0, len(s)-10):] }
	sort.Slice(kids, func(i, j int) bool { return seq(kids[i]) < seq(kids[j]) })
	if len(kids) != len(want) {
		t.Fatalf("%s has %v, want %d children", path, kids, len(want))
	}
	for i, w := range want {
		k := kids[i]
		if !w.match(k) {
			t.Errorf("%s child %d = %q: wrong name", path, i, k)
		}
		data, stat, err := raw.Get(path + "/" + k)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) != w.data || stat.EphemeralOwner != w.owner {
			t.Errorf("%s/%s: data %q owner %x, want %q owner %x", path, k, data, stat.EphemeralOwner, w.data, w.owner)
		}
	}
}

func suffixIs(re interface{ MatchString(string) bool }, suffix string) func(string) bool {
	return func(s string) bool {
		return re.MatchString(s) && len(s) > len(suffix) && s[len(s)-len(suffix):] == suffix
	}
}

// docs/tree-format.md, InterProcessReadWriteLock: c1 reading, c2 reading (lockData rwdata), c2 writing:
// READ 0, READ 1, WRIT 2 — one sequence, both halves carry the lock data.
func TestTreeReadWriteLock(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	ip := framework.WithDefaultData([]byte("127.0.0.1"))
	c1, c2 := newClient(t, "", ip), newClient(t, "", ip)
	r1 := mustRW(t, c1, base).NewHandle().ReadLock()
	rw2 := mustRW(t, c2, base, recipes.WithLockData([]byte("rwdata")))
	r2, w2 := rw2.NewHandle().ReadLock(), rw2.NewHandle().WriteLock()
	for _, h := range []*recipes.Handle{r1, r2} {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	writing := make(chan error, 1)
	go func() { writing <- w2.Acquire(ctx) }()
	waitForChildren(t, c1, base, 3)
	assertTree(t, raw, base, []nodeWant{
		{match: suffixIs(readNode, "__READ__0000000000"), data: "127.0.0.1", owner: c1.SessionID()},
		{match: suffixIs(readNode, "__READ__0000000001"), data: "rwdata", owner: c2.SessionID()},
		{match: suffixIs(writeNode, "__WRIT__0000000002"), data: "rwdata", owner: c2.SessionID()},
	})
	parts, err := rw2.ParticipantNodes(ctx)
	if err != nil || len(parts) != 3 || parts[0] != r1.LockPath() || parts[1] != r2.LockPath() {
		t.Fatalf("ParticipantNodes = %v (%v)", parts, err)
	}
	data, stat, err := raw.Get(base)
	if err != nil || len(data) != 0 || stat.EphemeralOwner != 0 {
		t.Fatalf("parent: data %q owner %x (%v)", data, stat.EphemeralOwner, err)
	}
	for _, h := range []*recipes.Handle{r1, r2} {
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := testutil.Recv(t, writing, "the writer's Acquire"); err != nil {
		t.Fatal(err)
	}
	if parts[2] != w2.LockPath() {
		t.Fatalf("participant %s is not the writer's %s", parts[2], w2.LockPath())
	}
	if err := w2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// docs/tree-format.md, InterProcessSemaphoreV2 (max 3): c1 with 2 leases and c2 with 1 (leasedata); a
// fourth acquire by c2 holds locks/…-lock-<seq> and has its lease node
// while it waits. Then: P/locks empty once it is granted; P, P/locks and
// P/leases are containers (the server reaps them once empty).
func TestTreeSemaphore(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	ip := framework.WithDefaultData([]byte("127.0.0.1"))
	c1, c2 := newClient(t, "", ip), newClient(t, "", ip)
	s1 := mustSemaphore(t, c1, base, 3)
	s2 := mustSemaphore(t, c2, base, 3, recipes.WithLeaseData([]byte("leasedata")))
	l1, err := s1.AcquireN(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := s2.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if data, err := l2.Data(ctx); err != nil || string(data) != "leasedata" {
		t.Fatalf("Lease.Data = %q, %v", data, err)
	}
	if l2.Path() != base+"/leases/"+l2.NodeName() || !leaseNode.MatchString(l2.NodeName()) {
		t.Fatalf("lease path %s name %s", l2.Path(), l2.NodeName())
	}
	fourth := make(chan *recipes.Lease, 1)
	go func() {
		l, err := s2.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		fourth <- l
	}()
	waitForChildren(t, c1, base+"/leases", 4)
	lease := func(data string, owner int64) nodeWant {
		return nodeWant{match: leaseNode.MatchString, data: data, owner: owner}
	}
	assertTree(t, raw, base+"/leases", []nodeWant{
		lease("127.0.0.1", c1.SessionID()), lease("127.0.0.1", c1.SessionID()),
		lease("leasedata", c2.SessionID()), lease("leasedata", c2.SessionID()),
	})
	assertTree(t, raw, base+"/locks", []nodeWant{{match: mutexNode.MatchString, data: "127.0.0.1", owner: c2.SessionID()}})
	for _, p := range []string{base, base + "/locks", base + "/leases"} {
		if data, stat, err := raw.Get(p); err != nil || len(data) != 0 || stat.EphemeralOwner != 0 {
			t.Fatalf("%s: data %q owner %x (%v)", p, data, stat.EphemeralOwner, err)
		}
	}
	if t1, t2 := tokenOf(t, l1[1]), tokenOf(t, l2); t2 <= t1 {
		t.Fatalf("fencing tokens %d then %d", t1, t2)
	}
	if err := l1[0].Close(ctx); err != nil {
		t.Fatal(err)
	}
	l4 := testutil.Recv(t, fourth, "the fourth lease")
	if l4 == nil {
		t.FailNow()
	}
	if kids := children(t, base+"/locks"); len(kids) != 0 {
		t.Fatalf("internal lock held after the grant: %v", kids)
	}
	if err := recipes.ReturnAll(ctx, []*recipes.Lease{l1[1], l2, l4}); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, raw, base) // only containers are reaped
}

// docs/tree-format.md, InterProcessSemaphoreMutex: P/locks empty, P/leases/_c_…-lease-0000000000 with
// the local IP, while held.
func TestTreeSemaphoreMutex(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	c := newClient(t, "", framework.WithDefaultData([]byte("127.0.0.1")))
	m, err := recipes.NewInterProcessSemaphoreMutex(c, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	assertTree(t, raw, base+"/leases", []nodeWant{{match: suffixIs(leaseNode, "-lease-0000000000"), data: "127.0.0.1", owner: c.SessionID()}})
	assertTree(t, raw, base+"/locks", nil)
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
