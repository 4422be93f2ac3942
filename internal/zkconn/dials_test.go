package zkconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// untilDials waits on d.Next, at most testutil.Timeout, until cond accepts
// c's dials, and returns them.
func untilDials(t *testing.T, c *Conn, what string, cond func(Dials) bool) Dials {
	t.Helper()
	timeout := time.After(testutil.Timeout)
	for {
		d := c.Dials()
		if cond(d) {
			return d
		}
		select {
		case <-d.Next:
		case <-timeout:
			t.Fatalf("%s: not within %v; dials %+v", what, testutil.Timeout, d.Servers)
		}
	}
}

// The dial log names each server with what its last dial gave: two ports
// nobody listens on refuse, each says "connection refused", and then every
// server has refused since the start; a server that has not been dialled
// has no dial.
func TestDialsRecordRefusals(t *testing.T) {
	testutil.CheckLeaks(t)
	servers := []string{"127.0.0.1:1", "127.0.0.1:2"}
	c, err := Dial(Config{Servers: servers, SessionTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := untilDials(t, c, "both servers refusing", func(d Dials) bool { return d.RefusedSince(0) })
	for i, s := range d.Servers {
		if s.Server != servers[i] || !s.Refused() || s.At.IsZero() || Reason(s.Err) != "connection refused" {
			t.Errorf("server %d: %+v (reason %q), want %s refused: connection refused", i, s, Reason(s.Err), servers[i])
		}
	}
	if d.RefusedSince(d.Count) {
		t.Error("every server refused since the last dial: no dial has ended since")
	}
}

// A server that takes the connection and closes it before a session (here
// a proxy whose server is down) has answered: it has not refused, and its
// dial says why no session came (assumption 9: StateConnected, then
// StateDisconnected, naming the server). A server that gives a session
// makes that dial the Connected one; when its connection drops, Since
// moves.
func TestDialsFollowTheHandshake(t *testing.T) {
	testutil.CheckLeaks(t)
	closing := zktest.NewProxy(t, "127.0.0.1:1")
	c, err := Dial(Config{Servers: []string{closing.Addr()}, SessionTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := untilDials(t, c, "the handshake failing", func(d Dials) bool { return d.Servers[0].Err != nil })
	if s := d.Servers[0]; !errors.Is(s.Err, ErrNoSession) || s.Refused() || d.RefusedSince(0) {
		broken(t, 9, "a handshake that fails ends with StateDisconnected after StateConnected, naming the server",
			"conn.go, loop and authenticate", fmt.Sprintf("%+v refused %v", s, s.Refused()))
	}

	proxy := zktest.NewProxy(t, server.Addr())
	sessions := make(chan struct{}, 16)
	live, err := Dial(Config{Servers: []string{proxy.Addr()}, SessionTimeout: time.Second,
		OnEvent: func(_ *Conn, ev zk.Event) {
			if ev.State == zk.StateHasSession {
				sessions <- struct{}{}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	testutil.Recv(t, sessions, "a session")
	d = live.Dials()
	if s := d.Servers[0]; s.Err != nil || d.Connected == 0 || d.Connected != d.Count {
		broken(t, 9, "StateHasSession names the server dialled", "conn.go, authenticate and setState", fmt.Sprintf("%+v %+v", s, d))
	}
	before := d.Since
	proxy.DropConnections()
	untilDials(t, live, "the dropped connection", func(d Dials) bool { return d.Since.After(before) })
	testutil.Recv(t, sessions, "the session again")
}

// A dial that times out (here a TLS handshake with a server behind a
// proxy that forwards nothing) has not been refused: the server may only
// be slow, and the wait for it goes on.
func TestDialsTimeoutIsNoRefusal(t *testing.T) {
	testutil.CheckLeaks(t)
	hole := zktest.NewProxy(t, server.Addr())
	hole.BlackHole()
	tlsDial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, addr, &tls.Config{InsecureSkipVerify: true})
	}
	c, err := Dial(Config{Servers: []string{hole.Addr()}, SessionTimeout: time.Second, Dial: tlsDial})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := untilDials(t, c, "the handshake timing out", func(d Dials) bool { return d.Servers[0].Err != nil })
	if s := d.Servers[0]; s.Refused() || d.RefusedSince(0) || !timedOut(s.Err) {
		t.Errorf("%+v (reason %q): a timeout taken for a refusal", s, Reason(s.Err))
	}
}

// A server that takes the connection and never answers the handshake (here
// proxies that hold every new session) is given the session timeout over
// the number of servers, as ZooKeeper's Java client gives it, not
// go-zookeeper's 20/3 of the session timeout: the client closes the
// connection, its dial says so, and it dials the next server (assumption
// 9: the handshake's end, with StateDisconnected, naming the server).
func TestDialsBoundTheHandshake(t *testing.T) {
	testutil.CheckLeaks(t)
	var servers []string
	for range 2 {
		p := zktest.NewProxy(t, server.Addr())
		p.HoldNewSessions() // never released: the proxy's Close ends the connections it holds
		servers = append(servers, p.Addr())
	}
	const timeout = 2 * time.Second // go-zookeeper's own bound: 13.3 s
	c, err := Dial(Config{Servers: servers, SessionTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := untilDials(t, c, "both handshakes given up", func(d Dials) bool {
		return d.Servers[0].Err != nil && d.Servers[1].Err != nil
	})
	for _, s := range d.Servers {
		if !errors.Is(s.Err, ErrNoAnswer) || s.Refused() || Reason(s.Err) != "no answer to the handshake within 1s" {
			t.Errorf("%s: %q, want the handshake given up at its bound: no answer to the handshake within 1s", s.Server, Reason(s.Err))
		}
	}
}
