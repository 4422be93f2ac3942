package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// queued starts acquire on a goroutine, waits (with a watch) until path has
// n children, and returns a function that cancels the acquire and waits for
// it to end.
func queued(ctx context.Context, t testing.TB, conn *zk.Conn, path string, n int, acquire func(ctx context.Context) error) (stop func()) {
	t.Helper()
	actx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- acquire(actx) }()
	waitChildren(ctx, t, conn, path, n)
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			testutil.Recv(t, done, "the queued contender's end")
		}
	}
	t.Cleanup(stop)
	return stop
}

// roles returns "role/kind" of each participant, in order.
func roles(l *lockqueue.Listing) []string {
	var out []string
	for _, p := range l.Participants {
		out = append(out, p.Role+"/"+p.Kind)
	}
	return out
}

// nodes returns the participants' paths, in order.
func nodes(l *lockqueue.Listing) []string {
	var out []string
	for _, p := range l.Participants {
		out = append(out, p.Path)
	}
	return out
}

// warningFor returns the warning about node, or "".
func warningFor(l *lockqueue.Listing, node string) string {
	for _, w := range l.Warnings {
		if w.Node == node {
			return w.Message
		}
	}
	return ""
}

func equal(a, b []string) bool { return strings.Join(a, "\n") == strings.Join(b, "\n") }

func TestLsMutex(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
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
	queued(ctx, t, conn, path, 2, mu.NewHandle().Acquire)
	queued(ctx, t, conn, path, 3, mu.NewHandle().Acquire)

	l, err := lockqueue.List(ctx, client, path, lockqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := mu.ParticipantNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != lockqueue.RecipeMutex || !equal(nodes(l), want) {
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
	l, err = lockqueue.List(ctx, client, path, lockqueue.Options{})
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

func TestLsReadWrite(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
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
	queued(ctx, t, conn, path, 3, rw.NewHandle().WriteLock().Acquire)
	queued(ctx, t, conn, path, 4, rw.NewHandle().ReadLock().Acquire)

	l, err := lockqueue.List(ctx, client, path, lockqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != lockqueue.RecipeReadWrite {
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

	// Written through the command: JSON, the same order.
	code, out, stderr := zklock(t, "--json", "ls", path)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	var doc lockqueue.Listing
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if doc.Recipe != lockqueue.RecipeReadWrite || !equal(roles(&doc), roles(l)) || !equal(nodes(&doc), nodes(l)) {
		t.Errorf("JSON %+v", doc)
	}
	// No node there: an empty list of participants, not null.
	code, out, stderr = zklock(t, "--json", "ls", path+"/none")
	if code != 0 || !strings.Contains(out, `"participants":[]`) || strings.Count(out, "\n") != 1 {
		t.Errorf("no node: status %d, stdout %q, stderr %q", code, out, stderr)
	}
}

func TestLsSemaphore(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
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
	queued(ctx, t, conn, path+"/leases", 3, func(ctx context.Context) error {
		l, err := sem.Acquire(ctx)
		if err == nil {
			l.Close(context.Background())
		}
		return err
	})

	l, err := lockqueue.List(ctx, client, path, lockqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != lockqueue.RecipeSemaphore {
		t.Fatalf("recipe %s", l.Recipe)
	}
	if got := roles(l); !equal(got, []string{"holder/lease", "holder/lease", "acquiring/lease", "holder/internal lock"}) {
		t.Errorf("roles %v", got)
	}
	if got := nodes(l)[:2]; !equal(got, []string{held[0].Path(), held[1].Path()}) {
		t.Errorf("holders %v, want %s and %s", got, held[0].Path(), held[1].Path())
	}
	l, err = lockqueue.List(ctx, client, path, lockqueue.Options{MaxLeases: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(l); !equal(got, []string{"holder/lease", "holder/lease", "waiting/lease", "holder/internal lock"}) {
		t.Errorf("roles with --max-leases 2: %v", got)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings on a clean tree: %v", l.Warnings)
	}
	code, out, stderr := zklock(t, "ls", "--max-leases", "2", path)
	if code != 0 || !strings.Contains(out, "semaphore") || !strings.Contains(out, "leases/_c_") || !strings.Contains(out, "locks/_c_") {
		t.Errorf("status %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// TestLsCuratorTrees reads trees in the exact format Java Curator 5.4
// writes (curator-lock-trees.md §9), made with raw creates: protected
// names with 36-character UUIDs, the local address as data, container
// parents, and the 5.5+ downgrade read node.
func TestLsCuratorTrees(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
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
	createNode(t, conn, path)
	// create makes an EPHEMERAL_SEQUENTIAL (or with seq false, EPHEMERAL)
	// protected node as Curator does and returns its path.
	create := func(parent, name string, data []byte, seq bool) string {
		t.Helper()
		flags := int32(zk.FlagEphemeral)
		if seq {
			flags |= zk.FlagSequence
		}
		p, err := conn.Create(parent+"/"+locktree.ProtectedName(locktree.NewProtectedID(), name), data, flags, acl)
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
	l, err := lockqueue.List(ctx, client, mutex, lockqueue.Options{})
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

	// Read-write: two readers, then a writer and a reader waiting (§9).
	rwPath := path + "/rw"
	mkdirs(rwPath)
	r1 := create(rwPath, "__READ__", ip, true)
	r2 := create(rwPath, "__READ__", []byte("rwdata"), true)
	w1 := create(rwPath, "__WRIT__", []byte("rwdata"), true)
	r3 := create(rwPath, "__READ__", ip, true)
	l, err = lockqueue.List(ctx, client, rwPath, lockqueue.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Recipe != lockqueue.RecipeReadWrite || !equal(nodes(l), []string{r1, r2, w1, r3}) ||
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
	l, err = lockqueue.List(ctx, client, dg, lockqueue.Options{})
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
	l, err = lockqueue.List(ctx, client, sem, lockqueue.Options{MaxLeases: 3})
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
	code, out, stderr := zklock(t, "ls", "--max-leases", "3", sem)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 8 || !strings.Contains(lines[0], "3 leases held, 1 waiting for a lease; internal lock: 1 holder, 1 waiting") || !strings.HasPrefix(lines[1], "POS") {
		t.Errorf("text output:\n%s", out)
	}
}

// ls on a parent of locks lists each lock below it, with its queue,
// instead of warning about its children as foreign.
func TestLsParentOfLocks(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
	app := path + "/app"
	createNode(t, conn, path)
	createNode(t, conn, app)
	createNode(t, conn, app+"/empty") // no lock anywhere below it
	orders := holdMutex(ctx, t, app+"/orders")
	rw, err := recipes.NewInterProcessReadWriteLock(client, app+"/billing/eu")
	if err != nil {
		t.Fatal(err)
	}
	reader := rw.NewHandle().ReadLock()
	if err := reader.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reader.Release(context.Background()) })
	holdLease(ctx, t, client, app+"/sem", 2)

	code, out, stderr := zklock(t, "ls", app)
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	for _, want := range []string{
		app + ": not a lock, but a parent of 3 locks",
		app + "/orders: mutex (InterProcessMutex, or a LeaderSelector: the data is its participant id); 1 holding",
		app + "/sem: semaphore",
		app + "/billing/eu: read-write lock (InterProcessReadWriteLock); 1 holding",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "warning") || strings.Contains(out, "foreign") {
		t.Errorf("warnings about the locks' parents:\n%s", out)
	}

	// JSON, through the program: the locks, each with its participants.
	code, out, stderr = zklockBin(t, "--json", "ls", app)
	if code != 0 {
		t.Fatalf("--json: status %d, stderr %q", code, stderr)
	}
	var doc struct {
		lockqueue.Listing
		Locks     []lockqueue.Listing `json:"locks"`
		MoreLocks bool                `json:"more_locks"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	var got []string
	for _, l := range doc.Locks {
		got = append(got, l.Path+" "+l.Recipe+" "+strings.Join(roles(&l), ","))
	}
	want := []string{
		app + "/orders mutex holder/mutex",
		app + "/sem semaphore holder/lease",
		app + "/billing/eu read-write holder/read",
	}
	if doc.Recipe != lockqueue.RecipeParent || doc.MoreLocks || !equal(got, want) || len(doc.Warnings) != 0 {
		t.Errorf("JSON: recipe %q, more %v, locks %q, warnings %v; want parent, %q", doc.Recipe, doc.MoreLocks, got, doc.Warnings, want)
	}
	if doc.Locks[0].Participants[0].Path != orders.LockPath() {
		t.Errorf("holder of orders %q, want %q", doc.Locks[0].Participants[0].Path, orders.LockPath())
	}

	// A real lock's foreign child is still warned about.
	createNode(t, conn, app+"/orders/0-foreign")
	code, out, _ = zklock(t, "ls", app+"/orders")
	if code != 0 || !strings.Contains(out, "warning: "+app+"/orders/0-foreign") {
		t.Errorf("foreign child of a lock: status %d, output\n%s", code, out)
	}
}

// ls of a path that is a lock only inside a namespace says that a
// --namespace may be missing.
func TestLsNamespaceHint(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	ns := strings.TrimPrefix(testutil.Root, "/")
	rel := strings.TrimPrefix(path, testutil.Root) + "/lock" // path/lock inside the namespace
	holdMutex(ctx, t, path+"/lock")

	code, out, stderr := zklock(t, "ls", rel)
	want := fmt.Sprintf("no lock at %s; %s has one: a --namespace may be missing (--namespace %s)", rel, path+"/lock", ns)
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("status %d, stdout %q, stderr %q; want %q", code, out, stderr, want)
	}
	code, out, stderr = zklock(t, "--namespace", ns, "ls", rel)
	if code != 0 || !strings.Contains(out, "1 holding") || strings.Contains(out, "warning") {
		t.Errorf("with the namespace: status %d, stdout %q, stderr %q", code, out, stderr)
	}
}

// `zklock ls` on elections: a LeaderLatch's tree (latch- nodes) and a
// LeaderSelector's (a mutex whose nodes hold the ids), the leader first,
// each candidate with its participant id, as Curator reports them.
func TestLsElections(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")
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
		waitChildren(ctx, t, conn, latchPath, i+1)
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
		waitChildren(ctx, t, conn, selectorPath, i+1)
	}
	for _, tc := range []struct {
		path, recipe, kind string
		ids                []string
	}{
		{latchPath, lockqueue.RecipeLatch, lockqueue.KindLatch, []string{"alpha", "beta"}},
		{selectorPath, lockqueue.RecipeMutex, lockqueue.KindMutex, []string{"gamma", "delta"}},
	} {
		l, err := lockqueue.List(ctx, client, tc.path, lockqueue.Options{})
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

// A namespace root whose "locks" container is empty (its locks reaped, it
// not yet) is no semaphore, nor any lock: ls says it has no lock node.
func TestBinaryLsEmptyLocksContainer(t *testing.T) {
	_, root := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	createNode(t, conn, root)
	if _, err := conn.CreateContainer(root+"/locks", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := zklockBin(t, "ls", root)
	if code != 0 || strings.Contains(out, "semaphore") || !strings.HasPrefix(out, root+": no participants (its one child is no lock node)") {
		t.Errorf("status %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, _ = zklockBin(t, "--json", "ls", root)
	if lines := jsonLines(t, out); code != 0 || len(lines) != 1 || lines[0]["recipe"] != lockqueue.RecipeNone {
		t.Errorf("--json: status %d, stdout %q", code, out)
	}
}
