// Package recipes holds Apache Curator's ZooKeeper lock and leader-election
// recipes for Go. They write the very trees Curator 5.x writes (names, sort
// order, predicates), so that Go and Java Curator services can take the same
// locks, and stand in the same elections, while a fleet moves from one
// language to the other.
//
// # In short
//
// A lock, held for one function (the Examples run each recipe):
//
//	client, err := framework.New("zk1:2181,zk2:2181,zk3:2181",
//		retry.NewExponentialBackoff(100*time.Millisecond, 5),
//		framework.WithSessionTimeout(30*time.Second)) // a time.Duration: Curator's 30000 ms
//	if err != nil {
//		return err
//	}
//	defer client.Close()
//	mu, err := recipes.NewInterProcessMutex(client, "/locks/orders")
//	if err != nil {
//		return err
//	}
//	h := mu.NewHandle() // one owner: give each goroutine its own
//	err = recipes.WithLock(ctx, h, func(ctx context.Context) error {
//		token, err := h.FencingToken(ctx)
//		if err != nil {
//			return err // lost: write nothing
//		}
//		return store.Write(ctx, token, order) // ctx ends if the lock is lost
//	})
//
// A leader election, and a process that only follows its leader:
//
//	latch, err := recipes.NewLeaderLatch(client, "/election/billing", recipes.WithParticipantID(host))
//	...
//	latch.Start()
//	defer latch.Close()
//	if err := latch.Await(ctx); err == nil {
//		lead(ctx, latch.Done()) // Done closes when this term of leadership ends
//	}
//
//	views, err := recipes.ObserveLeaderLatch(ctx, client, "/election/billing")
//	...
//	for v := range views { // until ctx ends
//		route(v.Leader.ID, v.Stale)
//	}
//
// # Owners, loss and fencing
//
// A lock value (NewInterProcessMutex, ...) is shared; an owner holds it: a
// Handle (NewHandle; the read-write lock's halves are Handles too), a
// semaphore mutex or multi-lock value, or a Lease. An owner that already
// holds a reentrant lock counts up when it acquires again, from whichever
// goroutine: goroutines that share a Handle are one owner and do NOT
// exclude each other. Give each goroutine (or logical owner) its own
// handle, and they contend through ZooKeeper as two Java threads do.
//
// Every owner tells the truth about what it holds. Its Done channel closes
// when the acquisition ends for any reason, so a goroutine waiting on it
// always returns, and Err says why: nil while held, an error wrapping
// ErrLockLost once the lock can no longer be trusted (the connection
// SUSPENDED or the session LOST, by the client's error policy; the client
// closed), an error wrapping ErrNotHeld once released (ErrNotLeader once a
// LeaderLatch's or LeaderSelector's term is over: each term of leadership
// is told as an acquisition is). After a loss IsHeld
// is false, a reentrant Acquire fails with ErrLockLost, and Release still
// deletes the node but returns ErrLockLost, so the owner learns that its
// work was not protected all along. WithLock does all this in one call,
// for a Locker or a Lease (each an Owner). A lost lock does not wedge the others: the node of a lock or lease lost at
// SUSPENDED is deleted by the library, Release or not, once the servers
// could have expired the session (so the holder keeps that margin to stop).
//
// Misuse never crashes the process: every method of a zero value or nil
// pointer of an exported type returns an error wrapping framework.ErrInvalidArgument, nil
// listeners are ignored, and a listener that panics is logged. Every type
// with Start and Close follows one rule: Start twice, or after Close, is
// ErrInvalidState; Close is idempotent; and Close never waits for user code:
// no listener call or leadership function begins once Close has begun, and
// Close does not wait for one under way (it may be the caller, or wait for
// it).
//
// A lock cannot stop a paused or partitioned process from acting after
// another has taken over: the resource it protects must check a fencing
// token. FencingToken returns the lock node's czxid, which rises strictly
// across every holder, in both languages. The whole contract, with its
// timing, is in docs/guarantees.md.
//
// Every call that takes a context honours it, whatever else is under way on
// the same owner; a cancelled or timed-out acquire leaves no node behind.
// Errors wrap with %w: errors.Is finds this package's sentinels,
// framework.ErrClosed and go-zookeeper's (zk.ErrNoNode, ...).
//
// # Curator correspondence
//
//	Curator (org.apache.curator.framework.recipes)  gocurator
//	InterProcessMutex                               NewInterProcessMutex, then NewHandle per owner
//	InterProcessMutex.acquire(), acquire(t, unit)   Handle.Acquire(ctx) (the deadline is the timeout)
//	acquire(0, unit)                                Handle.TryAcquire
//	release()                                       Handle.Release
//	isOwnedByCurrentThread()                        Handle.IsHeld (per owner, not per thread)
//	isAcquiredInThisProcess()                       InterProcessMutex.IsAcquiredInThisProcess
//	getParticipantNodes()                           ParticipantNodes
//	makeRevocable(listener)                         Handle.MakeRevocable
//	Revoker.attemptRevoke                           Revoke
//	InterProcessReadWriteLock                       NewInterProcessReadWriteLock, NewHandle
//	readLock(), writeLock()                         ReadWriteHandle.ReadLock, WriteLock
//	InterProcessSemaphoreV2                         NewInterProcessSemaphoreV2, ...WithCount
//	acquire(), acquire(qty, ...)                    Acquire, AcquireN (one deadline for all)
//	Lease.close(), returnAll                        Lease.Close, ReturnAll
//	InterProcessSemaphoreMutex                      NewInterProcessSemaphoreMutex (the value is the owner)
//	InterProcessMultiLock(client, paths)            NewInterProcessMultiLock
//	InterProcessMultiLock(List<InterProcessLock>)   NewInterProcessMultiLockWithLocks
//	SharedCount                                     NewSharedCount
//	SharedValue, VersionedValue, trySetValue        NewSharedValue, VersionedValue, TrySetValue
//	InterProcessLock                                Locker (an Owner that acquires)
//	LeaderLatch(client, path, id)                   NewLeaderLatch(client, path, WithParticipantID(id))
//	start(), await(), close(closeMode)              Start, Await(ctx), Close / CloseWithMode
//	hasLeadership(), LeaderLatchListener            HasLeadership (and Done, Err), AddListener
//	getParticipants(), getLeader()                  Participants(ctx), Leader(ctx)
//	LeaderSelector(client, path, listener)          NewLeaderSelector(client, path, fn): fn(ctx) leads until it returns
//	autoRequeue(), requeue(), interruptLeadership() WithAutoRequeue(), Requeue, InterruptLeadership
//	getLeader(), polled by a non-candidate          ObserveLeaderLatch, ObserveLeaderSelector: a channel of views
//	(no counterpart)                                Done, Err, FencingToken, WithLock
//
// Curator's other recipes are in packages beside this one, on its public
// API: recipes/nodes (PersistentNode, PersistentTtlNode), recipes/barriers
// (DistributedBarrier, DistributedDoubleBarrier) and recipes/atomic
// (DistributedAtomicValue, DistributedAtomicLong).
//
// Naming: constructors are New and Curator's class name, a second Curator
// constructor adds With and what it takes; an owner says IsHeld, a lock
// value that hands out owners says IsAcquiredInThisProcess. The migration
// guide (docs/migration.md) gives every call with its differences.
package recipes
