package zkconn

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/internal/zkwire"
)

// Once go-zookeeper has moved to a new session (the servers expired the
// last), the old session's last contact and timeout are still known: its
// expiry bound is its own, not one made of the new session's handshake.
func TestSessionContactOutlivesANewSession(t *testing.T) {
	testutil.CheckLeaks(t)
	proxy := zktest.NewProxy(t, server.Addr())
	c, sessions := dialed(t, &wireCheck{}, []string{proxy.Addr()}, 2*time.Second)
	first := c.SessionID()
	if last, timeout := c.SessionContact(first); last.IsZero() || timeout <= 0 {
		t.Fatalf("the session's contact: %v, %v; want its handshake's", last, timeout)
	}
	expired := time.Now()
	testutil.Must(t, proxy.ExpireSession(first))
	next := testutil.Recv(t, sessions, "a new session")
	last, timeout := c.SessionContact(first)
	if last.IsZero() || !last.Before(expired) || timeout != 2*time.Second {
		t.Fatalf("the old session's contact: %v (its expiry began at %v), timeout %v: want the old session's own", last, expired, timeout)
	}
	if nl, _ := c.SessionContact(next); !nl.After(expired) {
		t.Fatalf("the new session's contact %v, want its handshake, after %v", nl, expired)
	}
	if l, d := c.SessionContact(next + 1); !l.IsZero() || d != 0 {
		t.Fatalf("an unknown session's contact: %v, %v", l, d)
	}
}

// A server answers an auth request as it comes, without renewing the
// session (ZooKeeperServer.processPacket handles it outside the request
// pipeline, where sessions are touched): its reply is no contact.
func TestAuthRepliesAreNoContact(t *testing.T) {
	testutil.CheckLeaks(t)
	c, _ := dialed(t, &wireCheck{}, []string{server.Addr()}, 5*time.Second)
	// Right after a ping's reply, the next ping is a third of the timeout
	// away: nothing else renews the session while the auth goes.
	was := c.LastContact()
	testutil.Until(t, "a ping answered", func() (bool, string) { return c.LastContact().After(was), "" })
	sent := time.Now()
	testutil.Must(t, c.AddAuth("digest", []byte("user:secret")))
	if last := c.LastContact(); !last.Before(sent) {
		t.Fatalf("LastContact %v: the auth request's reply (sent at %v) counted as contact", last, sent)
	}
}

// A server stream the tap cannot follow as ZooKeeper frames is told of
// (OnUntracked), not left to freeze LastContact without a word. A relay
// passes the handshake, then a frame header no ZooKeeper frame has.
func TestUntrackedStreamIsToldOf(t *testing.T) {
	testutil.CheckLeaks(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	testutil.Must(t, err)
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		relayOnce(t, ln, server.Addr())
	}()
	told := make(chan string, 1)
	c, err := Dial(Config{Servers: []string{ln.Addr().String()}, SessionTimeout: 2 * time.Second,
		OnUntracked: func(why string) {
			select {
			case told <- why:
			default:
			}
		}})
	testutil.Must(t, err)
	why := testutil.Recv(t, told, "the tap's word that it lost track")
	ln.Close() // go-zookeeper's next dial is refused at once
	c.Close()
	testutil.Recv(t, relayed, "the relay's end")
	if !strings.Contains(why, "no ZooKeeper frame") {
		t.Fatalf("told %q", why)
	}
}

// relayOnce relays one connection from ln to server: the client's bytes as
// they come, and the server's connect response, then four bytes of 0xff (a
// frame header of length -1) and nothing more.
func relayOnce(t *testing.T, ln net.Listener, server string) {
	client, err := ln.Accept()
	if err != nil {
		t.Errorf("relay: %v", err)
		return
	}
	defer client.Close()
	up, err := net.Dial("tcp", server)
	if err != nil {
		t.Errorf("relay: %v", err)
		return
	}
	defer up.Close()
	go io.Copy(up, client) //nolint:errcheck // ends when either side closes
	resp, err := zkwire.ReadFrame(up)
	if err != nil {
		t.Errorf("relay: the connect response: %v", err)
		return
	}
	if _, err := client.Write(append(resp, 0xff, 0xff, 0xff, 0xff)); err != nil {
		return
	}
	io.Copy(io.Discard, client) //nolint:errcheck // until the client closes
}
