package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

func TestRevokeRevocableHolder(t *testing.T) {
	testutil.CheckLeaks(t)
	path := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), path)
	conn := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	mu, err := recipes.NewInterProcessMutex(newClient(t, ""), path)
	if err != nil {
		t.Fatal(err)
	}
	h := mu.NewHandle()
	asked := make(chan struct{}, 1)
	h.MakeRevocable(func() { asked <- struct{}{} })
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Release(context.Background())

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

func TestRevokeWaitsForRelease(t *testing.T) {
	testutil.CheckLeaks(t)
	path := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), path)
	ctx := testutil.Context(t)
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
	testutil.CheckLeaks(t)
	path := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), path)
	conn := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)

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
	mu, err := recipes.NewInterProcessMutex(newClient(t, ""), path)
	if err != nil {
		t.Fatal(err)
	}
	h := mu.NewHandle()
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Release(context.Background())
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
