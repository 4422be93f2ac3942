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
	java := javaSide(t, startPeer(t, "namespaces"), "jns", "", "ns="+compatNamespace)
	golang := side{gc: newClient(t, "", framework.WithNamespace(compatNamespace))}
	raw, conn := newClient(t, ""), testutil.Connect(t, server.Addr())
	testutil.CleanupTree(t, server.Addr(), "/"+compatNamespace[:len("gocurator-compat-ns")])
	for _, r := range blockingRecipes() {
		t.Run(r.name, func(t *testing.T) {
			ctx := testutil.Context(t)
			base := serverPath(t)
			guards := newGuards(t, r.guardPaths)
			holder := java.contend(t, r, base, r.max, guards, "java-holder").(*javaHolder)
			holder.granted(t)
			waiter := golang.contend(t, r, base, 1, guards, "go-waiter")
			queued(t, conn, r, "/"+compatNamespace+base, waiter)
			if kids := children(t, raw, base); len(kids) != 0 {
				t.Fatalf("nodes outside the namespace at %s: %v", base, kids)
			}
			if r.name == "mutex" {
				goList, err := mustMutex(t, golang.gc, base).ParticipantNodes(ctx)
				testutil.Must(t, err)
				if javaList := java.p.participants(t, holder.lock); !slices.Equal(goList, javaList) || len(goList) != 2 {
					t.Fatalf("participants in the namespace: Go %v, Java %v", goList, javaList)
				}
			}
			holder.release(t)
			passed(t, guards, holder, waiter)
		})
	}
}
