package compat_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/protected"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// checkProtected checks that Curator's ProtectedUtils and gocurator's
// framework agree on every child name of path: whether it is protected,
// its normalized form and its protection id.
func checkProtected(t testing.TB, p *peer, names []string) {
	t.Helper()
	protectedNames := 0
	defer func() {
		if protectedNames == 0 {
			t.Errorf("no protected name among %v", names)
		}
	}()
	for _, n := range names {
		f := strings.Fields(p.do(t, "-", "is-protected", n))
		if len(f) != 3 {
			t.Fatalf("is-protected %s: %q", n, f)
		}
		id, ok := protected.ID(n)
		if !ok {
			id = "-"
		}
		goSays := []string{strconv.FormatBool(protected.Is(n)), protected.Normalize(n), id}
		if f[0] == "true" {
			protectedNames++
		}
		if !slices.Equal(f, goSays) {
			t.Errorf("%s: Curator's ProtectedUtils says %q, gocurator says %q", n, f, goSays)
		}
	}
}

// Curator's getParticipantNodes lists Go's nodes, and our ParticipantNodes
// lists Java's, in the same order (a foreign child included); Curator's
// ProtectedUtils recognises our node names as protected and we recognise
// Curator's. The queue, Go and Java in turn, is then granted in its order.
func TestIntrospectionMutex(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	java, golang := sides(t, "introspection")
	gc, raw := golang.gc, testutil.Connect(t, server.Addr())
	base := serverPath(t)
	_, err := gc.Create(ctx, base+"/zzz-foreign", nil, framework.CreatingParentContainersIfNeeded())
	testutil.Must(t, err)
	g := newGuards(t, 1)
	var queue []holder
	for i, s := range []side{golang, java, golang, java} {
		queue = append(queue, s.contend(t, mutexRecipe, base, 1, g, fmt.Sprintf("%s-%d", s.lang(), i)))
		testutil.WaitChildren(t, raw, base, i+2)
	}
	queue[0].granted(t)

	goList, err := mustMutex(t, gc, base).ParticipantNodes(ctx)
	testutil.Must(t, err)
	if javaList := java.p.participants(t, queue[1].(*javaHolder).lock); !slices.Equal(goList, javaList) {
		t.Fatalf("participants differ:\nGo:   %v\nJava: %v", goList, javaList)
	}
	if got, want := owners(t, gc, goList, golang.session(), java.sid), []string{"go", "java", "go", "java", "other"}; !slices.Equal(got, want) {
		t.Fatalf("participants %v are owned by %v, want %v (queue order, the foreign node last)", goList, got, want)
	}
	if first := queue[0].(*goHolder).o.(*recipes.Handle).LockPath(); goList[0] != first || goList[4] != base+"/zzz-foreign" {
		t.Fatalf("participants %v: want the holder %s first and the foreign node last", goList, first)
	}
	checkProtected(t, java.p, children(t, gc, base))
	queue[0].release(t)
	passed(t, g, queue[0], queue[1:]...)
}

// owners maps each node to "go", "java" or "other" by its ephemeral owner.
func owners(t testing.TB, c *framework.Client, nodes []string, goSID, javaSID int64) []string {
	t.Helper()
	var out []string
	for _, n := range nodes {
		_, st, err := c.GetData(testutil.Context(t), n)
		testutil.Must(t, err)
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
// writers, in the same order, for a queue of both languages, which is then
// granted in its order (the two readers together).
func TestIntrospectionReadWrite(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	java, golang := sides(t, "introspection-rw")
	gc, raw := golang.gc, testutil.Connect(t, server.Addr())
	base := serverPath(t)
	g := newGuards(t, 1)
	read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
	var queue []holder
	for i, e := range []entrant{{golang, read, "go-r0"}, {java, write, "java-w1"}, {golang, read, "go-r2"},
		{java, read, "java-r3"}, {golang, write, "go-w4"}} {
		queue = append(queue, e.s.contend(t, e.r, base, 1, g, e.label))
		testutil.WaitChildren(t, raw, base, i+1)
	}
	queue[0].granted(t)

	goList, err := mustReadWrite(t, gc, base, "").ParticipantNodes(ctx)
	testutil.Must(t, err)
	if got, want := owners(t, gc, goList, golang.session(), java.sid), []string{"go", "java", "go", "java", "go"}; !slices.Equal(got, want) {
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
	if jr := java.p.participants(t, queue[3].(*javaHolder).lock); !slices.Equal(jr, filter(goList, "__READ__")) {
		t.Fatalf("Curator's read participants %v, ours %v", jr, goList)
	}
	if jw := java.p.participants(t, queue[1].(*javaHolder).lock); !slices.Equal(jw, filter(goList, "__WRIT__")) {
		t.Fatalf("Curator's write participants %v, ours %v", jw, goList)
	}
	checkProtected(t, java.p, children(t, gc, base))
	queue[0].release(t)
	for _, turn := range [][]holder{queue[1:2], queue[2:4], queue[4:]} { // the two readers share
		for _, h := range turn {
			h.granted(t)
		}
		for _, h := range turn {
			h.release(t)
		}
	}
	checkGuards(t, g)
}

// The semaphore: Curator's getParticipantNodes and ours both give the lease
// node names (not paths, unsorted), and they are the same set, for leases
// and waiters of both languages.
func TestIntrospectionSemaphore(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	java, golang := sides(t, "introspection-sem")
	gc, raw := golang.gc, testutil.Connect(t, server.Addr())
	base := serverPath(t)
	g := newGuards(t, 1)
	r := semaphoreRecipe(semaphoreLeases, "")
	goHeld := golang.contend(t, r, base, semaphoreLeases-1, g, "go-held")
	goHeld.granted(t)
	javaHeld := java.contend(t, r, base, 1, g, "java-held") // the last lease
	javaHeld.granted(t)
	goWaiter := golang.contend(t, r, base, 1, g, "go-waiter")
	testutil.WaitChildren(t, raw, base+"/leases", semaphoreLeases+1) // the waiter's lease is there, over the limit
	javaWaiter := java.contend(t, r, base, 1, g, "java-waiter")
	testutil.WaitChildren(t, raw, base+"/locks", 2) // the Go waiter holds the internal lock, Java queues for it

	s, err := recipes.NewInterProcessSemaphoreV2(gc, base, semaphoreLeases)
	testutil.Must(t, err)
	goNames, err := s.ParticipantNodes(ctx)
	testutil.Must(t, err)
	javaNames := java.p.participants(t, javaHeld.(*javaHolder).lock)
	if !slices.Equal(slices.Sorted(slices.Values(goNames)), slices.Sorted(slices.Values(javaNames))) {
		t.Fatalf("lease participants differ:\nGo:   %v\nJava: %v", goNames, javaNames)
	}
	var paths []string
	for _, n := range goNames {
		paths = append(paths, base+"/leases/"+n)
	}
	if got := owners(t, gc, paths, golang.session(), java.sid); strings.Count(strings.Join(got, " "), "java") != 1 ||
		strings.Count(strings.Join(got, " "), "go") != semaphoreLeases {
		t.Fatalf("leases %v owned by %v", goNames, got)
	}
	checkProtected(t, java.p, children(t, gc, base+"/leases"))
	checkProtected(t, java.p, children(t, gc, base+"/locks"))

	javaHeld.release(t)
	goWaiter.granted(t)
	goHeld.release(t)
	javaWaiter.granted(t)
	goWaiter.release(t)
	javaWaiter.release(t)
	checkGuards(t, g)
}
