package compat_test

import (
	"slices"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
)

// compatNamespace is the namespace of the namespace scenarios; it contains
// a "/", which both Curator and gocurator allow.
const compatNamespace = "gocurator-compat-ns/app"

// Curator's usingNamespace(ns) and our WithNamespace(ns) land in the same
// tree: for every recipe, a Java holder and a Go waiter in the namespace
// queue on /ns/<path> on the server, nothing appears at /<path>, paths are
// reported without the namespace in both languages, and the lock passes
// from Java to Go.
func TestNamespaces(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "namespaces")
	p.client(t, "jns", server.Addr(), "ns="+compatNamespace)
	gns := newClient(t, "", framework.WithNamespace(compatNamespace))
	raw := newClient(t, "")
	testutil.CleanupTree(t, server.Addr(), "/"+compatNamespace[:len("gocurator-compat-ns")])
	for _, r := range allRecipes() {
		if r.name == "read" {
			continue
		}
		t.Run(r.name, func(t *testing.T) {
			ctx := testutil.Context(t)
			base := testutil.Path(t)
			testutil.CleanupTree(t, server.Addr(), base)
			jl := r.javaLock(t, p, "ns-"+r.name, "jns", base)
			if !acquired(t, javaAcquire(p, "n1", jl, r.full()).must(t)) {
				t.Fatal("Java did not acquire a free lock")
			}
			o := r.goOwner(t, gns, base, 1)
			got := asyncAcquire(ctx, o)
			waitChildren(t, raw, "/"+compatNamespace+r.queuePath(base), r.heldNodes+1)
			notYet(t, got, "Go's Acquire")
			if kids := children(t, raw, base); len(kids) != 0 {
				t.Fatalf("nodes outside the namespace at %s: %v", base, kids)
			}
			if r.name == "mutex" {
				m := mustMutex(t, gns, base)
				goList, err := m.ParticipantNodes(ctx)
				must(t, err)
				if javaList := p.participants(t, jl); !slices.Equal(goList, javaList) || len(goList) != 2 {
					t.Fatalf("participants in the namespace: Go %v, Java %v", goList, javaList)
				}
			}
			p.do(t, "n1", "release", jl)
			must(t, <-got)
			must(t, o.Release(ctx))
		})
	}
}
