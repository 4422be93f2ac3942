package compat_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// checkProtected checks that Curator's ProtectedUtils and gocurator's
// framework agree on every child name of path: whether it is protected,
// its normalized form and its protection id.
func checkProtected(t testing.TB, p *peer, names []string) {
	t.Helper()
	protected := 0
	defer func() {
		if protected == 0 {
			t.Errorf("no protected name among %v", names)
		}
	}()
	for _, n := range names {
		f := strings.Fields(p.do(t, "-", "is-protected", n))
		if len(f) != 3 {
			t.Fatalf("is-protected %s: %q", n, f)
		}
		id, ok := locktree.ProtectedID(n)
		if !ok {
			id = "-"
		}
		goSays := []string{boolText(locktree.IsProtected(n)), locktree.NormalizeProtected(n), id}
		if f[0] == "true" {
			protected++
		}
		if !slices.Equal(f, goSays) {
			t.Errorf("%s: Curator's ProtectedUtils says %q, gocurator says %q", n, f, goSays)
		}
	}
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Curator's getParticipantNodes lists Go's nodes, and our ParticipantNodes
// lists Java's, in the same order (a foreign child included); Curator's
// ProtectedUtils recognises our node names as protected and we recognise
// Curator's.
func TestIntrospectionMutex(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	p := startPeer(t, "introspection")
	jsid := p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	base := serverPath(t)
	if _, err := gc.Create(ctx, base+"/zzz-foreign", nil, framework.CreatingParentContainersIfNeeded()); err != nil {
		t.Fatal(err)
	}
	m := mustMutex(t, gc, base)
	p.do(t, "-", "mutex", "m", "jc", base)

	h0 := m.NewHandle()
	must(t, h0.Acquire(ctx))
	j1 := p.send("j1", "acquire", "m")
	waitChildren(t, gc, base, 3)
	h2 := m.NewHandle()
	g2 := asyncAcquire(ctx, h2)
	waitChildren(t, gc, base, 4)
	j3 := p.send("j3", "acquire", "m")
	waitChildren(t, gc, base, 5)

	goList, err := m.ParticipantNodes(ctx)
	must(t, err)
	javaList := p.participants(t, "m")
	if !slices.Equal(goList, javaList) {
		t.Fatalf("participants differ:\nGo:   %v\nJava: %v", goList, javaList)
	}
	if got, want := owners(t, gc, goList, gc.SessionID(), jsid), []string{"go", "java", "go", "java", "other"}; !slices.Equal(got, want) {
		t.Fatalf("participants %v are owned by %v, want %v (queue order, the foreign node last)", goList, got, want)
	}
	if goList[0] != h0.LockPath() || goList[4] != base+"/zzz-foreign" {
		t.Fatalf("participants %v: want the holder %s first and the foreign node last", goList, h0.LockPath())
	}
	checkProtected(t, p, children(t, gc, base))

	must(t, h0.Release(ctx))
	if !acquired(t, j1.must(t)) {
		t.Fatal("Java's acquire returned false")
	}
	p.do(t, "j1", "release", "m")
	must(t, testutil.Recv(t, g2, "the second Go waiter's Acquire"))
	must(t, h2.Release(ctx))
	if !acquired(t, j3.must(t)) {
		t.Fatal("Java's acquire returned false")
	}
	p.do(t, "j3", "release", "m")
}

// owners maps each node to "go", "java" or "other" by its ephemeral owner.
func owners(t testing.TB, c *framework.Client, nodes []string, goSID, javaSID int64) []string {
	t.Helper()
	var out []string
	for _, n := range nodes {
		_, st, err := c.GetData(testutil.Context(t), n)
		must(t, err)
		switch st.EphemeralOwner {
		case goSID:
			out = append(out, "go")
		case javaSID:
			out = append(out, "java")
		default:
			out = append(out, "other")
		}
	}
	return out
}

func filter(nodes []string, marker string) []string {
	var out []string
	for _, n := range nodes {
		if strings.Contains(n, marker) {
			out = append(out, n)
		}
	}
	return out
}

// The read-write lock: Curator's readLock().getParticipantNodes() and
// writeLock().getParticipantNodes() are our ParticipantNodes' readers and
// writers, in the same order, for a queue of both languages.
func TestIntrospectionReadWrite(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	p := startPeer(t, "introspection-rw")
	jsid := p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	base := serverPath(t)
	rw := mustReadWrite(t, gc, base, "")
	p.do(t, "-", "rwlock", "rw", "jc", base)

	r1 := rw.NewHandle().ReadLock()
	must(t, r1.Acquire(ctx))
	jw := p.send("jw", "acquire", "rw.write")
	waitChildren(t, gc, base, 2)
	r2 := rw.NewHandle().ReadLock()
	g2 := asyncAcquire(ctx, r2)
	waitChildren(t, gc, base, 3)
	jr := p.send("jr", "acquire", "rw.read")
	waitChildren(t, gc, base, 4)
	w3 := rw.NewHandle().WriteLock()
	g3 := asyncAcquire(ctx, w3)
	waitChildren(t, gc, base, 5)

	goList, err := rw.ParticipantNodes(ctx)
	must(t, err)
	if got, want := owners(t, gc, goList, gc.SessionID(), jsid), []string{"go", "java", "go", "java", "go"}; !slices.Equal(got, want) {
		t.Fatalf("participants %v owned by %v, want %v", goList, got, want)
	}
	var kinds []string
	for _, n := range goList {
		switch {
		case strings.Contains(n, "-__READ__"):
			kinds = append(kinds, "R")
		case strings.Contains(n, "-__WRIT__"):
			kinds = append(kinds, "W")
		}
	}
	if got := strings.Join(kinds, ""); got != "RWRRW" {
		t.Fatalf("participants %v are %s, want RWRRW", goList, got)
	}
	if jr := p.participants(t, "rw.read"); !slices.Equal(jr, filter(goList, "__READ__")) {
		t.Fatalf("Curator's read participants %v, ours %v", jr, goList)
	}
	if jw := p.participants(t, "rw.write"); !slices.Equal(jw, filter(goList, "__WRIT__")) {
		t.Fatalf("Curator's write participants %v, ours %v", jw, goList)
	}
	checkProtected(t, p, children(t, gc, base))

	must(t, r1.Release(ctx))
	if !acquired(t, jw.must(t)) {
		t.Fatal("Java's write acquire returned false")
	}
	p.do(t, "jw", "release", "rw.write")
	must(t, testutil.Recv(t, g2, "the second Go waiter's Acquire"))
	if !acquired(t, jr.must(t)) {
		t.Fatal("Java's read acquire returned false")
	}
	must(t, r2.Release(ctx))
	p.do(t, "jr", "release", "rw.read")
	must(t, testutil.Recv(t, g3, "the Go writer's Acquire"))
	must(t, w3.Release(ctx))
}

// The semaphore: Curator's getParticipantNodes and ours both give the lease
// node names (not paths, unsorted), and they are the same set, for leases
// and waiters of both languages.
func TestIntrospectionSemaphore(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	p := startPeer(t, "introspection-sem")
	jsid := p.client(t, "jc", server.Addr())
	gc := newClient(t, "")
	base := serverPath(t)
	s, err := recipes.NewInterProcessSemaphoreV2(gc, base, semaphoreLeases)
	must(t, err)
	p.do(t, "-", "semaphore", "s", "jc", base, strconv.Itoa(semaphoreLeases))

	held, err := s.AcquireN(ctx, semaphoreLeases-1)
	must(t, err)
	if !acquired(t, p.do(t, "s1", "acquire", "s")) {
		t.Fatal("Java did not get the last lease")
	}
	waiter := asyncLease(ctx, s)
	waitChildren(t, gc, base+"/leases", semaphoreLeases+1) // the waiter's lease is there, over the limit
	jw := p.send("s2", "acquire", "s")
	waitChildren(t, gc, base+"/locks", 2) // the Go waiter holds the internal lock, Java queues for it

	goNames, err := s.ParticipantNodes(ctx)
	must(t, err)
	javaNames := p.participants(t, "s")
	if !slices.Equal(slices.Sorted(slices.Values(goNames)), slices.Sorted(slices.Values(javaNames))) {
		t.Fatalf("lease participants differ:\nGo:   %v\nJava: %v", goNames, javaNames)
	}
	var paths []string
	for _, n := range goNames {
		paths = append(paths, base+"/leases/"+n)
	}
	if got := owners(t, gc, paths, gc.SessionID(), jsid); strings.Count(strings.Join(got, " "), "java") != 1 ||
		strings.Count(strings.Join(got, " "), "go") != semaphoreLeases {
		t.Fatalf("leases %v owned by %v", goNames, got)
	}
	checkProtected(t, p, children(t, gc, base+"/leases"))
	checkProtected(t, p, children(t, gc, base+"/locks"))

	p.do(t, "s1", "release", "s")
	r := testutil.Recv(t, waiter, "the Go waiter's lease")
	must(t, r.err)
	must(t, recipes.ReturnAll(ctx, held))
	if !acquired(t, jw.must(t)) {
		t.Fatal("Java's acquire returned false")
	}
	must(t, r.lease.Close(ctx))
	p.do(t, "s2", "release", "s")
}

type leaseResult struct {
	lease *recipes.Lease
	err   error
}

func asyncLease(ctx context.Context, s *recipes.InterProcessSemaphoreV2) <-chan leaseResult {
	ch := make(chan leaseResult, 1)
	go func() {
		l, err := s.Acquire(ctx)
		ch <- leaseResult{l, err}
	}()
	return ch
}
