// Package framework is gocurator's ZooKeeper client, in the manner of
// Apache Curator's CuratorFramework. It tracks the session and Curator's
// connection states, runs every operation in Curator's retry loop, applies
// the namespace, creates parents (containers by default) and protected
// nodes, and finishes guaranteed deletes in the background. The lock
// recipes (package recipes) are built on it.
//
// # Sessions and connection states
//
// A Client posts Curator's states (package state): CONNECTED, SUSPENDED on
// a lost connection, RECONNECTED, and LOST when the server says the session
// expired, when the client finds itself in a new session, or when, still
// SUSPENDED, it comes near the moment the servers could first expire the
// session: a local timer (a partitioned client hears nothing from the
// server), which fires before the negotiated session timeout has passed
// since the last request the servers answered — so that even under
// state.SessionErrorPolicy no holder believes it holds after the servers
// could have given its lock away. On that LOST the client gives the
// session up, as Curator does: it moves to a new session, and closes the
// old one on the servers once they could have expired it themselves and a
// server answers, so that no node of a session the application was told is
// LOST outlives the signal by more than the servers' own expiry. Session
// returns the current session and a channel closed when it ends; Trust
// returns a context that ends at the first state the error policy counts
// as an error (its cause a *StateError), which is what a lock recipe
// derives each grant from.
//
// Listeners run in order on a goroutine of the client's, never on the
// connection's; a listener may close its client.
//
// # Errors
//
// Every call takes a context first and honours it. A failed operation
// returns an *OpError (operation, path, cause) whose text says "gocurator: "
// once; errors.Is sees through it to go-zookeeper's sentinels
// (zk.ErrNoNode, ...), ErrClosed (which unwraps to zk.ErrClosing) and
// ErrInvalidArgument, the one sentinel of every bad argument in the module.
//
// # Curator correspondence
//
//	Curator (org.apache.curator.framework)        gocurator
//	CuratorFrameworkFactory.newClient, builder()  New(connectString, policy, options...)
//	builder().namespace, authorization, ...       WithNamespace, WithAuth, WithACLProvider, ...
//	start(), close()                              New starts; Close
//	blockUntilConnected                           BlockUntilConnected(ctx)
//	getConnectionStateListenable().addListener    AddListener, WithListener
//	getZookeeperClient().getZooKeeper()
//	  .getSessionId(), getSessionTimeout()        SessionID, Session, SessionTimeout
//	create().withMode().withProtection()
//	  .creatingParentContainersIfNeeded()         Create(ctx, path, data, WithMode, WithProtection, ...)
//	delete().guaranteed().withVersion()           Delete(ctx, path, Guaranteed(), WithVersion(v))
//	checkExists(), getData(), setData()           Exists, GetData, SetData (and ...W for a watch)
//	getChildren()                                 Children, ChildrenW
//	watchers().add().withMode(PERSISTENT...),
//	  recipes' PersistentWatcher                  NewPersistentWatcher
//	transaction()                                 Multi
//	sync()                                        Sync
//	ZKPaths.makePath, PathUtils.validatePath      JoinPath, SplitPath, ValidatePath
//
// The migration guide (docs/migration.md) lists every call and option.
package framework
