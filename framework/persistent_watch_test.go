package framework

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
)

// watchLog is a persistent watcher's function that keeps what it hears for
// the test to wait on.
type watchLog chan WatchEvent

func (l watchLog) fn(ev WatchEvent) { l <- ev }

// The watchers' events that are no node's.
var (
	reset  = WatchEvent{Reset: true}
	lapsed = WatchEvent{Lapsed: true}
)

// next waits for the next event and checks it: a node event of typ at
// path.
func (l watchLog) next(t *testing.T, typ zk.EventType, path, what string) {
	t.Helper()
	l.want(t, WatchEvent{Type: typ, Path: path}, what)
}

// want waits for the next event, and fails unless it is want.
func (l watchLog) want(t *testing.T, want WatchEvent, what string) {
	t.Helper()
	if ev := testutil.Recv(t, (<-chan WatchEvent)(l), what); ev != want {
		t.Fatalf("%s: heard %+v; want %+v", what, ev, want)
	}
}

// watchedOnServer reports whether the server shows session watching path.
func watchedOnServer(t *testing.T, session int64, path string) bool {
	t.Helper()
	out, err := server.FourLetterWord("wchp")
	if err != nil {
		t.Fatal(err)
	}
	return testutil.Watching(out, session, path)
}

// A recursive persistent watcher hears every node below its path created,
// changed and deleted, with paths as the caller sees them (the namespace
// stripped), and a watcher of the same path that is not recursive hears its
// children change (told by the client, as the servers keep the path's one
// watch recursive); the watch is set again, with a reset, after the
// connection drops and after a one-shot watch of the client's on the same
// path replaced it on the server; closing one watcher leaves the other's
// events, closing the last removes the watch from the server; the client's
// Close tells a last event.
func TestPersistentWatcher(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	testutil.CleanupTree(t, server.Addr(), "/pw-ns")
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr(), WithNamespace("pw-ns"))
	base := "/" + strings.ReplaceAll(t.Name(), "/", "_")
	rec, plain := make(watchLog, 64), make(watchLog, 64)
	wr, err := c.NewPersistentWatcher(base, true, rec.fn)
	if err != nil {
		t.Fatal(err)
	}
	rec.want(t, reset, "the recursive watch set")
	if !watchedOnServer(t, c.SessionID(), "/pw-ns"+base) {
		t.Fatal("the server shows no watch on the watched path")
	}
	wp, err := c.NewPersistentWatcher(base, false, plain.fn)
	if err != nil {
		t.Fatal(err)
	}
	plain.want(t, reset, "the second watcher of the path: its watch stands")

	if _, err := c.Create(ctx, base+"/a/b", []byte("1"), CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}
	rec.next(t, zk.EventNodeCreated, base, "the parents made")
	plain.next(t, zk.EventNodeCreated, base, "its node made")
	rec.next(t, zk.EventNodeCreated, base+"/a", "the parents made")
	plain.next(t, zk.EventNodeChildrenChanged, base, "a child made")
	rec.next(t, zk.EventNodeCreated, base+"/a/b", "the node made")
	if _, err := c.SetData(ctx, base+"/a/b", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	rec.next(t, zk.EventNodeDataChanged, base+"/a/b", "the node changed")

	proxy.DropConnections()
	for _, l := range []watchLog{rec, plain} {
		l.want(t, lapsed, "the connection dropped")
		l.want(t, reset, "the watch set again after the connection dropped")
	}
	if _, err := c.SetData(ctx, base+"/a", []byte("3"), -1); err != nil {
		t.Fatal(err)
	}
	rec.next(t, zk.EventNodeDataChanged, base+"/a", "a change after the reconnection")

	// A one-shot watch on the very path replaces the persistent one on the
	// server: the client sets it again, and says so.
	_, _, once, err := c.GetDataW(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []watchLog{rec, plain} {
		l.want(t, lapsed, "a one-shot watch on its path")
		l.want(t, reset, "the watch set again after a one-shot watch on its path")
	}
	if _, err := c.SetData(ctx, base, []byte("4"), -1); err != nil {
		t.Fatal(err)
	}
	rec.next(t, zk.EventNodeDataChanged, base, "its node changed")
	plain.next(t, zk.EventNodeDataChanged, base, "its node changed")
	testutil.Recv(t, once, "the one-shot watch's event")
	if err := c.Delete(ctx, base+"/a/b"); err != nil {
		t.Fatal(err)
	}
	rec.next(t, zk.EventNodeDeleted, base+"/a/b", "a node below deleted, after the one-shot watch fired")

	testutil.Must(t, wp.Close())
	if err := c.Delete(ctx, base+"/a"); err != nil {
		t.Fatal(err)
	}
	rec.next(t, zk.EventNodeDeleted, base+"/a", "a node deleted, the other watcher closed")
	testutil.Must(t, wr.Close())
	testutil.Must(t, wr.Close()) // idempotent
	testutil.Until(t, "the watch removed from the server once its last watcher closed", func() (bool, string) {
		return !watchedOnServer(t, c.SessionID(), "/pw-ns"+base), "still watched"
	})
	// A change that a watcher of the path opened now hears: the closed
	// ones must not.
	mark := make(watchLog, 8)
	wm, err := c.NewPersistentWatcher(base, true, mark.fn)
	if err != nil {
		t.Fatal(err)
	}
	mark.want(t, reset, "a marker watcher's watch set")
	if _, err := c.Create(ctx, base+"/z", nil); err != nil {
		t.Fatal(err)
	}
	mark.next(t, zk.EventNodeCreated, base+"/z", "a node made after the others closed")
	testutil.Must(t, wm.Close())
	if len(rec) != 0 || len(plain) != 0 {
		t.Fatalf("events after Close: %d and %d", len(rec), len(plain))
	}

	last := make(watchLog, 4)
	if _, err := c.NewPersistentWatcher(base, true, last.fn); err != nil {
		t.Fatal(err)
	}
	last.want(t, reset, "a new watcher's watch set")
	testutil.Must(t, c.Close())
	ev := testutil.Recv(t, (<-chan WatchEvent)(last), "the last event at the client's Close")
	if ev == lapsed { // the connection closed first
		ev = testutil.Recv(t, (<-chan WatchEvent)(last), "the last event at the client's Close")
	}
	if !errors.Is(ev.Err, ErrClosed) || len(last) != 0 {
		t.Fatalf("the last event: %+v (%d more); want an error wrapping ErrClosed, and no more", ev, len(last))
	}
}

// Misuse is an error: a nil or zero client, a closed one, a bad path, a nil
// function; Close of a nil or zero watcher.
func TestPersistentWatcherMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	fn := func(WatchEvent) {}
	var nilClient *Client
	if _, err := nilClient.NewPersistentWatcher("/a", true, fn); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil client: %v", err)
	}
	if _, err := (&Client{}).NewPersistentWatcher("/a", true, fn); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("zero client: %v", err)
	}
	c := newClient(t, "")
	if _, err := c.NewPersistentWatcher("a/b", true, fn); !errors.Is(err, zk.ErrInvalidPath) || !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("bad path: %v", err)
	}
	if _, err := c.NewPersistentWatcher("/a", true, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("nil function: %v", err)
	}
	var w *PersistentWatcher
	if err := w.Close(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Close of a nil watcher: %v", err)
	}
	if err := (&PersistentWatcher{}).Close(); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Close of a zero watcher: %v", err)
	}
	if w.Path() != "" {
		t.Fatal("Path of a nil watcher")
	}
	testutil.Must(t, c.Close())
	if _, err := c.NewPersistentWatcher("/a", true, fn); !errors.Is(err, ErrClosed) {
		t.Fatalf("closed client: %v", err)
	}
}

// A one-shot watch on a path whose persistent watcher then closes still
// fires: the persistent watch is left to go with its connection, as
// removeWatches (of any kind, the only one that reaches a persistent watch
// on ZooKeeper 3.8) would remove the one-shot watch with it, and its
// channel would never fire (a lock's waiters on a path an application also
// watched would wait on).
func TestClosingAPersistentWatcherKeepsOneShotWatches(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := "/" + t.Name()
	testutil.CleanupTree(t, server.Addr(), base)
	c := newClient(t, server.Addr())
	if _, err := c.Create(ctx, base, nil); err != nil {
		t.Fatal(err)
	}
	log := make(watchLog, 8)
	w, err := c.NewPersistentWatcher(base, false, log.fn)
	if err != nil {
		t.Fatal(err)
	}
	log.want(t, reset, "the watch set")
	_, _, once, err := c.ChildrenW(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	log.want(t, lapsed, "a one-shot watch on its path")
	log.want(t, reset, "the watch set again after a one-shot watch on its path")
	testutil.Must(t, w.Close())
	testutil.Until(t, "the registry done with the path", func() (bool, string) {
		c.watches.mu.Lock()
		defer c.watches.mu.Unlock()
		return c.watches.paths[base] == nil, "still there"
	})
	if _, err := c.Create(ctx, base+"/a", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Recv(t, once, "the one-shot watch's event, its path's persistent watcher closed")
}
