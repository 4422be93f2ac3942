package zktest_test

import (
	"errors"
	"io"
	"log"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
)

// A test as a user of the package writes it: a real server, a client that
// reaches it through a fault proxy, and a fault. Here the fault is a reply
// lost after the server applied the request: the client sees a connection
// loss, reconnects in the same session, and finds that its create did
// happen, which is why a lock recipe must look before it creates again.
func TestUsersOwnTestWithAServerAndAFault(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.Addr())
	conn, events, err := zk.Connect([]string{proxy.Addr()}, 5*time.Second,
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		stopped := time.After(10 * time.Second) // every wait has a bound
		for open := true; open; {
			select {
			case _, open = <-events: // closed once the client has stopped
			case <-stopped:
				t.Error("the client did not stop within 10s")
				return
			}
		}
	})

	lost := proxy.LoseNextReply(zktest.OpCreate)
	_, err = conn.Create("/job", []byte("1"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("create whose reply was lost: %v, want a connection loss", err)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("no create reply was lost")
	}

	// The client reconnects by itself; its session, and so the node, lives.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, stat, err := conn.Exists("/job")
		if err == nil {
			if !ok || stat.EphemeralOwner != conn.SessionID() {
				t.Fatalf("after the lost reply: exists %v, owner %x, session %x", ok, stat.EphemeralOwner, conn.SessionID())
			}
			return
		}
		if !errors.Is(err, zk.ErrConnectionClosed) && !errors.Is(err, zk.ErrNoServer) || time.Now().After(deadline) {
			t.Fatalf("exists after the lost reply: %v", err)
		}
		select {
		case <-events: // reconnecting: wait for the next session event
		case <-time.After(time.Until(deadline)):
			t.Fatalf("exists after the lost reply: %v, and no session within 30s", err)
		}
	}
}
