package framework

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// The whole life of a session through a fault proxy: a blip keeps the
// session, a partition longer than the session timeout loses it, and every
// listener hears every transition, in order.
func TestConnectionStatesThroughFaults(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	proxy := zktest.NewProxy(t, server.Addr())
	a, b := testutil.NewStateRecorder(), testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), WithSessionTimeout(2*time.Second),
		WithConnectionTimeout(500*time.Millisecond), WithListener(a), WithListener(b))
	a.WaitFor(ctx, t, state.Connected)
	first := c.SessionID()
	if first == 0 {
		t.Fatal("no session id after CONNECTED")
	}

	proxy.DropConnections()
	a.WaitFor(ctx, t, state.Suspended)
	a.WaitFor(ctx, t, state.Reconnected)
	if got := c.SessionID(); got != first {
		t.Fatalf("session after a blip = %x, want the same %x", got, first)
	}

	proxy.BlackHole()
	a.WaitFor(ctx, t, state.Suspended)
	a.WaitFor(ctx, t, state.Lost) // by the client's own timer: the server is unreachable
	if c.State() != state.Lost {
		t.Fatalf("state = %v, want LOST", c.State())
	}
	proxy.Restore()
	a.WaitFor(ctx, t, state.Reconnected)
	if got := c.SessionID(); got == first || got == 0 {
		t.Fatalf("session after the partition = %x, want a new one (old %x)", got, first)
	}

	want := []state.ConnectionState{state.Connected, state.Suspended, state.Reconnected,
		state.Suspended, state.Lost, state.Reconnected}
	b.WaitFor(ctx, t, state.Lost)
	b.WaitFor(ctx, t, state.Reconnected)
	for _, r := range []*testutil.StateRecorder{a, b} {
		if err := r.Equal(want...); err != nil {
			t.Error(err)
		}
	}
}

// A session the server expires (not a client-side guess) is reported LOST,
// its ephemeral nodes are gone, the error signal fires, and the client goes
// on with a new session.
func TestServerExpiredSession(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), WithSessionTimeout(4*time.Second), WithListener(rec),
		WithErrorPolicy(state.SessionErrorPolicy{})) // so that the signal ends at LOST, not at the SUSPENDED before it
	sig := c.NotifyErrorState()
	defer sig.Stop()

	node, err := c.Create(ctx, base+"/eph", nil, WithMode(Ephemeral), CreatingParentContainersIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	first := c.SessionID()
	if err := proxy.ExpireSession(first); err != nil {
		t.Fatal(err)
	}
	rec.WaitFor(ctx, t, state.Lost)
	rec.WaitFor(ctx, t, state.Reconnected)
	var se *StateError
	select {
	case <-sig.Done():
		if !errors.As(sig.Err(), &se) || se.State != state.Lost {
			t.Fatalf("signal ended with %v, want LOST", sig.Err())
		}
	default:
		t.Fatal("error signal did not fire on LOST")
	}
	if c.SessionID() == first {
		t.Fatal("session id did not change")
	}
	ok, _, err := c.Exists(ctx, node)
	if err != nil || ok {
		t.Fatalf("ephemeral node of the expired session: exists=%v err=%v", ok, err)
	}
}

// The error signal follows the client's error policy: under the Session
// policy a blip (SUSPENDED, then RECONNECTED in the same session) does not
// end it, LOST does; under the Standard policy, the default, SUSPENDED ends
// it. Each half runs a client of its own, with the policy it is named after
// (checked, not assumed), behind a proxy of its own. A signal ends before
// any listener hears of the state that ended it (Client.post), so once the
// recorder has heard a state, the signal shows what that state did to it.
func TestErrorSignalFollowsPolicy(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		testutil.CheckLeaks(t)
		ctx := testutil.Context(t)
		proxy := zktest.NewProxy(t, server.Addr())
		rec := testutil.NewStateRecorder()
		c := newClient(t, proxy.Addr(), WithListener(rec), WithErrorPolicy(state.SessionErrorPolicy{}))
		if _, ok := c.ErrorPolicy().(state.SessionErrorPolicy); !ok {
			t.Fatalf("the session half's client has the %T", c.ErrorPolicy())
		}
		sig := c.NotifyErrorState()
		defer sig.Stop()
		first := c.SessionID()
		proxy.DropConnections()
		rec.WaitFor(ctx, t, state.Suspended)
		rec.WaitFor(ctx, t, state.Reconnected)
		if c.SessionID() != first {
			t.Fatalf("the blip changed the session from %x to %x", first, c.SessionID())
		}
		select {
		case <-sig.Done():
			t.Fatalf("the blip ended the signal under the Session policy: %v", sig.Err())
		default:
		}
		if err := proxy.ExpireSession(first); err != nil {
			t.Fatal(err)
		}
		rec.WaitFor(ctx, t, state.Lost)
		select {
		case <-sig.Done():
			var se *StateError
			if !errors.As(sig.Err(), &se) || se.State != state.Lost {
				t.Fatalf("signal ended with %v, want LOST", sig.Err())
			}
		default:
			t.Fatal("LOST did not end the signal under the Session policy")
		}
	})
	t.Run("standard", func(t *testing.T) {
		testutil.CheckLeaks(t)
		ctx := testutil.Context(t)
		proxy := zktest.NewProxy(t, server.Addr())
		rec := testutil.NewStateRecorder()
		c := newClient(t, proxy.Addr(), WithListener(rec)) // the default policy
		if _, ok := c.ErrorPolicy().(state.StandardErrorPolicy); !ok {
			t.Fatalf("the standard half's client has the %T", c.ErrorPolicy())
		}
		sig := c.NotifyErrorState()
		defer sig.Stop()
		proxy.DropConnections()
		rec.WaitFor(ctx, t, state.Suspended)
		select {
		case <-sig.Done():
			var se *StateError
			if !errors.As(sig.Err(), &se) || se.State != state.Suspended {
				t.Fatalf("signal ended with %v, want SUSPENDED", sig.Err())
			}
		default:
			t.Fatal("SUSPENDED did not end the signal under the Standard policy")
		}
	})
}

func TestCloseWakesAndRefuses(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	c := newClient(t, "")
	sig := c.NotifyErrorState()
	stopped := c.NotifyErrorState()
	if sig.Err() != nil {
		t.Fatalf("Err of a signal that has not ended = %v", sig.Err())
	}
	stopped.Stop()
	if err := stopped.Err(); err != ErrStopped {
		t.Fatalf("Err of a stopped signal = %v, want ErrStopped", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, sig.Done(), "the signal's end at Close")
	if err := sig.Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Err of a signal ended by Close = %v, want ErrClosed", err)
	}
	if err := stopped.Err(); err != ErrStopped {
		t.Fatalf("Close changed the Err of a stopped signal to %v", err)
	}
	if late := c.NotifyErrorState(); !errors.Is(late.Err(), ErrClosed) {
		t.Fatalf("signal made after Close: Err %v, want ErrClosed", late.Err())
	}
	if _, _, err := c.GetData(ctx, "/"); !errors.Is(err, ErrClosed) || !errors.Is(err, zk.ErrClosing) {
		t.Fatalf("GetData after Close = %v, want ErrClosed", err)
	}
	if err := c.BlockUntilConnected(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("BlockUntilConnected after Close = %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// A request whose write failed gets go-zookeeper's raw network error: it is
// a connection loss, retried as Curator retries CONNECTIONLOSS.
func TestWriteErrorIsConnectionLoss(t *testing.T) {
	broken := &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}
	err := connectionLoss(broken)
	if !errors.Is(err, zk.ErrConnectionClosed) || !errors.Is(err, syscall.EPIPE) || !retry.IsRetryable(err) {
		t.Fatalf("connectionLoss(%v) = %v", broken, err)
	}
	for _, e := range []error{nil, zk.ErrNoNode, zk.ErrConnectionClosed, context.Canceled} {
		if got := connectionLoss(e); got != e {
			t.Errorf("connectionLoss(%v) = %v, want it unchanged", e, got)
		}
	}
}
