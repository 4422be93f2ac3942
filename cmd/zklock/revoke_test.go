package main

import (
	"context"
	"encoding/json"
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

func TestRevokeWaitsForRelease(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
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
	node := h.LockPath()
	code, out, stderr := zklock(t, "revoke", "--wait", node)
	if code != 0 || !strings.Contains(out, "revocation requested: "+node) || !strings.Contains(out, "released: "+node) {
		t.Errorf("status %d, stdout %q, stderr %q", code, out, stderr)
	}
	if err := <-released; err != nil {
		t.Error(err)
	}
}

func TestRevokeErrors(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())

	// No such node.
	code, _, stderr := zklock(t, "revoke", path+"/gone")
	if code != exitError || !strings.Contains(stderr, "no node") {
		t.Errorf("missing node: status %d, stderr %q", code, stderr)
	}
	// Not a lock node: persistent.
	createNode(t, conn, path)
	code, _, stderr = zklock(t, "revoke", path)
	if code != exitError || !strings.Contains(stderr, "not a lock node") {
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
