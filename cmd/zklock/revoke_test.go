package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// revoke of what has no holder, through the program: a lock node that is
// gone is nothing to revoke (0), a lock path without a holder is an error
// (1) whether the empty path is still there or was reaped.
func TestRevokeNoHolder(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())

	gone := path + "/_c_2eebaa23-ba28-47fe-ba10-3a5d37d41840-lock-0000000007"
	startZklock(t, false, "revoke", gone).succeeds("already gone: " + gone)
	startZklock(t, false, "--json", "revoke", "--wait", gone).jsonLine(0, map[string]any{"event": eventAlreadyGone, "node": gone, "released": true})

	// An empty lock path (here a persistent node, as a container is until
	// the server reaps it), and a lock path that was held, released and
	// reaped: neither has a holder.
	createNode(t, conn, path)
	createNode(t, conn, path+"/empty")
	h := holdMutex(ctx, t, path+"/reaped")
	testutil.Must(t, h.Release(ctx))
	testutil.WaitGone(t, conn, path+"/reaped")
	for _, p := range []string{path + "/empty", path + "/reaped"} {
		startZklock(t, false, "revoke", p).fails(exitError, "no holder to revoke at "+p)
	}
}

// A holder that did not make its lock revocable (its node has data) is not
// asked, and revoke fails, unless --force: then it is asked, and told so.
func TestRevokeNotRevocable(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	h := holdMutex(ctx, t, path)
	for _, target := range []string{h.LockPath(), path} {
		code, out, stderr := zklockBin(t, "revoke", target)
		if code != exitError || !strings.Contains(out, "not asked: "+h.LockPath()) || !strings.Contains(stderr, "not revocable (--force asks anyway)") {
			t.Errorf("revoke %s: status %d, stdout %q, stderr %q", target, code, out, stderr)
		}
		if data, _, err := conn.Get(h.LockPath()); err != nil || string(data) == "__REVOKE__" {
			t.Fatalf("node data %q, %v: written without --force", data, err)
		}
	}
	startZklock(t, false, "--json", "revoke", path).jsonLine(exitError,
		map[string]any{"event": eventNotRevocable, "node": h.LockPath(), "revocable": false, "released": false})
	startZklock(t, false, "revoke", "--force", path).succeeds("revocation requested: "+h.LockPath(), "forced")
	if data, _, err := conn.Get(h.LockPath()); err != nil || string(data) != "__REVOKE__" {
		t.Errorf("node data %q, %v after --force", data, err)
	}
	// --wait with a timeout on a holder that does not release.
	startZklock(t, false, "revoke", "--force", "--wait", "--timeout", "200ms", h.LockPath()).fails(exitError, "deadline exceeded")
	// --wait, interrupted: 128+N.
	p := startZklock(t, false, "revoke", "--force", "--wait", h.LockPath())
	p.stdout.waitFor(ctx, t, "revocation requested")
	p.signal(syscall.SIGINT)
	if code := p.wait(); code != exitSignalBase+int(syscall.SIGINT) || !strings.Contains(p.stderr.String(), "interrupted") {
		t.Errorf("--wait, SIGINT: status %d, stderr %q", code, p.stderr.String())
	}
}

// revoke PATH asks the lock's current holders, by the lock's own rules,
// and names the nodes it asked; with --wait and --json, it prints each
// one's line once released.
func TestRevokeLockPath(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	client := newClient(t)

	// A mutex, by node: asked, and its listener runs.
	mu, err := recipes.NewInterProcessMutex(client, path+"/mutex")
	testutil.Must(t, err)
	h, asked := mu.NewHandle(), make(chan struct{}, 1)
	h.MakeRevocable(func() {
		select {
		case asked <- struct{}{}:
		default: // one request is heard already
		}
	})
	testutil.Must(t, h.Acquire(ctx))
	t.Cleanup(func() { h.Release(context.Background()) })
	startZklock(t, true, "--json", "revoke", h.LockPath()).jsonLine(0,
		map[string]any{"event": eventRevokeRequested, "node": h.LockPath(), "revocable": true, "released": false})
	testutil.Recv(t, asked, "the holder's revocation listener")
	if data, _, err := conn.Get(h.LockPath()); err != nil || string(data) != "__REVOKE__" {
		t.Errorf("node data %q, %v", data, err)
	}

	// A mutex, by path: its holder (asked again), not its waiter.
	testutil.Queued(t, conn, path+"/mutex", 2, mu.NewHandle().Acquire)
	code, out, stderr := zklock(t, "revoke", path+"/mutex")
	if code != 0 || strings.TrimSpace(out) != "revocation requested: "+h.LockPath()+" (session "+fmt.Sprintf("0x%x", client.SessionID())+")" {
		t.Errorf("mutex: status %d, stdout %q, stderr %q; want only the holder %s asked", code, out, stderr, h.LockPath())
	}
	testutil.Recv(t, asked, "the holder hearing the revocation")

	// A read-write lock: both revocable readers hold, and release when
	// asked; the writer waits. --wait: their lines once released.
	rw, err := recipes.NewInterProcessReadWriteLock(client, path+"/rw")
	testutil.Must(t, err)
	var readers []string
	for i := 0; i < 2; i++ {
		r := rw.NewHandle().ReadLock()
		r.MakeRevocable(func() { r.Release(context.Background()) })
		testutil.Must(t, r.Acquire(ctx))
		t.Cleanup(func() { r.Release(context.Background()) })
		readers = append(readers, r.LockPath())
	}
	testutil.Queued(t, conn, path+"/rw", 3, rw.NewHandle().WriteLock().Acquire)
	code, out, stderr = zklockBin(t, "--json", "revoke", "--wait", path+"/rw")
	if code != 0 {
		t.Fatalf("rw: status %d, stderr %q", code, stderr)
	}
	lines := jsonLines(t, out)
	var nodes []string
	for _, l := range lines {
		if bad := checkFields(l, map[string]any{"event": eventRevokeRequested, "path": path + "/rw", "kind": "read",
			"session": anyValue, "token": anyValue, "message": anyValue, "released": true}); len(bad) > 0 {
			t.Errorf("rw: %v: %v", l, bad)
		}
		nodes = append(nodes, fmt.Sprint(l["node"]))
	}
	if !slices.Equal(nodes, readers) {
		t.Errorf("rw: asked %v, want the readers %v", nodes, readers)
	}

	// A semaphore and a leader latch: no revocation, by path or by node;
	// the latch node's participant id stays.
	lease := holdLease(ctx, t, client, path+"/sem", 1)
	latch, err := recipes.NewLeaderLatch(client, path+"/latch", recipes.WithParticipantID("p-1"))
	testutil.Must(t, err)
	testutil.Must(t, latch.Start())
	t.Cleanup(func() { _ = latch.Close() })
	testutil.Must(t, latch.Await(ctx))
	kids, _, err := conn.Children(path + "/latch")
	if err != nil || len(kids) != 1 {
		t.Fatalf("latch children %v, %v", kids, err)
	}
	for target, msg := range map[string]string{
		path + "/sem":              "is a semaphore: Curator's semaphore leases cannot be revoked",
		lease.Path():               "lease node, which cannot be revoked",
		path + "/latch":            "leader latch",
		path + "/latch/" + kids[0]: "latch node, which cannot be revoked",
	} {
		startZklock(t, true, "revoke", target).fails(exitError, msg)
	}
	if data, _, err := conn.Get(path + "/latch/" + kids[0]); err != nil || string(data) != "p-1" {
		t.Errorf("latch node data %q, %v; want the participant id untouched", data, err)
	}
}

// What revoke calls revocable, against Java Curator 5.4's own holders: one
// that made its mutex revocable (makeRevocable: an empty node) is asked,
// and its listener runs; one that did not (the client's IP address as
// data) is not asked, and its node stays as it was (--force: as against a
// Go holder, TestRevokeNotRevocable).
func TestBinaryRevokeCuratorHolders(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	peer, err := curatorpeer.Start(ctx, "revoke", curatorpeer.Options{LogPath: filepath.Join(t.TempDir(), "peer.log")})
	testutil.Must(t, err)
	t.Cleanup(func() {
		if err := peer.Close(); err != nil {
			t.Error(err)
		}
	})
	call := func(worker, verb string, args ...string) string {
		t.Helper()
		reply, err := peer.Call(ctx, worker, verb, args...)
		if err != nil {
			t.Fatalf("%s %q: %v\n%s", verb, args, err, peer.Log(40))
		}
		return reply
	}
	call("-", "client", "jc", server.Addr())
	for _, lock := range []string{"rev", "plain"} {
		call("-", "mutex", lock, "jc", path+"/"+lock)
		if lock == "rev" {
			call("-", "revocable", lock)
		}
		if ok, err := curatorpeer.Acquired(call("w-"+lock, "acquire", lock)); err != nil || !ok {
			t.Fatalf("Curator's acquire of %s: %v, %v", lock, ok, err)
		}
	}
	kids := testutil.Children(t, conn, path+"/plain")
	if len(kids) != 1 {
		t.Fatalf("children of %s/plain: %v", path, kids)
	}
	plain := path + "/plain/" + kids[0]
	ip, _, err := conn.Get(plain)
	if err != nil || len(ip) == 0 {
		t.Fatalf("Curator's plain lock node has data %q (%v), want its address", ip, err)
	}

	startZklock(t, false, "revoke", path+"/rev").succeeds("revocation requested: " + path + "/rev/")
	if err := peer.WaitEvent(ctx, "revoked rev"); err != nil {
		t.Error(err)
	}
	if code, out, stderr := zklockBin(t, "revoke", path+"/plain"); code != exitError || !strings.HasPrefix(out, "not asked: "+plain) {
		t.Errorf("not revocable: status %d, stdout %q, stderr %q", code, out, stderr)
	}
	if data, _, err := conn.Get(plain); err != nil || string(data) != string(ip) {
		t.Errorf("not revocable: node data %q, %v; want %q untouched", data, err, ip)
	}
	for _, lock := range []string{"rev", "plain"} {
		call("w-"+lock, "release", lock)
	}
}
