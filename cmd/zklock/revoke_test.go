package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

func TestRevokeRevocableHolder(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	h, asked := revocableHolder(t, newClient(t, ""), path)

	code, out, stderr := zklock(t, "--json", "revoke", h.LockPath())
	if code != 0 {
		t.Fatalf("status %d, stderr %q", code, stderr)
	}
	var r revokeResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v in %q", err, out)
	}
	if r.Node != h.LockPath() || !r.Revocable || r.Released || r.Warning != "" {
		t.Errorf("result %+v", r)
	}
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the holder's revocation listener did not fire")
	}
	data, _, err := conn.Get(h.LockPath())
	if err != nil || string(data) != "__REVOKE__" {
		t.Errorf("node data %q, %v", data, err)
	}
}

// revocableHolder takes a revocable mutex at path with client c, released
// when the test ends, and returns its handle and a channel that hears the
// revocation requests.
func revocableHolder(t *testing.T, c *framework.Client, path string) (*recipes.Handle, <-chan struct{}) {
	t.Helper()
	mu, err := recipes.NewInterProcessMutex(c, path)
	if err != nil {
		t.Fatal(err)
	}
	h := mu.NewHandle()
	asked := make(chan struct{}, 1)
	h.MakeRevocable(func() {
		select {
		case asked <- struct{}{}:
		default: // one request is heard already
		}
	})
	if err := h.Acquire(testutil.Context(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Release(context.Background()) })
	return h, asked
}

// releasingHolder takes a mutex at path on a client of its own that
// releases it when asked to revoke; the channel hears that Release.
func releasingHolder(ctx context.Context, t *testing.T, path string) (*recipes.Handle, <-chan error) {
	t.Helper()
	mu, err := recipes.NewInterProcessMutex(newClient(t, ""), path)
	if err != nil {
		t.Fatal(err)
	}
	h := mu.NewHandle()
	released := make(chan error, 1)
	h.MakeRevocable(func() { released <- h.Release(context.Background()) })
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	return h, released
}

func TestRevokeWaitsForRelease(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	h, released := releasingHolder(ctx, t, path)
	node := h.LockPath()
	code, out, stderr := zklock(t, "revoke", "--wait", node)
	if code != 0 || !strings.Contains(out, "revocation requested: "+node) || !strings.Contains(out, "released: "+node) {
		t.Errorf("status %d, stdout %q, stderr %q", code, out, stderr)
	}
	if err := testutil.Recv(t, released, "the revocation listener's Release"); err != nil {
		t.Error(err)
	}
}

func TestRevokeErrors(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())

	// No such node: already gone, nothing to do, as Curator's Revoker.
	code, out, stderr := zklock(t, "revoke", path+"/gone")
	if code != 0 || !strings.Contains(out, "already gone: "+path+"/gone") {
		t.Errorf("missing node: status %d, stdout %q, stderr %q", code, out, stderr)
	}
	code, out, stderr = zklock(t, "--json", "revoke", "--wait", path+"/gone")
	var r revokeResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("missing node, --json: status %d, stdout %q (%v), stderr %q", code, out, err, stderr)
	}
	if r.Event != eventAlreadyGone || r.Node != path+"/gone" || !r.Released {
		t.Errorf("missing node, --json: %+v", r)
	}
	// Not a lock: a persistent node with no lock below it has no holder.
	createNode(t, conn, path)
	code, _, stderr = zklock(t, "revoke", path)
	if code != exitError || !strings.Contains(stderr, "no holder to revoke at "+path) {
		t.Errorf("persistent node: status %d, stderr %q", code, stderr)
	}
	// A holder that is not revocable: written, with a warning.
	h := holdMutex(ctx, t, path)
	code, _, stderr = zklock(t, "revoke", h.LockPath())
	if code != 0 || !strings.Contains(stderr, "did not make its lock revocable") {
		t.Errorf("non-revocable holder: status %d, stderr %q", code, stderr)
	}
	// --wait with a timeout on a holder that does not release.
	code, _, stderr = zklock(t, "revoke", "--wait", "--timeout", "200ms", h.LockPath())
	if code != exitError || !strings.Contains(stderr, "deadline exceeded") {
		t.Errorf("--wait --timeout: status %d, stderr %q", code, stderr)
	}
}

// Against lock nodes with a creator-only ACL, zklock revoke needs the
// holder's credentials: without them, or with a wrong password, it fails
// (zk.ErrNoAuth) and the holder hears nothing.
func TestRevokeNeedsCredentials(t *testing.T) {
	testutil.CheckLeaks(t)
	path := testutil.Path(t)
	lock := path + "/lock"
	testutil.CleanupTreeAs(t, server.Addr(), path, "owner:s3cret")
	ctx := testutil.Context(t)
	creator := zk.AuthACL(zk.PermAll)
	owner := newClient(t, "", framework.WithAuth("digest", []byte("owner:s3cret")),
		framework.WithACLProvider(framework.ACLProviderFunc(func(p string) []zk.ACL {
			if strings.HasPrefix(p, lock) {
				return creator
			}
			return framework.OpenACL // the parents stay open, for other tests
		})))
	h, asked := revocableHolder(t, owner, lock)

	for _, auth := range [][]string{nil, {"--auth", "owner:wrong"}} {
		code, _, stderr := zklock(t, append(auth, "revoke", h.LockPath())...)
		if code != exitError || !strings.Contains(stderr, zk.ErrNoAuth.Error()) {
			t.Errorf("revoke with %q: status %d, stderr %q", auth, code, stderr)
		}
	}
	select {
	case <-asked:
		t.Fatal("a revocation without the owner's credentials reached the holder")
	default:
	}
	if code, _, stderr := zklock(t, "--auth", "owner:s3cret", "revoke", h.LockPath()); code != 0 {
		t.Fatalf("revoke with the owner's credentials: status %d, stderr %q", code, stderr)
	}
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the holder did not hear the owner's revocation")
	}
}

// revoke PATH asks the lock's current holders, by the lock's own rules,
// and names the nodes it asked.
func TestRevokeLockPath(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t, "")

	// A mutex: its holder, not its waiter.
	h, asked := revocableHolder(t, client, path+"/mutex")
	mu, err := recipes.NewInterProcessMutex(client, path+"/mutex")
	if err != nil {
		t.Fatal(err)
	}
	queued(ctx, t, conn, path+"/mutex", 2, mu.NewHandle().Acquire)
	code, out, stderr := zklock(t, "revoke", path+"/mutex")
	if code != 0 || strings.TrimSpace(out) != "revocation requested: "+h.LockPath()+" (session "+fmt.Sprintf("0x%x", client.SessionID())+")" {
		t.Errorf("mutex: status %d, stdout %q, stderr %q; want only the holder %s asked", code, out, stderr, h.LockPath())
	}
	select {
	case <-asked:
	case <-ctx.Done():
		t.Fatal("the holder did not hear the revocation")
	}

	// A read-write lock: both readers hold; the writer waits.
	rw, err := recipes.NewInterProcessReadWriteLock(client, path+"/rw")
	if err != nil {
		t.Fatal(err)
	}
	var readers []string
	for i := 0; i < 2; i++ {
		r := rw.NewHandle().ReadLock()
		if err := r.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Release(context.Background()) })
		readers = append(readers, r.LockPath())
	}
	queued(ctx, t, conn, path+"/rw", 3, rw.NewHandle().WriteLock().Acquire)
	code, out, stderr = zklockBin(t, "--json", "revoke", path+"/rw")
	if code != 0 {
		t.Fatalf("rw: status %d, stderr %q", code, stderr)
	}
	lines := jsonLines(t, out)
	var nodes []string
	for _, l := range lines {
		if bad := checkFields(l, map[string]any{"event": eventRevokeRequested, "path": path + "/rw", "kind": "read",
			"session": anyValue, "token": anyValue, "message": anyValue, "released": false}); len(bad) > 0 {
			t.Errorf("rw: %v: %v", l, bad)
		}
		nodes = append(nodes, fmt.Sprint(l["node"]))
	}
	if !equal(nodes, readers) {
		t.Errorf("rw: asked %v, want the readers %v", nodes, readers)
	}

	// A semaphore: leases cannot be revoked, by path or by node (whose data
	// stays as it was).
	lease := holdLease(ctx, t, client, path+"/sem", 1)
	code, _, stderr = zklock(t, "revoke", path+"/sem")
	if code != exitError || !strings.Contains(stderr, "cannot be revoked") {
		t.Errorf("semaphore: status %d, stderr %q", code, stderr)
	}
	code, _, stderr = zklock(t, "revoke", lease.Path())
	if code != exitError || !strings.Contains(stderr, "lease node, which cannot be revoked") {
		t.Errorf("lease node: status %d, stderr %q", code, stderr)
	}

	// A leader latch: no revocation, by path or by node; its participant id
	// stays.
	latch, err := recipes.NewLeaderLatch(client, path+"/latch", recipes.WithParticipantID("p-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := latch.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = latch.Close() })
	if err := latch.Await(ctx); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = zklock(t, "revoke", path+"/latch")
	if code != exitError || !strings.Contains(stderr, "leader latch") {
		t.Errorf("latch: status %d, stderr %q", code, stderr)
	}
	kids, _, err := conn.Children(path + "/latch")
	if err != nil || len(kids) != 1 {
		t.Fatalf("latch children %v, %v", kids, err)
	}
	code, _, stderr = zklock(t, "revoke", path+"/latch/"+kids[0])
	if code != exitError || !strings.Contains(stderr, "latch node, which cannot be revoked") {
		t.Errorf("latch node: status %d, stderr %q", code, stderr)
	}
	if data, _, err := conn.Get(path + "/latch/" + kids[0]); err != nil || string(data) != "p-1" {
		t.Errorf("latch node data %q, %v; want the participant id untouched", data, err)
	}
}

// revoke --wait PATH: the holder releases, and the JSON line says so.
func TestRevokeLockPathWaits(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	h, released := releasingHolder(ctx, t, path)
	node := h.LockPath()
	code, out, stderr := zklockBin(t, "--json", "revoke", "--wait", path)
	lines := jsonLines(t, out)
	if code != 0 || len(lines) != 1 {
		t.Fatalf("status %d, stdout %q, stderr %q", code, out, stderr)
	}
	if bad := checkFields(lines[0], map[string]any{"event": eventRevokeRequested, "node": node, "path": path, "kind": "mutex", "released": true}); len(bad) > 0 {
		t.Errorf("%v: %v", lines[0], bad)
	}
	if err := testutil.Recv(t, released, "the revocation listener's Release"); err != nil {
		t.Error(err)
	}
}
