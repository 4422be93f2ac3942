package framework

import (
	"context"
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

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
// its ephemeral nodes are gone, the trust context ends, and the client goes
// on with a new session.
func TestServerExpiredSession(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), WithSessionTimeout(4*time.Second), WithListener(rec),
		WithErrorPolicy(state.SessionErrorPolicy{})) // so that the trust ends at LOST, not at the SUSPENDED before it
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	trust, _ := c.Trust()

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
	case <-trust.Done():
		if !errors.As(context.Cause(trust), &se) || se.State != state.Lost {
			t.Fatalf("trust ended with %v, want LOST", context.Cause(trust))
		}
	default:
		t.Fatal("the trust did not end at LOST")
	}
	if c.SessionID() == first {
		t.Fatal("session id did not change")
	}
	ok, _, err := c.Exists(ctx, node)
	if err != nil || ok {
		t.Fatalf("ephemeral node of the expired session: exists=%v err=%v", ok, err)
	}
}

// The trust follows the client's error policy: under the Session policy a
// blip (SUSPENDED, then RECONNECTED in the same session) does not end it,
// LOST does; under the Standard policy, the default, SUSPENDED ends it, with
// the earliest moment the servers could expire the session as its
// ExpiryBound, and a new stretch begins. Each half runs a client of its
// own, with the policy it is named after (checked, not assumed), behind a
// proxy of its own. The trust ends before any listener hears of the state
// that ended it (Client.post), so once the recorder has heard a state, the
// trust shows what that state did to it.
func TestTrustFollowsPolicy(t *testing.T) {
	t.Run("session", func(t *testing.T) {
		testutil.CheckLeaks(t)
		ctx := testutil.Context(t)
		proxy := zktest.NewProxy(t, server.Addr())
		rec := testutil.NewStateRecorder()
		c := newClient(t, proxy.Addr(), WithListener(rec), WithErrorPolicy(state.SessionErrorPolicy{}))
		if _, ok := c.ErrorPolicy().(state.SessionErrorPolicy); !ok {
			t.Fatalf("the session half's client has the %T", c.ErrorPolicy())
		}
		rec.WaitFor(ctx, t, state.Connected)
		trust, session := c.Trust()
		first := c.SessionID()
		if session != first {
			t.Fatalf("Trust vouches for session %x, the client has %x", session, first)
		}
		proxy.DropConnections()
		rec.WaitFor(ctx, t, state.Suspended)
		rec.WaitFor(ctx, t, state.Reconnected)
		if c.SessionID() != first {
			t.Fatalf("the blip changed the session from %x to %x", first, c.SessionID())
		}
		select {
		case <-trust.Done():
			t.Fatalf("the blip ended the trust under the Session policy: %v", context.Cause(trust))
		default:
		}
		if err := proxy.ExpireSession(first); err != nil {
			t.Fatal(err)
		}
		rec.WaitFor(ctx, t, state.Lost)
		select {
		case <-trust.Done():
			var se *StateError
			if !errors.As(context.Cause(trust), &se) || se.State != state.Lost {
				t.Fatalf("trust ended with %v, want LOST", context.Cause(trust))
			}
		default:
			t.Fatal("LOST did not end the trust under the Session policy")
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
		rec.WaitFor(ctx, t, state.Connected)
		if _, _, err := c.Exists(ctx, "/"); err != nil { // a request answered: a contact to count from
			t.Fatal(err)
		}
		trust, _ := c.Trust()
		before := time.Now()
		proxy.DropConnections()
		rec.WaitFor(ctx, t, state.Suspended)
		select {
		case <-trust.Done():
			var se *StateError
			if !errors.As(context.Cause(trust), &se) || se.State != state.Suspended {
				t.Fatalf("trust ended with %v, want SUSPENDED", context.Cause(trust))
			}
			// The last contact is at most a ping interval (T/3) before the
			// drop, and after the client began: the bound is within T of it.
			if T := c.SessionTimeout(); se.ExpiryBound.After(before.Add(T)) || se.ExpiryBound.Before(before.Add(T/2)) {
				t.Fatalf("ExpiryBound %v, want within (T/2, T] of the drop at %v (T %v)", se.ExpiryBound, before, T)
			}
		default:
			t.Fatal("SUSPENDED did not end the trust under the Standard policy")
		}
		if next, _ := c.Trust(); next.Err() != nil {
			t.Fatalf("no new stretch of trust after SUSPENDED: %v", context.Cause(next))
		}
	})
}

func TestCloseWakesAndRefuses(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	c := newClient(t, "")
	trust, _ := c.Trust()
	if trust.Err() != nil {
		t.Fatalf("the trust of a new client has ended: %v", context.Cause(trust))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, trust.Done(), "the trust's end at Close")
	if err := context.Cause(trust); !errors.Is(err, ErrClosed) {
		t.Fatalf("cause of a trust ended by Close = %v, want ErrClosed", err)
	}
	if late, _ := c.Trust(); !errors.Is(context.Cause(late), ErrClosed) {
		t.Fatalf("Trust after Close: cause %v, want ErrClosed", context.Cause(late))
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

// A client that reaches no server says which servers it tried, what each
// dial gave, and how long it really waited (the retries included), with
// go-zookeeper's sentinel; and once no server has answered for the
// connection timeout it logs a WARN naming them, each with its dial.
func TestUnreachableServersAreNamed(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	warned := make(chan zapcore.Entry, 4)
	core, logs := observer.New(zapcore.WarnLevel)
	logger := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Level == zapcore.WarnLevel {
			warned <- e
		}
		return nil
	}))
	const servers = "127.0.0.1:1,127.0.0.1:2"
	const named = "127.0.0.1:1 (connection refused), 127.0.0.1:2 (connection refused)"
	c, err := New(servers, retry.NewNTimes(2, 10*time.Millisecond), WithConnectionTimeout(200*time.Millisecond), WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_, _, err = c.Exists(ctx, "/")
	waited := time.Since(start)
	if !errors.Is(err, zk.ErrNoServer) || !strings.HasSuffix(err.Error(), ": "+named) {
		t.Fatalf("Exists with no server = %v, want it to name %s and wrap zk.ErrNoServer", err, named)
	}
	said := err.Error()[strings.Index(err.Error(), "answered for ")+len("answered for "):]
	d, perr := time.ParseDuration(said[:strings.Index(said, ":")])
	if perr != nil || d > waited+time.Millisecond { // rounded to the millisecond
		t.Fatalf("the error says it waited %q; the call took %v", said, waited)
	}
	e := testutil.Recv(t, warned, "the WARN of no server answering")
	if e.Message != "no ZooKeeper server has answered" {
		t.Fatalf("WARN %q", e.Message)
	}
	if got := logs.FilterMessage(e.Message).All(); len(got) == 0 || got[0].ContextMap()["servers"] != named {
		t.Fatalf("the WARN does not name the servers and their dials: %v", got)
	}
}
