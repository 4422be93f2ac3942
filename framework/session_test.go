package framework

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/state"
)

// When the local timer posts LOST (no server has said anything since before
// the session could expire), the client gives the session up, as Curator
// does: it moves to a new session at once, and closes the old one on the
// server from a connection of its own as soon as a server answers it — but
// not before the session timeout has passed since the last renewal it is
// sure of (StateError.ExpiryBound), so that a holder told at LOST keeps its
// margin — and the old session's ephemeral nodes go then, not when the
// server's own expiry comes to them (or never, while the old session is
// resumed).
//
// HoldSession plays a partition of the old session alone: the server keeps
// it (its timeout is 4 s), every connection that presents it (the
// client's close of it) is held, a new session passes.
func TestTimerLostClosesTheOldSession(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	const timeout = 4 * time.Second
	c := newClient(t, proxy.Addr(), WithSessionTimeout(timeout),
		WithSimulatedSessionExpirationPercent(10), WithListener(rec)) // LOST 0.4 s after the last contact
	rec.WaitFor(ctx, t, state.Connected)
	old, oldEnded := c.Session()
	if old == 0 || old != c.SessionID() {
		t.Fatalf("Session() = %x, SessionID() = %x", old, c.SessionID())
	}
	beforeCreate := time.Now()
	node, err := c.Create(ctx, base+"/eph", nil, WithMode(Ephemeral), CreatingParentsIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	trust, _ := c.Trust()

	release := proxy.HoldSession(old)
	defer release()
	rec.WaitFor(ctx, t, state.Suspended)
	rec.WaitFor(ctx, t, state.Lost)
	lostAt := time.Now()
	select {
	case <-oldEnded:
	default:
		t.Fatal("the old session's ended channel is open after LOST")
	}
	rec.WaitFor(ctx, t, state.Reconnected)
	now, nowEnded := c.Session()
	if now == old || now == 0 {
		t.Fatalf("session after LOST = %x, want a new one (old %x)", now, old)
	}
	select {
	case <-nowEnded:
		t.Fatal("the new session's ended channel is closed")
	default:
	}
	var se *StateError
	if !errors.As(context.Cause(trust), &se) || se.State != state.Suspended {
		t.Fatalf("trust ended with %v, want SUSPENDED", context.Cause(trust))
	}

	// The old session is alive on the server: its node is still there.
	raw := testutil.Connect(t, server.Addr())
	ok, stat, err := raw.Exists(node)
	if err != nil || !ok || stat.EphemeralOwner != old {
		t.Fatalf("node of the old session before it can reach the server: exists %v, %+v, %v", ok, stat, err)
	}
	release() // the client's close of the old session reaches the server
	if err := proxy.WaitRequests(ctx, zktest.OpCloseSession, 1); err != nil {
		t.Fatal(err)
	}
	testutil.WaitGone(t, raw, node)
	// The bound told with SUSPENDED: T after the last renewal the client
	// is sure of (the handshake here: the create's answer, with none after
	// it, proves nothing of a leader), the earliest the servers could have
	// expired the session as far as the client can tell.
	if se.ExpiryBound.IsZero() || se.ExpiryBound.After(beforeCreate.Add(timeout)) {
		t.Fatalf("ExpiryBound %v, want one no later than T after the create (%v)", se.ExpiryBound, beforeCreate.Add(timeout))
	}
	if goneAt := time.Now(); goneAt.Before(se.ExpiryBound) {
		t.Fatalf("the old session's node went %v after LOST, %v before the servers could have expired the session",
			goneAt.Sub(lostAt), se.ExpiryBound.Sub(goneAt))
	}
	if err := rec.Equal(state.Connected, state.Suspended, state.Lost, state.Reconnected); err != nil {
		t.Fatal(err) // the old session's return moved nothing
	}
	if _, err := c.Create(ctx, base+"/again", nil, WithMode(Ephemeral)); err != nil {
		t.Fatalf("create in the new session: %v", err)
	}
}

// A listener may close its own client, as in Curator's "on LOST, close and
// build a new client": Close returns, and the client's goroutines end.
func TestCloseFromAListener(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	closed := make(chan error, 1)
	c.AddListener(state.ListenerFunc(func(s state.ConnectionState) {
		if s == state.Suspended {
			send(closed, c.Close())
		}
	}))
	proxy.DropConnections()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close called from a listener did not return")
	}
	if !c.IsClosed() {
		t.Fatal("not closed")
	}
	if _, _, err := c.Exists(ctx, "/"); !errors.Is(err, ErrClosed) || !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("Exists after Close = %v", err)
	}
}

// The stretch of trust that ends when go-zookeeper moves to a new session
// (the servers expired the old one) says when the servers could first have
// expired the old session: its own last contact plus its own timeout, which
// has passed, not the new session's handshake plus its timeout, which would
// lie in the future for a session already gone.
func TestExpiryBoundOfAnExpiredSessionIsItsOwn(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	const timeout = 500 * time.Millisecond
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), WithListener(rec), WithSessionTimeout(timeout))
	release := proxy.HoldNewSessions()
	defer release()
	old := c.SessionID()
	testutil.Must(t, proxy.ExpireSession(old))
	rec.WaitFor(ctx, t, state.Lost)
	trust, session := c.Trust() // the stretch after LOST: still the old session's, until a new one begins
	if session != old {
		t.Fatalf("the trust vouches for %x, want the old session %x until a new one begins", session, old)
	}
	testutil.Until(t, "the old session's own bound passed", func() (bool, string) {
		return time.Now().After(proxy.LastReply().Add(timeout)), ""
	})
	released := time.Now()
	release() // the new session's handshake goes through now
	testutil.Recv(t, trust.Done(), "the end of the old session's stretch")
	var se *StateError
	if !errors.As(context.Cause(trust), &se) || se.State != state.Lost {
		t.Fatalf("the stretch ended with %v, want LOST", context.Cause(trust))
	}
	if se.ExpiryBound.IsZero() || se.ExpiryBound.After(released) {
		t.Fatalf("ExpiryBound %v: after the old session was gone (%v); want the old session's last contact + its timeout",
			se.ExpiryBound, released)
	}
}
