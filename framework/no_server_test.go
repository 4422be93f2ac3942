package framework

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
)

// refusing is a connect string of two ports nobody listens on, and how an
// error names them.
const (
	refusing      = "127.0.0.1:1,127.0.0.1:2"
	refusingNamed = "127.0.0.1:1 (connection refused), 127.0.0.1:2 (connection refused)"
)

// An operation's wait for a connection ends as soon as every server has
// refused since it began, not at the connection timeout (an hour here):
// the attempt fails with a *NoServerError naming each server and its dial,
// a connection loss that the policy (none here) may retry. Unreachable
// says the same.
func TestWaitEndsWhenEveryServerRefused(t *testing.T) {
	testutil.CheckLeaks(t)
	c, err := New(refusing, retry.NewNTimes(0, 0), WithConnectionTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err = c.Exists(ctx, "/")
	var nse *NoServerError
	if !errors.As(err, &nse) || !errors.Is(err, zk.ErrNoServer) || errors.Is(err, context.DeadlineExceeded) ||
		!strings.HasSuffix(err.Error(), "answered for "+nse.Waited.Round(time.Millisecond).String()+": "+refusingNamed) {
		t.Fatalf("Exists with every server refusing = %v, want a *NoServerError naming %s, before the context's end", err, refusingNamed)
	}
	next, err := c.Unreachable()
	if !errors.As(err, &nse) || !errors.Is(err, zk.ErrNoServer) || serverDials(nse.Servers).String() != refusingNamed || next == nil {
		t.Fatalf("Unreachable = %v, want a *NoServerError naming %s", err, refusingNamed)
	}
	testutil.Recv(t, next, "the next dial") // the client goes on dialling
}

// A client the servers refuse still retries by its policy: the call that
// began while the server was down succeeds once it is back, and each
// retry came after a wait that every server refused, not after the
// connection timeout (an hour). Unreachable reports the refusal while
// the server is down and nothing once the client is connected again.
func TestRefusedCallRetriesByPolicy(t *testing.T) {
	testutil.CheckLeaks(t)
	s := zktest.NewServer(t, zktest.WithTickTime(100*time.Millisecond))
	retried := make(chan Event, 100)
	c, err := New(s.Addr(), retry.NewNTimes(1000, 10*time.Millisecond), WithConnectionTimeout(time.Hour),
		WithEventHook(EventFunc(func(e Event) {
			if e.Kind == Retrying {
				select {
				case retried <- e:
				default:
				}
			}
		})))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := testutil.Context(t)
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Unreachable(); err != nil {
		t.Fatalf("Unreachable while connected = %v", err)
	}
	testutil.Must(t, s.Stop())
	testutil.Until(t, "the client suspended", func() (bool, string) { return !c.State().IsConnected(), c.State().String() })
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Exists(ctx, "/")
		done <- err
	}()
	e := testutil.Recv(t, retried, "a retry")
	var nse *NoServerError
	if !errors.Is(e.Err, zk.ErrNoServer) {
		t.Errorf("retried after %v, want connection loss", e.Err)
	}
	for {
		next, err := c.Unreachable()
		if errors.As(err, &nse) {
			break
		}
		testutil.Recv(t, next, "a dial refused")
	}
	if got := serverDials(nse.Servers).String(); got != s.Addr()+" (connection refused)" {
		t.Errorf("Unreachable names %q", got)
	}
	testutil.Must(t, s.Restart())
	if err := testutil.Recv(t, done, "the call"); err != nil {
		t.Fatalf("the call begun while the server was down: %v", err)
	}
	if _, err := c.Unreachable(); err != nil {
		t.Fatalf("Unreachable once connected again = %v", err)
	}
}

// BlockUntilConnected waits until its context ends, as Curator's
// blockUntilConnected, however soon the servers refuse; its error then
// names each server and its dial.
func TestBlockUntilConnectedNamesTheServers(t *testing.T) {
	testutil.CheckLeaks(t)
	c, err := New(refusing, retry.NewNTimes(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for {
		next, err := c.Unreachable()
		if err != nil {
			break
		}
		testutil.Recv(t, next, "a dial refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = c.BlockUntilConnected(ctx)
	var nse *NoServerError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &nse) || !strings.Contains(err.Error(), ": "+refusingNamed+": context canceled") {
		t.Fatalf("BlockUntilConnected = %v, want the context's error naming %s", err, refusingNamed)
	}
}

// A server that takes the connection and never answers the handshake keeps
// a call waiting for a connection until its context ends (ZooKeeper
// 3.8.0's ZOOKEEPER-4537 can leave a lone client's handshake so, in a
// quorum); the call's error then names the server and its dial, not only
// the context's end.
func TestContextEndedWaitNamesTheServers(t *testing.T) {
	testutil.CheckLeaks(t)
	p := zktest.NewProxy(t, server.Addr())
	p.HoldNewSessions() // never released: the proxy's Close ends the connection it holds
	c, err := New(p.Addr(), retry.NewNTimes(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for d := c.zk().Dials(); d.Servers[0].At.IsZero(); d = c.zk().Dials() {
		testutil.Recv(t, d.Next, "the dial")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Exists(ctx, "/")
		done <- err
	}()
	testutil.WaitBlocked(t, "framework.(*Client).awaitConnected", nil)
	cancel()
	err = testutil.Recv(t, done, "Exists")
	want := p.Addr() + " (connected, no session yet): context canceled"
	var nse *NoServerError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &nse) || !strings.HasSuffix(err.Error(), want) {
		t.Fatalf("Exists whose context ended while the handshake went unanswered = %v, want a *NoServerError ending %q", err, want)
	}
}
