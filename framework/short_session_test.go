package framework

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// A session timeout granted shorter than asked (the servers cap it at
// their maxSessionTimeout, 30 s here) is a WARN naming both, once per
// session: not again when the connection comes back to the same session.
// One granted as asked is not.
func TestShortSessionTimeoutWarns(t *testing.T) {
	testutil.CheckLeaks(t)
	const msg = "the servers granted a shorter session timeout than asked for (their maxSessionTimeout caps it): the session expires, and LOST comes, sooner"
	proxy := zktest.NewProxy(t, server.Addr())
	core, logs := observer.New(zapcore.WarnLevel)
	c := newClient(t, proxy.Addr(), WithSessionTimeout(40*time.Second), WithLogger(zap.New(core)))
	testutil.Until(t, "the WARN, written on the client's goroutine", func() (bool, string) {
		return logs.FilterMessage(msg).Len() > 0, ""
	})
	got := logs.FilterMessage(msg).All()
	if len(got) != 1 || got[0].ContextMap()["asked"] != 40*time.Second || got[0].ContextMap()["granted"] != 30*time.Second {
		t.Fatalf("WARNs %v, want one naming 40s asked and 30s granted", logs.All())
	}
	sid := c.SessionID()
	reconnected := make(chan struct{}, 1)
	defer c.AddListener(state.ListenerFunc(func(s state.ConnectionState) {
		if s == state.Reconnected {
			reconnected <- struct{}{}
		}
	}))()
	proxy.DropConnections()
	testutil.Recv(t, reconnected, "RECONNECTED")
	if c.SessionID() != sid {
		t.Fatalf("a new session after a blip: %x, was %x", c.SessionID(), sid)
	}
	testutil.Must(t, c.Close()) // every line logged before it is written by then
	if n := logs.FilterMessage(msg).Len(); n != 1 {
		t.Errorf("%d WARNs after a reconnect to the same session, want the one", n)
	}

	core, logs = observer.New(zapcore.WarnLevel)
	testutil.Must(t, newClient(t, "", WithSessionTimeout(30*time.Second), WithLogger(zap.New(core))).Close())
	if n := logs.FilterMessage(msg).Len(); n != 0 {
		t.Errorf("%d WARNs for a timeout granted as asked", n)
	}
}

// SessionTimeout is what the servers granted, and 0 until they have granted
// a session: not what was asked for, which they clamp into their range
// (200 ms to 30 s here). The range's ends are accepted.
func TestSessionTimeoutIsTheGrant(t *testing.T) {
	testutil.CheckLeaks(t)
	refused, err := New("127.0.0.1:1", retry.NewNTimes(0, 0), WithSessionTimeout(40*time.Second))
	testutil.Must(t, err)
	defer refused.Close()
	if got := refused.SessionTimeout(); got != 0 {
		t.Errorf("SessionTimeout %v before any session was granted, want 0", got)
	}
	for _, tc := range []struct{ ask, granted time.Duration }{
		{MinSessionTimeout, 200 * time.Millisecond}, // raised to the servers' minSessionTimeout
		{4 * time.Second, 4 * time.Second},
		{40 * time.Second, 30 * time.Second}, // capped at their maxSessionTimeout
		{MaxSessionTimeout, 30 * time.Second},
	} {
		c := newClient(t, "", WithSessionTimeout(tc.ask))
		if got := c.SessionTimeout(); got != tc.granted {
			t.Errorf("asked %v: SessionTimeout %v, want the %v granted", tc.ask, got, tc.granted)
		}
		testutil.Must(t, c.Close())
	}
}
