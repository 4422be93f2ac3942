package zkconn

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
)

// watchedBy reports whether the server shows session watching path.
func watchedBy(t *testing.T, session int64, path string) bool {
	t.Helper()
	out, err := server.FourLetterWord("wchp")
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Watching(out, session, path)
}

// Assumptions 14 and 15: a persistent recursive watch set through
// go-zookeeper's request path (AddWatch) stands on the server, its events
// for the nodes below it (created, changed, deleted; not the children's
// changes) come through the event callback with their paths, while a
// one-shot watch of go-zookeeper's on one of those nodes still gets its
// event on its channel; RemoveWatches removes the watch (the server shows
// none, and no event comes for a later change), and a second one is an
// error.
func TestPersistentWatchThroughTheRequestPath(t *testing.T) {
	testutil.CheckLeaks(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	events := make(chan zk.Event, 64)
	c, err := Dial(Config{Servers: []string{server.Addr()}, SessionTimeout: 2 * time.Second,
		OnEvent: func(_ *Conn, ev zk.Event) {
			if ev.Type != zk.EventSession {
				events <- ev
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	raw := testutil.Connect(t, server.Addr())
	if _, err := raw.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(base, true); err != nil {
		broken(t, 14, "go-zookeeper's (*Conn).request sends any opcode with a body of jute's types", "conn.go, request and sendData; structs.go, encodePacket",
			"addWatch:", err)
	}
	if !watchedBy(t, c.SessionID(), base) {
		broken(t, 14, "go-zookeeper's (*Conn).request sends any opcode with a body of jute's types", "conn.go, request and sendData; structs.go, encodePacket",
			"the server shows no watch of the session on", base)
	}
	next := func(want zk.EventType, path string) {
		t.Helper()
		ev := testutil.Recv(t, events, fmt.Sprintf("the event callback to hear %v of %s", want, path))
		if ev.Type != want || ev.Path != path {
			broken(t, 15, "a watch event goes to the event callback whether or not go-zookeeper knows a watcher for it", "conn.go, recvLoop (Xid -1) and sendEvent",
				"heard", ev, "want", want, path)
		}
	}
	child := base + "/a"
	if _, err := raw.Create(child, []byte("1"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeCreated, child)
	_, _, oneShot, err := c.GetW(child)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create(child+"/b", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeCreated, child+"/b") // no NodeChildrenChanged of a, for a recursive watch
	if _, err := raw.Set(child, []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDataChanged, child)
	if ev := testutil.Recv(t, oneShot, "the one-shot watch on "+child); ev.Type != zk.EventNodeDataChanged {
		broken(t, 15, "a one-shot watch below a persistent one still gets its event", "conn.go, notifyWatches", ev)
	}
	for _, p := range []string{child + "/b", child} {
		if err := raw.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
		next(zk.EventNodeDeleted, p)
	}

	if err := c.RemoveWatches(base); err != nil {
		broken(t, 14, "go-zookeeper's (*Conn).request sends any opcode with a body of jute's types", "conn.go, request", "removeWatches:", err)
	}
	if watchedBy(t, c.SessionID(), base) {
		broken(t, 14, "go-zookeeper's (*Conn).request sends any opcode with a body of jute's types", "conn.go, request",
			"the server still shows the watch after removeWatches")
	}
	if err := c.RemoveWatches(base); err == nil {
		t.Fatal("a second removeWatches of the path succeeded; want the server's NoWatcher")
	}
	// A change after the removal sends no event: a node made now, then one
	// made under a path the test watches once more, shows which came.
	if _, err := raw.Create(child, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if err := c.AddWatch(child, false); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Set(child, []byte("3"), -1); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeDataChanged, child) // not NodeCreated of child: the removed watch was silent
	if _, err := raw.Create(child+"/c", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	next(zk.EventNodeChildrenChanged, child) // a watch that is not recursive hears its children change
}
