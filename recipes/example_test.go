package recipes_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/recipes"
)

// connect is the examples' client of the ZooKeeper in ZK_SERVERS
// ("zk1:2181,zk2:2181" in real life), with a context for their calls, and a
// function that ends both.
var connect = testclient.Connect

func ExampleInterProcessMutex() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	mu, err := recipes.NewInterProcessMutex(client, "/examples/mutex")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mu.NewHandle() // one owner; another handle would contend
	if err := h.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	token, err := h.FencingToken(ctx) // for the resource the lock protects
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("acquired; fencing token > 0:", token > 0)
	if err := h.Acquire(ctx); err == nil { // reentrant: only counts up
		fmt.Println("acquired again")
	}
	err = mu.NewHandle().TryAcquire(ctx)
	fmt.Println("another handle:", errors.Is(err, recipes.ErrLocked))
	h.Release(ctx)
	if err := h.Release(ctx); err == nil {
		fmt.Println("released")
	}
	// Output:
	// acquired; fencing token > 0: true
	// acquired again
	// another handle: true
	// released
}

func ExampleInterProcessReadWriteLock() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	rw, err := recipes.NewInterProcessReadWriteLock(client, "/examples/rw")
	if err != nil {
		fmt.Println(err)
		return
	}
	alice, bob := rw.NewHandle(), rw.NewHandle()
	alice.ReadLock().Acquire(ctx)
	bob.ReadLock().Acquire(ctx)
	fmt.Println("two readers hold:", alice.ReadLock().IsHeld() && bob.ReadLock().IsHeld())
	err = rw.NewHandle().WriteLock().TryAcquire(ctx)
	fmt.Println("a writer must wait:", errors.Is(err, recipes.ErrLocked))
	err = alice.WriteLock().Acquire(ctx)
	fmt.Println("upgrade refused:", errors.Is(err, recipes.ErrUpgrade))
	alice.ReadLock().Release(ctx)
	bob.ReadLock().Release(ctx)

	// downgrade: write, then read, then give up the write
	alice.WriteLock().Acquire(ctx)
	alice.ReadLock().Acquire(ctx)
	alice.WriteLock().Release(ctx)
	fmt.Println("downgraded:", alice.ReadLock().IsHeld() && !alice.WriteLock().IsHeld())
	alice.ReadLock().Release(ctx)
	// Output:
	// two readers hold: true
	// a writer must wait: true
	// upgrade refused: true
	// downgraded: true
}

func ExampleInterProcessSemaphoreV2() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	sem, err := recipes.NewInterProcessSemaphoreV2(client, "/examples/semaphore", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	leases, err := sem.AcquireN(ctx, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("leases:", len(leases))
	_, err = sem.TryAcquire(ctx)
	fmt.Println("a third:", errors.Is(err, recipes.ErrLocked))
	if err := recipes.ReturnAll(ctx, leases); err == nil {
		fmt.Println("returned")
	}
	// Output:
	// leases: 2
	// a third: true
	// returned
}

func ExampleInterProcessMultiLock() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	ml, err := recipes.NewInterProcessMultiLock(client, []string{"/examples/accounts/1", "/examples/accounts/2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = recipes.WithLock(ctx, ml, func(ctx context.Context) error {
		fmt.Println("holding both")
		return nil
	})
	fmt.Println("released:", err == nil && !ml.IsHeld())
	// Output:
	// holding both
	// released: true
}

// WithLock is the shortest way to hold a lock, and the one that leaks
// nothing: it acquires, runs the function with a context that ends if the
// lock is lost, and releases.
func ExampleWithLock() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	mu, err := recipes.NewInterProcessMutex(client, "/examples/with-lock")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mu.NewHandle()
	err = recipes.WithLock(ctx, h, func(ctx context.Context) error {
		token, err := h.FencingToken(ctx)
		if err != nil {
			return err // lost: write nothing
		}
		fmt.Println("holding; token > 0:", token > 0)
		return nil
	})
	if errors.Is(err, recipes.ErrLockLost) {
		fmt.Println("lost while working: the work was not protected all along")
	}
	fmt.Println("done:", err)
	// Output:
	// holding; token > 0: true
	// done: <nil>
}

// Done closes when the acquisition ends, lost or released, so a goroutine
// waiting on it always returns; Err tells which.
func ExampleHandle_Done() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	mu, err := recipes.NewInterProcessMutex(client, "/examples/done")
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mu.NewHandle()
	if err := h.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	ended := make(chan error, 1)
	go func() {
		<-h.Done()
		ended <- h.Err()
	}()
	fmt.Println("held:", h.IsHeld(), h.Err())
	h.Release(ctx)
	select {
	case err = <-ended:
	case <-ctx.Done():
		fmt.Println("Done did not close:", ctx.Err())
		return
	}
	fmt.Println("lost:", errors.Is(err, recipes.ErrLockLost), "released:", errors.Is(err, recipes.ErrNotHeld))
	// Output:
	// held: true <nil>
	// lost: false released: true
}

// The semaphore mutex is not reentrant, and its value is the owner: a
// second acquisition through the same value waits for the first's release.
func ExampleInterProcessSemaphoreMutex() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	m, err := recipes.NewInterProcessSemaphoreMutex(client, "/examples/semaphore-mutex")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := m.Acquire(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held:", m.IsHeld())
	err = m.TryAcquire(ctx)
	fmt.Println("again through the same value:", errors.Is(err, recipes.ErrLocked))
	if err := m.Release(ctx); err == nil {
		fmt.Println("released")
	}
	// Output:
	// held: true
	// again through the same value: true
	// released
}

// WithLock holds a semaphore's lease as it holds a lock: the function's
// context ends if the lease is lost, and the lease is returned after it.
func ExampleWithLock_lease() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	sem, err := recipes.NewInterProcessSemaphoreV2(client, "/examples/with-lease", 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	lease, err := sem.Acquire(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	err = recipes.WithLock(ctx, lease, func(ctx context.Context) error {
		token, err := lease.FencingToken(ctx)
		if err != nil {
			return err // lost: write nothing
		}
		fmt.Println("holding a lease; token > 0:", token > 0)
		return nil
	})
	fmt.Println("done:", err, "returned:", errors.Is(lease.Err(), recipes.ErrNotHeld))
	// Output:
	// holding a lease; token > 0: true
	// done: <nil> returned: true
}

// Two candidates of one election: the first to start leads until it
// closes, then the next one does. Each term of leadership tells its end as
// a held lock does (Done, Err).
func ExampleLeaderLatch() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	first, err := recipes.NewLeaderLatch(client, "/examples/latch", recipes.WithParticipantID("first"))
	if err != nil {
		fmt.Println(err)
		return
	}
	second, err := recipes.NewLeaderLatch(client, "/examples/latch", recipes.WithParticipantID("second"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close()
	if err := first.Start(); err != nil {
		fmt.Println(err)
		return
	}
	if err := first.Await(ctx); err != nil { // Curator's await()
		fmt.Println(err)
		return
	}
	if err := second.Start(); err != nil {
		fmt.Println(err)
		return
	}
	leader, _ := second.Leader(ctx)
	fmt.Println("leader:", leader.ID, "second leads:", second.HasLeadership())

	term := first.Done() // closed when first's term ends
	first.Close()
	<-term
	if err := second.Await(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("first's term over:", errors.Is(first.Err(), recipes.ErrNotLeader), "second leads:", second.HasLeadership())
	// Output:
	// leader: first second leads: false
	// first's term over: true second leads: true
}

// A selector runs its function while it leads; returning gives leadership
// up. The function's context ends when leadership can no longer be
// trusted, or the selector closes.
func ExampleLeaderSelector() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	var s *recipes.LeaderSelector
	led := make(chan string, 1)
	s, err = recipes.NewLeaderSelector(client, "/examples/selector", func(ctx context.Context) error {
		token, err := s.FencingToken(ctx) // stamp the leader's writes with it
		if err != nil {
			return err
		}
		led <- fmt.Sprint("leading; token > 0: ", token > 0)
		return nil // one term's work done: leadership given up
	}, recipes.WithParticipantID("worker-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Start(); err != nil {
		fmt.Println(err)
		return
	}
	select {
	case msg := <-led:
		fmt.Println(msg)
	case <-ctx.Done():
		fmt.Println("did not lead:", ctx.Err())
	}
	s.Close()
	<-s.Closed() // the function has returned and the node is gone
	fmt.Println("closed")
	// Output:
	// leading; token > 0: true
	// closed
}

// A process that does not stand in an election follows its leader: a view
// when it reads the election, then one at each change of leader, and one
// each time the view goes stale (the connection SUSPENDED) and fresh again.
func ExampleObserveLeaderLatch() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	octx, stop := context.WithCancel(ctx)
	defer stop()
	views, err := recipes.ObserveLeaderLatch(octx, client, "/examples/observed")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", (<-views).Leader)

	latch, err := recipes.NewLeaderLatch(client, "/examples/observed", recipes.WithParticipantID("leader-1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := latch.Start(); err != nil {
		fmt.Println(err)
		return
	}
	v := <-views
	fmt.Printf("%+v stale: %v\n", v.Leader, v.Stale)
	latch.Close()
	fmt.Printf("%+v\n", (<-views).Leader)
	// Output:
	// {ID: IsLeader:false}
	// {ID:leader-1 IsLeader:true} stale: false
	// {ID: IsLeader:false}
}
