// Package cache keeps a local copy of a ZooKeeper subtree current: Apache
// Curator's CuratorCache, and the shapes older services use, NodeCache,
// PathChildrenCache and TreeCache. Go and Java caches of one tree, and Go
// and Java writers of it, mix freely: a cache only reads.
//
// # In short
//
//	c, err := cache.New(client, "/config/billing", cache.WithListener(cache.ListenerFunc(func(e cache.Event) {
//		switch e.Type {
//		case cache.NodeCreated, cache.NodeChanged:
//			apply(e.Node.Path, e.Node.Data)
//		case cache.NodeDeleted:
//			forget(e.Node.Path)
//		case cache.CacheStale:
//			degrade() // the copy may be behind until CacheCurrent
//		}
//	})))
//	if err != nil {
//		return err
//	}
//	defer c.Close()
//	if err := c.AwaitCurrent(ctx); err != nil { // the first load
//		return err
//	}
//	n, ok := c.Get("/config/billing/rate")
//
// # Stale is said, never hidden
//
// A cache never presents what may be out of date as current. It is stale
// until its first load is complete (CacheInitialized), and again from the
// moment its client loses its connection (Stale is true once the client is
// SUSPENDED; the CacheStale event follows, its Err ErrLapsed) until it has
// read its tree again on the next connection, in the same session or a new
// one: the node events of what changed meanwhile come first, then
// CacheCurrent. A read that fails other than by NoNode makes it stale too
// (Err says why), and it reads its tree again a second later. Meanwhile Get,
// Children and Nodes give what it last knew; AwaitCurrent waits for it to be
// current. Curator's CuratorCache has no such signal: its caller is left to
// watch the connection's state.
//
// # Watches
//
// A cache follows its tree from one persistent recursive watch (ZooKeeper
// 3.6's addWatch, as Curator 5's CuratorCache): one event per change of any
// node below it, and, per event, one read of that node (NodeCreated and
// NodeDataChanged; a NodeDeleted needs none). go-zookeeper v1.0.4 cannot
// send addWatch; the module's one door to it (internal/zkconn) does, and
// framework.PersistentWatcher keeps the watch set: ZooKeeper drops a
// connection's persistent watches with it, and the client sets them again
// on every new connection, then tells the cache, which reads its tree again
// (below). Curator's older TreeCache sets two one-shot watches per node
// (data and children) and sets them again after each event, with a read;
// a persistent watch costs the servers one watch per cache instead of two
// per node, and a created node one read instead of three.
//
// A cache of its node alone (SingleNode, NewNodeCache) watches that node
// only (a persistent watch, not recursive). A cache with a depth (MaxDepth,
// NewPathChildrenCache) still watches its whole subtree, as ZooKeeper's
// recursive watch has no depth: the deeper changes reach the client, as
// events it drops. ZooKeeper 3.6 to 3.8 keep one watch per path and
// connection: a one-shot watch that the cache's own client sets on the
// cache's very path replaces the cache's (see
// framework.Client.NewPersistentWatcher); paths below are no concern.
//
// # Reads, and reading the tree again
//
// The cache's goroutine issues reads in the order it learns of changes,
// and applies their results in that order, whatever order they are
// answered in; up to 32 run at once (the first load of a large tree is a
// pipeline, not a round trip per node), and those of one node one after
// another, so that what the cache holds of a node never goes back in time.
// Reading the tree again (at first, and after every new connection) is
// Curator's rebuild: the node itself, every node the cache holds (one that
// answers NoNode is gone), and, for every node with children (its Stat's
// NumChildren), its listing, whose children not yet read are read in turn.
// Since the watch is set again before, every change is either read by that
// or comes as an event: once the tree is quiet the cache equals it. A load
// reads each node once, and lists each node that has children once: a
// tree of mostly leaves costs about one read per node (Curator lists every
// node, leaves included).
//
// # Memory
//
// The copy is a tree of 112-byte nodes (the node's Stat kept whole, 72
// bytes of it), each with its name, its data and an entry in its parent's
// map of children: about 160 bytes a node, its data apart (189 with 32
// bytes of data, where Java's CuratorCache holds 278). WithoutData
// keeps no data, and reads Stats only (exists requests). The first load
// keeps nothing of its own once done. docs/performance.md measures the
// memory per node and the first load of 10,000 nodes beside Java's
// CuratorCache; BenchmarkFirstLoad, 2,000 nodes alone.
//
// # Listeners and Close
//
// Listeners (WithListener before the first load, Listen after) run on a
// goroutine of the cache's own, one event at a time, never under a lock of
// the library's; with no listener, no event is queued. The events also
// reach the client's event hook where an operator wants them: WentStale
// and WentCurrent (framework.Event kinds, Detail a HookEvent). Close stops the
// cache, removes its watch, and never waits for a listener (one under way
// may be its caller); the events not yet told are dropped.
//
// # Curator correspondence
//
//	Curator (org.apache.curator.framework.recipes.cache)  gocurator
//	CuratorCache.build(client, path, options).start()     New(client, path, options...): started
//	CuratorCache.Options.SINGLE_NODE_CACHE                SingleNode
//	CuratorCache.listenable().addListener                 Listen, WithListener (before the first load)
//	CuratorCacheListener.event(type, old, data)           Listener.CacheEvent(Event): Type, Old, Node
//	CuratorCacheListener.initialized()                    Event CacheInitialized; Initialized(), AwaitCurrent
//	get(path), size(), stream()                           Get, Len, Nodes (and Children)
//	close()                                               Close (the copy is cleared, as by default)
//	NodeCache(client, path)                               NewNodeCache; getCurrentData: Get(path)
//	PathChildrenCache(client, path, cacheData)            NewPathChildrenCache (WithoutData); getCurrentData: Nodes
//	TreeCache(client, path), setMaxDepth, setCacheData    NewTreeCache, MaxDepth, WithoutData
//	ChildData                                             Node
//	(connection states, watched by hand)                  Stale, CacheStale, CacheCurrent
//
// Misuse never crashes: a nil client, a bad path or option is an error
// wrapping framework.ErrInvalidArgument; the methods of a nil or zero
// Cache return nothing or an error.
package cache
