package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// ls on a parent of locks lists each lock below it, with its queue,
// instead of warning about its children as foreign.
func TestLsParentOfLocks(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t)
	app := path + "/app"
	createNode(t, conn, path)
	createNode(t, conn, app)
	createNode(t, conn, app+"/empty") // no lock anywhere below it
	orders := holdMutex(ctx, t, app+"/orders")
	rw, err := recipes.NewInterProcessReadWriteLock(client, app+"/billing/eu")
	testutil.Must(t, err)
	reader := rw.NewHandle().ReadLock()
	testutil.Must(t, reader.Acquire(ctx))
	t.Cleanup(func() { reader.Release(context.Background()) })
	holdLease(ctx, t, client, app+"/sem", 2)

	out := startZklock(t, true, "ls", app).succeeds(
		app+": not a lock, but a parent of 3 locks",
		app+"/orders: mutex (InterProcessMutex, or a LeaderSelector: the data is its participant id); 1 holding",
		app+"/sem: semaphore",
		app+"/billing/eu: read-write lock (InterProcessReadWriteLock); 1 holding")
	if strings.Contains(out, "warning") || strings.Contains(out, "foreign") {
		t.Errorf("warnings about the locks' parents:\n%s", out)
	}

	// JSON, through the program: the locks, each with its participants.
	code, out, stderr := zklockBin(t, "--json", "ls", app)
	if code != 0 {
		t.Fatalf("--json: status %d, stderr %q", code, stderr)
	}
	var doc lockqueue.Listing
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	var got []string
	for _, l := range doc.Locks {
		p := l.Participants[0]
		got = append(got, fmt.Sprintf("%s %s %d %s/%s", l.Path, l.Recipe, len(l.Participants), p.Role, p.Kind))
	}
	want := []string{
		app + "/orders mutex 1 holder/mutex",
		app + "/sem semaphore 1 holder/lease",
		app + "/billing/eu read-write 1 holder/read",
	}
	if doc.Recipe != lockqueue.RecipeParent || doc.MoreLocks || !slices.Equal(got, want) || len(doc.Warnings) != 0 {
		t.Errorf("JSON: recipe %q, more %v, locks %q, warnings %v; want parent, %q", doc.Recipe, doc.MoreLocks, got, doc.Warnings, want)
	}
	if doc.Locks[0].Participants[0].Path != orders.LockPath() {
		t.Errorf("holder of orders %q, want %q", doc.Locks[0].Participants[0].Path, orders.LockPath())
	}

	// A real lock's foreign child is still warned about.
	createNode(t, conn, app+"/orders/0-foreign")
	startZklock(t, true, "ls", app+"/orders").succeeds("warning: " + app + "/orders/0-foreign")
}

// ls of a path that is a lock only inside a namespace says that a
// --namespace may be missing.
func TestLsNamespaceHint(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	ns := strings.TrimPrefix(testutil.Root, "/")
	rel := strings.TrimPrefix(path, testutil.Root) + "/lock" // path/lock inside the namespace
	holdMutex(ctx, t, path+"/lock")

	startZklock(t, true, "ls", rel).succeeds(fmt.Sprintf("no lock at %s; %s has one: a --namespace may be missing (--namespace %s)", rel, path+"/lock", ns))
	if out := startZklock(t, true, "--namespace", ns, "ls", rel).succeeds("1 holding"); strings.Contains(out, "warning") {
		t.Errorf("with the namespace: %q", out)
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
	startZklock(t, false, "--json", "ls", root).jsonLine(0, map[string]any{"recipe": lockqueue.RecipeNone})
	// No node there: an empty list of participants, not null. Flags may
	// follow PATH.
	code, out, stderr = zklockBin(t, "ls", root+"/none", "--json", "--recipe", "rw")
	if code != 0 || !strings.Contains(out, `"exists":false,`) || !strings.Contains(out, `"participants":[]`) || strings.Count(out, "\n") != 1 {
		t.Errorf("no node: status %d, stdout %q, stderr %q", code, out, stderr)
	}
}
