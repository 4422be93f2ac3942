package curatorpeer

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

func start(t *testing.T, opts Options) *Peer {
	t.Helper()
	p, err := Start(testutil.Context(t), t.Name(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

func TestRequestsAndEvents(t *testing.T) {
	testutil.CheckLeaks(t)
	before := time.Now()
	p := start(t, Options{})
	ctx := testutil.Context(t)
	if r, err := p.Call(ctx, "-", "ping"); err != nil || r != "pong" {
		t.Fatalf("ping: %q, %v", r, err)
	}
	if _, err := p.Call(ctx, "-", "acquire", "nolock"); err == nil || !strings.Contains(err.Error(), "no lock nolock") {
		t.Fatalf("acquire of an unknown lock: %v", err)
	}
	ev, err := p.NextEvent(ctx, 0)
	if err != nil || ev.Text != "ready" || ev.Time.Before(before) || ev.Time.After(time.Now()) {
		t.Fatalf("first event: %+v, %v", ev, err)
	}
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := p.NextEvent(short, 1); err == nil {
		t.Fatal("a second event out of nothing")
	}
	if !p.HasEvent("ready") || len(p.Events()) != 1 || p.EventTexts()[0] != "ready" {
		t.Fatalf("events %+v", p.Events())
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(ctx, "-", "ping"); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("ping after Close: %v", err)
	}
}

func TestCuratorClientAndLock(t *testing.T) {
	testutil.CheckLeaks(t)
	srv := zktest.NewServer(t)
	log := filepath.Join(t.TempDir(), "peer.log")
	p := start(t, Options{LogPath: log, LogLevel: "info"})
	ctx := testutil.Context(t)
	sid, err := p.Client(ctx, "c", srv.Addr())
	if err != nil || sid == 0 {
		t.Fatalf("client: %d, %v", sid, err)
	}
	if again, err := p.SessionID(ctx, "c"); err != nil || again != sid {
		t.Fatalf("session: %d, %v (want %d)", again, err, sid)
	}
	if err := p.WaitEvent(ctx, "state c CONNECTED"); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Call(ctx, "-", "mutex", "m", "c", "/peer-test/lock"); err != nil {
		t.Fatal(err)
	}
	r, err := p.Call(ctx, "w", "acquire", "m")
	if ok, aerr := Acquired(r); err != nil || aerr != nil || !ok {
		t.Fatalf("acquire: %q, %v, %v", r, err, aerr)
	}
	nodes, err := p.Participants(ctx, "m")
	if err != nil || len(nodes) != 1 || !strings.Contains(nodes[0], "-lock-") {
		t.Fatalf("participants: %q, %v", nodes, err)
	}
	if _, err := p.Call(ctx, "w", "release", "m"); err != nil {
		t.Fatal(err)
	}
	if nodes, err := p.Participants(ctx, "m"); err != nil || len(nodes) != 0 {
		t.Fatalf("participants after release: %q, %v", nodes, err)
	}
	if !strings.Contains(p.Log(1000), "INFO") || p.LogPath() != log {
		t.Fatalf("log %s: %q", p.LogPath(), p.Log(5))
	}
}

func TestReplyParsers(t *testing.T) {
	if ok, err := Acquired("false"); ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := Acquired("maybe"); err == nil {
		t.Fatal("acquire reply maybe")
	}
}

// A client that cannot close its session (its connection black-holed:
// ZooKeeper's close waits for the server's answer) does not hold quit up
// past the peer's close grace; the stacks of its threads go to the log.
func TestQuitWithAClientThatCannotClose(t *testing.T) {
	testutil.CheckLeaks(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.Addr())
	p := start(t, Options{LogPath: filepath.Join(t.TempDir(), "peer.log")})
	ctx := testutil.Context(t)
	if _, err := p.Client(ctx, "c", proxy.Addr(), "session=30000"); err != nil {
		t.Fatal(err)
	}
	proxy.BlackHole()
	if err := p.Close(); err != nil {
		t.Fatalf("Close with a client that cannot close: %v\n%s", err, p.Log(100))
	}
	if log := p.Log(1000); !strings.Contains(log, "quit: close-c did not finish") || !strings.Contains(log, "ClientCnxn") {
		t.Fatalf("no stacks in the log of a slow quit:\n%s", log)
	}
}
