package compat_test

import (
	"path/filepath"
	"testing"

	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/testutil"
)

// peer is one JVM running CuratorPeer (internal/curatorpeer), tied to a
// test. Its stderr (Curator's and ZooKeeper's warnings) goes to a log file
// that is shown when the test fails. It is stopped, by its own pid, when the
// test ends.
type peer struct {
	t testing.TB
	*curatorpeer.Peer
}

// call is one request to a peer.
type call struct{ *curatorpeer.Call }

// startPeer starts a JVM running CuratorPeer and waits until it reads
// requests.
func startPeer(t testing.TB, name string) *peer {
	t.Helper()
	pp, err := curatorpeer.Start(testutil.Context(t), name,
		curatorpeer.Options{LogPath: filepath.Join(t.TempDir(), name+".log")})
	if err != nil {
		t.Fatalf("Java peer %s did not start: %v", name, err)
	}
	p := &peer{t: t, Peer: pp}
	t.Cleanup(p.stop)
	return p
}

// stop asks the JVM to quit, and kills it (by its pid) if it has not exited
// within a few seconds; it always waits for it.
func (p *peer) stop() {
	lines := 60
	if err := p.Close(); err != nil {
		p.t.Error(err)
		lines = 1000 // with the stacks of a JVM that would not exit
	}
	if p.t.Failed() {
		p.t.Logf("peer %s log (%s):\n%s", p.Name(), p.LogPath(), p.Log(lines))
	}
}

// send sends a request to run verb on worker (a thread of the peer; "-" for
// any) and returns at once.
func (p *peer) send(worker, verb string, args ...string) *call {
	return &call{p.Send(worker, verb, args...)}
}

// must waits for the reply and fails the test on an error.
func (c *call) must(t testing.TB) string {
	t.Helper()
	r, err := c.Wait(testutil.Context(t))
	testutil.Must(t, err)
	return r
}

// do runs a request and returns its reply, failing the test on an error.
func (p *peer) do(t testing.TB, worker, verb string, args ...string) string {
	t.Helper()
	return p.send(worker, verb, args...).must(t)
}

// mustEvent waits for the event ev, failing the test if it does not come.
func (p *peer) mustEvent(t testing.TB, ev string) {
	t.Helper()
	testutil.Must(t, p.WaitEvent(testutil.Context(t), ev))
}

// client opens a Curator client named name in the peer, connected to addr,
// with options such as "ns=<namespace>", and returns its session id.
func (p *peer) client(t testing.TB, name, addr string, opts ...string) int64 {
	t.Helper()
	sid, err := p.Client(testutil.Context(t), name, addr, opts...)
	return mustValue(t, sid, err)
}

// sessionID asks the peer for a client's current session id.
func (p *peer) sessionID(t testing.TB, name string) int64 {
	t.Helper()
	sid, err := p.SessionID(testutil.Context(t), name)
	return mustValue(t, sid, err)
}

// participants runs "participants" and returns the nodes.
func (p *peer) participants(t testing.TB, lock string) []string {
	t.Helper()
	nodes, err := p.Participants(testutil.Context(t), lock)
	return mustValue(t, nodes, err)
}

// acquired interprets the reply to "acquire".
func acquired(t testing.TB, reply string) bool {
	t.Helper()
	ok, err := curatorpeer.Acquired(reply)
	return mustValue(t, ok, err)
}

// mustValue returns v, failing the test if err is not nil.
func mustValue[T any](t testing.TB, v T, err error) T {
	t.Helper()
	testutil.Must(t, err)
	return v
}
