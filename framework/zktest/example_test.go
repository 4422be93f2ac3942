package zktest_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
)

// In a test, use zktest.NewServer(t), which fails the test on error and
// closes the server at cleanup. Outside one, StartServer and Close.
func Example() {
	srv, err := zktest.StartServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	conn, events, err := zk.Connect([]string{srv.ConnectString()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		conn.Close()
		stopped := time.After(10 * time.Second) // every wait has a bound
		for open := true; open; {
			select {
			case _, open = <-events: // closed once the client has stopped
			case <-stopped:
				fmt.Println("the client did not stop")
				return
			}
		}
	}()

	if _, err := conn.Create("/hello", []byte("world"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		fmt.Println(err)
		return
	}
	data, _, err := conn.Get("/hello")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(data))
	// Output: world
}

// A lost reply: the server applies the create, the client sees a connection
// loss.
func ExampleProxy_LoseNextReply() {
	srv, err := zktest.StartServer()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	proxy, err := zktest.StartProxy(srv.Addr())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer proxy.Close()

	conn, events, err := zk.Connect([]string{proxy.Addr()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		conn.Close()
		stopped := time.After(10 * time.Second) // every wait has a bound
		for open := true; open; {
			select {
			case _, open = <-events: // closed once the client has stopped
			case <-stopped:
				fmt.Println("the client did not stop")
				return
			}
		}
	}()

	// A request made before the session began could be failed by the
	// client without ever reaching the proxy (a first connection that did
	// not make it): wait for the session first.
	session := time.After(30 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-session:
			fmt.Println("no session")
			return
		}
	}
	lost := proxy.LoseNextReply(zktest.OpCreate)
	_, err = conn.Create("/a", nil, 0, zk.WorldACL(zk.PermAll))
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		fmt.Println("no reply was lost")
		return
	}
	fmt.Println("create failed with connection loss:", errors.Is(err, zk.ErrConnectionClosed))

	// The client reconnects with the same session; the node is there.
	reconnected := time.After(30 * time.Second)
	for {
		ok, _, err := conn.Exists("/a")
		if err == nil {
			fmt.Println("node exists:", ok)
			break
		}
		select {
		case <-events: // reconnecting: wait for the next session event
		case <-reconnected:
			fmt.Println("no session again:", err)
			return
		}
	}
	// Output:
	// create failed with connection loss: true
	// node exists: true
}

func ExampleEnsemble() {
	ens, err := zktest.StartEnsemble(3)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ens.Close()
	leader, err := ens.Leader()
	if err != nil {
		fmt.Println(err)
		return
	}
	// Crash the leader; the others elect a new one.
	if err := ens.Members()[leader].Kill(); err != nil {
		fmt.Println(err)
		return
	}
	next, err := ens.Leader()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("a new leader:", next != leader)
	// Output: a new leader: true
}
