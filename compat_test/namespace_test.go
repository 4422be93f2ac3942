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
// from Java to Go, and not before Java released it (each enters the guards
// the moment it is granted).
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
			base := serverPath(t)
			guards := newGuards(t, r.guardPaths)
			jl := r.javaLock(t, p, "ns-"+r.name, "jns", base)
			holder := javaHold(p, "n1", jl, r.full(), guards, r.kind, r.max, "java-holder")
			holder.granted(t)
			o := r.goOwner(t, gns, base, 1)
			waiter := goWait(ctx, o, guards, r.kind, r.max, 1, "go-waiter")
			waitChildren(t, raw, "/"+compatNamespace+r.queuePath(base), r.heldNodes+1)
			r.waiting(t, waiter, gns.SessionID(), "/"+compatNamespace+base)
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
			holder.release(t)
			leave := waiter.granted(t)
			leave()
			must(t, o.Release(ctx))
			checkGuards(t, guards)
			checkLog(t, guards, append(slices.Repeat([]string{"java-holder"}, r.full()), "go-waiter")...)
		})
	}
}
