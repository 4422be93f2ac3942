package cache

import (
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Node is a node as a cache holds it: its path, its data and its Stat as of
// its last change. Data is the cache's own copy, shared with every caller:
// do not modify it.
type Node struct {
	// Path is the node's path, as the client's caller sees it (without the
	// client's namespace).
	Path string
	// Data is the node's data; nil when the cache keeps none (WithoutData)
	// or the node has none.
	Data []byte
	// Stat is the node's Stat as of its last change of data (or its
	// creation): the count and version of its children are those of then,
	// not kept current (Children lists them as the cache knows them).
	Stat zk.Stat
}

// EventType says what an Event tells.
type EventType int

// The events a cache tells its listeners. Node events come in the order
// the cache learns of the changes; CacheInitialized comes once, after the
// NodeCreated of every node of the first load; a CacheStale is followed,
// once the cache has read its tree again, by the node events of what
// changed meanwhile, then CacheCurrent.
const (
	// NodeCreated: Node appeared (or the cache first read it).
	NodeCreated EventType = iota + 1
	// NodeChanged: Node's data changed (or the node was deleted and made
	// again); Old is what the cache held before.
	NodeChanged
	// NodeDeleted: Node, as the cache last held it, is gone.
	NodeDeleted
	// CacheInitialized: the first load is complete: every node the tree
	// had was told. The cache is current from now on, until a CacheStale.
	CacheInitialized
	// CacheStale: the cache may miss changes from now on, and holds what it
	// last knew: its watch lapsed (the connection dropped, Err is
	// ErrLapsed), or a read failed (Err says why), or its client closed (Err
	// wraps framework.ErrClosed: the last event).
	CacheStale
	// CacheCurrent: after a CacheStale, the cache has read its tree again
	// (the node events before this one told what changed meanwhile) and
	// follows its changes.
	CacheCurrent
)

var eventTypeNames = [...]string{
	NodeCreated:      "node-created",
	NodeChanged:      "node-changed",
	NodeDeleted:      "node-deleted",
	CacheInitialized: "cache-initialized",
	CacheStale:       "cache-stale",
	CacheCurrent:     "cache-current",
}

// String returns the type's name: "node-created", ....
func (t EventType) String() string {
	if t > 0 && int(t) < len(eventTypeNames) {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one thing a cache tells its listeners.
type Event struct {
	// Type says what happened.
	Type EventType
	// Node is the node: as it is now (NodeCreated, NodeChanged), or as the
	// cache last held it (NodeDeleted). Zero for the cache's own events.
	Node Node
	// Old is the node as the cache held it before a NodeChanged.
	Old Node
	// Err says why the cache went stale (CacheStale).
	Err error
}

// String returns the event's type and path, "node-created /a/b".
func (e Event) String() string {
	switch {
	case e.Node.Path != "":
		return e.Type.String() + " " + e.Node.Path
	case e.Err != nil:
		return e.Type.String() + ": " + e.Err.Error()
	}
	return e.Type.String()
}

// Listener hears a cache's events (see Cache.Listen and WithListener).
type Listener interface {
	// CacheEvent is called with each event, in order, on a goroutine of
	// the cache's own, one at a time.
	CacheEvent(Event)
}

// ListenerFunc is a func as a Listener.
type ListenerFunc func(Event)

// CacheEvent calls f(e).
func (f ListenerFunc) CacheEvent(e Event) { f(e) }
