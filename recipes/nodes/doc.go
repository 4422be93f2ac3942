// Package nodes holds Apache Curator's persistent node recipes for Go: a
// node that the library keeps in place across connection loss and session
// expiry (PersistentNode: ephemeral, sequential, protected or TTL), a TTL
// node kept alive while the process runs (PersistentTtlNode), and a
// process's membership of a group, with its view of the group
// (GroupMember). They make the nodes Curator makes, with the same names,
// data and modes, so that a Java client (a CuratorCache, a GroupMember)
// sees a Go process's node as it sees a Java one's.
//
// # In short
//
//	node, err := nodes.NewPersistentNode(client, framework.Ephemeral, "/services/billing/"+host, addr)
//	if err != nil {
//		return err
//	}
//	if err := node.Start(); err != nil {
//		return err
//	}
//	defer node.Close() // deletes the node
//	if err := node.WaitForInitialCreate(ctx); err != nil {
//		return err
//	}
//
// The node is made on a goroutine of the node's; it is watched, and made
// again with its data whenever it is found gone (deleted, or expired with
// its session), and made sure of at every reconnect. A sequential or
// protected node keeps the name it was first given. Listeners
// (AddListener) hear each create of the node, on the node's goroutine;
// the client's event hook hears a NodeCreated event.
//
// A GroupMember is a PersistentNode of mode Ephemeral at
// membershipPath/id, with the member's data, and a cache (the cache
// package's PathChildrenCache) of membershipPath's children: CurrentMembers
// is that cache's copy of the group, this member always in it with its own
// data, and reads nothing. The client's event hook hears MemberJoined and
// MemberLeft as the others come and go.
//
// Every call that waits takes a context. Misuse is an error, never a panic
// or a hang: a nil or closed client, a bad path, a nil context, a zero
// value, a TTL that cannot be; Start twice is recipes.ErrInvalidState,
// Close is idempotent and never waits for a listener.
//
// # Curator correspondence
//
//	Curator (org.apache.curator.framework.recipes.nodes)  gocurator
//	PersistentNode(client, mode, useProtection,           NewPersistentNode(client, mode, path, data,
//	  basePath, initData[, ttl, useParentCreation])         WithProtection(), WithTTL(ttl), WithoutParentCreation())
//	CreateMode.PERSISTENT_WITH_TTL, ..._SEQUENTIAL_...    framework.Persistent, PersistentSequential with WithTTL
//	PersistentEphemeralNode (deprecated)                  NewPersistentNode with an ephemeral mode
//	start(), close()                                      Start(), Close()
//	waitForInitialCreate(timeout, unit)                   WaitForInitialCreate(ctx) (the deadline is the timeout)
//	getActualPath(), getData(), setData(bytes)            ActualPath(), Data(), SetData(ctx, data)
//	getListenable().addListener(PersistentNodeListener)   AddListener(func(path string)) (remove func())
//	PersistentTtlNode(client, path, ttlMs, initData)      NewPersistentTtlNode(client, path, ttl, data)
//	PersistentTtlNode(..., childNodeName,                 WithChildNodeName(name), WithTouchScheduleFactor(n),
//	  touchScheduleFactor, useParentCreation)               WithoutParentCreation()
//	DEFAULT_CHILD_NODE_NAME, DEFAULT_TOUCH_SCHEDULE_FACTOR DefaultChildNodeName, DefaultTouchScheduleFactor
//	GroupMember(client, membershipPath, thisId            NewGroupMember(client, path, id, payload)
//	  [, payload])                                          (a nil payload: getLocalAddress()'s, the local address)
//	start(), close()                                      Start(), Close()
//	setThisData(bytes)                                    SetThisData(ctx, data) (waits for the node's create)
//	getCurrentMembers(), idFromPath(path)                 CurrentMembers(), IDFromPath(path)
//	(none)                                                AwaitCurrent(ctx), ThisData(), MemberJoined, MemberLeft
//
// Differences: a context for every wait (waitForInitialCreate's false is
// ctx's error, and a node the servers refuse to make, for want of
// authorisation, a parent or TTLs, is said at once); nil data is empty data
// (Curator refuses null), but for a GroupMember's payload, where nil is
// Curator's default; SetData writes at once and returns the write's
// error (Curator's writes in the background); a PersistentTtlNode's node is
// a TTL node, as in Curator since 5.9 (5.4 makes it a container: either
// way the servers delete it once it is empty and no longer touched). A
// GroupMember refuses an id that is not a node's name (Curator's makes a
// node further down for an id with a '/'); its SetThisData waits for its
// node's first create (Curator's throws until then); CurrentMembers gives
// this member's own data, never the cache's older copy of it, and nil once
// closed.
package nodes
