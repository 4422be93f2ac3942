package lockqueue

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/protected"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// server is the real ZooKeeper every test of the package shares, each under
// its own path.
var server *zktest.Server

func TestMain(m *testing.M) { os.Exit(testutil.Main(m, &server)) }

// roles returns "role/kind" of each participant, in order.
func roles(l *Listing) []string {
	var out []string
	for _, p := range l.Participants {
		out = append(out, p.Role+"/"+p.Kind)
	}
	return out
}

// nodes returns the participants' paths, in order.
func nodes(l *Listing) []string {
	var out []string
	for _, p := range l.Participants {
		out = append(out, p.Path)
	}
	return out
}

// warningFor returns the warning about node, or "".
func warningFor(l *Listing, node string) string {
	for _, w := range l.Warnings {
		if w.Node == node {
			return w.Message
		}
	}
	return ""
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

func TestListMutex(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := testclient.New(t, server.Addr())
	mu, err := recipes.NewInterProcessMutex(client, path)
	if err != nil {
		t.Fatal(err)
	}
	holder := mu.NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last in, first out: waiters leave, last first (so no one
	// wakes), before the holder releases.
	t.Cleanup(func() { holder.Release(context.Background()) })
	testutil.Queued(t, conn, path, 2, mu.NewHandle().Acquire)
	testutil.Queued(t, conn, path, 3, mu.NewHandle().Acquire)

	l, err := List(ctx, client, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := mu.ParticipantNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != RecipeMutex || !equal(nodes(l), want) {
		t.Fatalf("recipe %s, order %v; want mutex, %v", l.Recipe, nodes(l), want)
	}
	if got := roles(l); !equal(got, []string{"holder/mutex", "waiting/mutex", "waiting/mutex"}) {
		t.Errorf("roles %v", got)
	}
	p := l.Participants[0]
	token, err := holder.FencingToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.Path != holder.LockPath() || p.Token != token || p.Session != fmt.Sprintf("0x%x", client.SessionID()) || p.Data == "" {
		t.Errorf("holder %+v; want node %s, token %d, session 0x%x, the local address as data", p, holder.LockPath(), token, client.SessionID())
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings on a clean tree: %v", l.Warnings)
	}

	// A foreign child that sorts first, and a Kazoo-style one.
	foreign, kazoo := path+"/0-foreign", path+"/a1b2c3d4e5f60718293a4b5c6d7e8f90__lock__0000000009"
	for _, p := range []string{foreign, kazoo} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l, err = List(ctx, client, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(l); !equal(got, []string{"blocking/foreign", "waiting/mutex", "waiting/mutex", "waiting/mutex", "foreign/foreign"}) {
		t.Errorf("roles with foreign children %v", got)
	}
	if w := warningFor(l, foreign); !strings.Contains(w, "sorts first") || !strings.Contains(w, "no contender gets the lock") {
		t.Errorf("warning for 0-foreign: %q", w)
	}
	if w := warningFor(l, kazoo); !strings.Contains(w, "Kazoo") {
		t.Errorf("warning for the Kazoo node: %q", w)
	}
	for _, p := range []string{foreign, kazoo} {
		if err := conn.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListReadWrite(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := testclient.New(t, server.Addr())
	rw, err := recipes.NewInterProcessReadWriteLock(client, path)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := rw.NewHandle().ReadLock(), rw.NewHandle().ReadLock()
	for _, h := range []*recipes.Handle{r1, r2} {
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Release(context.Background()) })
	}
	testutil.Queued(t, conn, path, 3, rw.NewHandle().WriteLock().Acquire)
	testutil.Queued(t, conn, path, 4, rw.NewHandle().ReadLock().Acquire)

	l, err := List(ctx, client, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != RecipeReadWrite {
		t.Fatalf("recipe %s", l.Recipe)
	}
	if got := roles(l); !equal(got, []string{"holder/read", "holder/read", "waiting/write", "waiting/read"}) {
		t.Errorf("roles %v", got)
	}
	if got := nodes(l)[:2]; !equal(got, []string{r1.LockPath(), r2.LockPath()}) {
		t.Errorf("holders %v, want %s and %s", got, r1.LockPath(), r2.LockPath())
	}
	want, err := rw.ParticipantNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !equal(nodes(l), want) {
		t.Errorf("order %v, want the recipe's %v", nodes(l), want)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings on a clean tree: %v", l.Warnings)
	}

}

func TestListSemaphore(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := testclient.New(t, server.Addr())
	sem, err := recipes.NewInterProcessSemaphoreV2(client, path, 2)
	if err != nil {
		t.Fatal(err)
	}
	var held []*recipes.Lease
	for i := 0; i < 2; i++ {
		l, err := sem.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	t.Cleanup(func() { recipes.ReturnAll(context.Background(), held) })
	// A third contender holds the internal lock and waits with its lease created.
	testutil.Queued(t, conn, path+"/leases", 3, func(ctx context.Context) error {
		l, err := sem.Acquire(ctx)
		if err == nil {
			l.Close(context.Background())
		}
		return err
	})

	l, err := List(ctx, client, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != RecipeSemaphore {
		t.Fatalf("recipe %s", l.Recipe)
	}
	if got := roles(l); !equal(got, []string{"holder/lease", "holder/lease", "acquiring/lease", "holder/internal lock"}) {
		t.Errorf("roles %v", got)
	}
	if got := nodes(l)[:2]; !equal(got, []string{held[0].Path(), held[1].Path()}) {
		t.Errorf("holders %v, want %s and %s", got, held[0].Path(), held[1].Path())
	}
	l, err = List(ctx, client, path, Options{MaxLeases: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(l); !equal(got, []string{"holder/lease", "holder/lease", "waiting/lease", "holder/internal lock"}) {
		t.Errorf("roles with --max-leases 2: %v", got)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings on a clean tree: %v", l.Warnings)
	}
	var b strings.Builder
	if err := l.WriteText(&b, time.Now()); err != nil || !strings.Contains(b.String(), "semaphore") || !strings.Contains(b.String(), "leases/_c_") || !strings.Contains(b.String(), "locks/_c_") {
		t.Errorf("text %q, %v", b.String(), err)
	}
}

// TestListCuratorTrees reads trees in the exact format Java Curator 5.4
// writes (docs/tree-format.md), made with raw creates: protected
// names with 36-character UUIDs, the local address as data, container
// parents, and the 5.5+ downgrade read node.
func TestListCuratorTrees(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := testclient.New(t, server.Addr())
	acl := zk.WorldACL(zk.PermAll)
	ip := []byte("127.0.0.1")
	mkdirs := func(p string) {
		t.Helper()
		for i := len(path) + 1; i <= len(p); i++ {
			if i == len(p) || p[i] == '/' {
				if _, err := conn.CreateContainer(p[:i], nil, zk.FlagContainer, acl); err != nil && err != zk.ErrNodeExists {
					t.Fatalf("create container %s: %v", p[:i], err)
				}
			}
		}
	}
	if _, err := conn.Create(path, nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	// create makes an EPHEMERAL_SEQUENTIAL (or with seq false, EPHEMERAL)
	// protected node as Curator does and returns its path.
	create := func(parent, name string, data []byte, seq bool) string {
		t.Helper()
		flags := int32(zk.FlagEphemeral)
		if seq {
			flags |= zk.FlagSequence
		}
		p, err := conn.Create(parent+"/"+protected.Name(protected.NewID(), name), data, flags, acl)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// Mutex: holder, a waiter, and a go-zookeeper zk.Lock contender.
	mutex := path + "/mutex"
	mkdirs(mutex)
	m1 := create(mutex, "lock-", ip, true)
	m2 := create(mutex, "lock-", ip, true)
	goZK, err := conn.Create(mutex+"/_c_0123456789abcdef0123456789abcdef-lock-", nil, zk.FlagEphemeral|zk.FlagSequence, acl)
	if err != nil {
		t.Fatal(err)
	}
	l, err := List(ctx, client, mutex, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(nodes(l), []string{m1, m2, goZK}) || !equal(roles(l), []string{"holder/mutex", "waiting/mutex", "waiting/mutex"}) {
		t.Errorf("mutex: %v %v", nodes(l), roles(l))
	}
	if l.Participants[0].Data != "127.0.0.1" {
		t.Errorf("data %q", l.Participants[0].Data)
	}
	if w := warningFor(l, goZK); !strings.Contains(w, "go-zookeeper") || !strings.Contains(w, "ProtectedUtils") {
		t.Errorf("warning for the go-zookeeper node: %q", w)
	}

	// Read-write: two readers, then a writer and a reader waiting (docs/tree-format.md).
	rwPath := path + "/rw"
	mkdirs(rwPath)
	r1 := create(rwPath, "__READ__", ip, true)
	r2 := create(rwPath, "__READ__", []byte("rwdata"), true)
	w1 := create(rwPath, "__WRIT__", []byte("rwdata"), true)
	r3 := create(rwPath, "__READ__", ip, true)
	l, err = List(ctx, client, rwPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != RecipeReadWrite || !equal(nodes(l), []string{r1, r2, w1, r3}) ||
		!equal(roles(l), []string{"holder/read", "holder/read", "waiting/write", "waiting/read"}) {
		t.Errorf("rw: %s %v %v", l.Recipe, nodes(l), roles(l))
	}

	// Downgrade (5.5+): a writer holds, and its read node shares its sequence.
	dg := path + "/downgrade"
	mkdirs(dg)
	w := create(dg, "__WRIT__", ip, true)
	_, wName := framework.SplitPath(w)
	down := create(dg, "__READ__"+locktree.SortKey(wName, locktree.WriteName), ip, false)
	wait := create(dg, "__WRIT__", ip, true)
	l, err = List(ctx, client, dg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range l.Participants {
		got[p.Path] = p.Role + "/" + p.Kind
	}
	if got[w] != "holder/write" || got[down] != "holder/read" || got[wait] != "waiting/write" || nodes(l)[2] != wait {
		t.Errorf("downgrade: %v in order %v", got, nodes(l))
	}

	// Semaphore (max 3): three leases held, a fourth contender holding the
	// internal lock with its lease created, and one more queued on locks.
	sem := path + "/sem"
	mkdirs(sem + "/locks")
	mkdirs(sem + "/leases")
	leases := []string{create(sem+"/leases", "lease-", ip, true), create(sem+"/leases", "lease-", ip, true), create(sem+"/leases", "lease-", []byte("leasedata"), true)}
	lock := create(sem+"/locks", "lock-", ip, true)
	pending := create(sem+"/leases", "lease-", []byte("leasedata"), true)
	next := create(sem+"/locks", "lock-", ip, true)
	l, err = List(ctx, client, sem, Options{MaxLeases: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !equal(nodes(l), append(leases, pending, lock, next)) ||
		!equal(roles(l), []string{"holder/lease", "holder/lease", "holder/lease", "waiting/lease", "holder/internal lock", "waiting/internal lock"}) {
		t.Errorf("semaphore: %v %v", nodes(l), roles(l))
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings: %v", l.Warnings)
	}

	// Text output: the summary, a header, one line per node.
	var b strings.Builder
	if err := l.WriteText(&b, time.Now()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 || !strings.Contains(lines[0], "3 leases held, 1 waiting for a lease; internal lock: 1 holder, 1 waiting") || !strings.HasPrefix(lines[1], "POS") {
		t.Errorf("text output:\n%s", out)
	}
}

// List on elections: a LeaderLatch's tree (latch- nodes) and a
// LeaderSelector's (a mutex whose nodes hold the ids), the leader first,
// each candidate with its participant id, as Curator reports them.
func TestListElections(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := testclient.New(t, server.Addr())
	latchPath, selectorPath := base+"/latch", base+"/selector"
	for i, id := range []string{"alpha", "beta"} {
		l, err := recipes.NewLeaderLatch(client, latchPath, recipes.WithParticipantID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		testutil.WaitChildren(t, conn, latchPath, i+1)
	}
	leading := make(chan struct{})
	for i, id := range []string{"gamma", "delta"} {
		s, err := recipes.NewLeaderSelector(client, selectorPath, func(ctx context.Context) error {
			close(leading)
			<-ctx.Done()
			return nil
		}, recipes.WithParticipantID(id))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if i == 0 {
			testutil.Recv(t, leading, "the first selector's leadership")
		}
		testutil.WaitChildren(t, conn, selectorPath, i+1)
	}
	for _, tc := range []struct {
		path, recipe, kind string
		ids                []string
	}{
		{latchPath, RecipeLatch, KindLatch, []string{"alpha", "beta"}},
		{selectorPath, RecipeMutex, KindMutex, []string{"gamma", "delta"}},
	} {
		l, err := List(ctx, client, tc.path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range l.Participants {
			got = append(got, p.Role+"/"+p.Kind+"/"+p.Data)
		}
		want := []string{"holder/" + tc.kind + "/" + tc.ids[0], "waiting/" + tc.kind + "/" + tc.ids[1]}
		if l.Recipe != tc.recipe || !equal(got, want) || len(l.Warnings) != 0 {
			t.Errorf("%s: recipe %s, participants %v, warnings %v; want %s, %v", tc.path, l.Recipe, got, l.Warnings, tc.recipe, want)
		}
		if !strings.Contains(l.Summary(), "participant id") {
			t.Errorf("summary %q does not say the data is the participant id", l.Summary())
		}
	}
}

// A listing's Listed are the nodes whose children it read: for a lock, its
// path (and a semaphore's locks and leases nodes); for a parent of locks,
// every node ListParent looked at down to ParentDepth, empty ones and
// semaphore queues included, not below ParentDepth, nor below a lock.
// ListParent notes them in the parent's own listing when it finds no lock.
func TestListed(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := testclient.New(t, server.Addr())
	for _, p := range []string{"", "/app", "/app/empty", "/app/sem", "/app/sem/leases", "/app/d2", "/app/d2/d3", "/app/d2/d3/d4"} {
		if _, err := conn.Create(base+p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	l, err := List(ctx, client, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ListParent(ctx, client, l, 0); err != nil {
		t.Fatal(err)
	}
	none := dedup([]string{base, base + "/app", base + "/app/empty", base + "/app/sem", base + "/app/sem/leases", base + "/app/d2", base + "/app/d2/d3"})
	if !equal(dedup(l.Listed), none) {
		t.Errorf("no lock: Listed %q, want %q", dedup(l.Listed), none)
	}

	mu, err := recipes.NewInterProcessMutex(client, base+"/app/empty")
	if err != nil {
		t.Fatal(err)
	}
	h := mu.NewHandle()
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Release(context.Background()) })
	sem, err := recipes.NewInterProcessSemaphoreV2(client, base+"/app/sem", 2)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lease.Close(context.Background()) })
	l, err = List(ctx, client, base, Options{})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := ListParent(ctx, client, l, 0)
	if err != nil || parent == nil {
		t.Fatalf("ListParent: %v, %v", parent, err)
	}
	// The semaphore's internal lock path may be reaped already (its lock
	// node goes once the lease is counted): it is there or not.
	got := slices.DeleteFunc(dedup(parent.Listed), func(p string) bool { return p == base+"/app/sem/locks" })
	if !equal(got, none) {
		t.Errorf("two locks: Listed %q, want %q (and perhaps %s/app/sem/locks)", dedup(parent.Listed), none, base)
	}
}

// dedup returns s sorted, without its repeats.
func dedup(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }
