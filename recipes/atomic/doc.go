// Package atomic holds Apache Curator's atomic values for Go: a byte slice
// (DistributedAtomicValue) and a counter (DistributedAtomicLong) in one
// ZooKeeper node, changed by compare-and-set, optimistically first and then,
// if that does not succeed, under a lock (PromotedToLock). The bytes on the
// node are Curator's (a long is 8 bytes, big-endian) and the lock is
// Curator's InterProcessMutex at the promotion's path, so that Go and Java
// processes count on one node without a lost update.
//
// # In short
//
//	counter, err := atomic.NewDistributedAtomicLong(client, "/counters/orders",
//		retry.NewNTimes(10, 10*time.Millisecond),
//		atomic.WithPromotedToLock(atomic.PromotedToLock{Path: "/counters/orders-lock"}))
//	...
//	v, err := counter.Increment(ctx)
//	switch {
//	case err != nil:
//		return err // it may have been applied
//	case !v.Succeeded:
//		return errBusy // it was not: the retry policies gave up
//	}
//	log.Printf("orders: %d -> %d", v.PreValue, v.PostValue)
//
// Every operation returns an AtomicValue whose Succeeded must be looked at,
// as Curator's: one that gave up is no error. Each retry of an optimistic
// try (or of a try under the lock) is told to the client's event hook as a
// framework.Retrying event (Detail a RetryEvent, Op "optimistic-set" or
// "promoted-set", Err the conflict); the promoted lock's acquisitions are
// told as any mutex's. A change whose reply is lost to a connection loss
// may apply twice (the client retries it, its compare-and-set fails on its
// own change, and the operation tries again), as Curator's; it is never
// lost once it succeeded.
//
// Misuse is an error, never a panic or a hang: a nil or closed client, a bad
// path, a nil retry policy, a promotion without a lock path, a nil context,
// a zero value.
//
// # Curator correspondence
//
//	Curator (org.apache.curator.framework.recipes.atomic)  gocurator
//	DistributedAtomicValue(client, path, retryPolicy)      NewDistributedAtomicValue(client, path, policy)
//	DistributedAtomicValue(..., promotedToLock)            NewDistributedAtomicValue(..., WithPromotedToLock(p))
//	DistributedAtomicLong(client, counterPath, ...)        NewDistributedAtomicLong(client, path, policy, ...)
//	PromotedToLock.builder().lockPath(p)                   PromotedToLock{Path: p,
//	  .retryPolicy(r).timeout(t, unit).build()               RetryPolicy: r, Timeout: t}
//	get(), forceSet(v), initialize(v)                      Get(ctx), ForceSet(ctx, v), Initialize(ctx, v)
//	compareAndSet(expected, new), trySet(v)                CompareAndSet(ctx, expected, new), TrySet(ctx, v)
//	increment(), decrement(), add(d), subtract(d)          Increment(ctx), Decrement(ctx), Add(ctx, d), Subtract(ctx, d)
//	AtomicValue: succeeded(), preValue(), postValue()      AtomicValue[T]: Succeeded, PreValue, PostValue
//	AtomicStats: getOptimisticTries(), ...TimeMs()         AtomicStats: OptimisticTries, ..., OptimisticTime
//	corrupted data (RuntimeException)                      an error wrapping ErrCorruptValue
//	DistributedAtomicInteger, CachedAtomicLong             not yet
//
// Differences: nil data is empty data (Java's null throws); a context bounds
// every operation, its retries' sleeps and the lock's wait (the promotion's
// Timeout bounds the wait further, and past it the operation gives up,
// not succeeded, as Curator's).
package atomic
