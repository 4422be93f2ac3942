package compat_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// owner is one Go holder of a lock of any recipe.
type owner interface {
	Acquire(ctx context.Context) error
	TryAcquire(ctx context.Context) error
	Release(ctx context.Context) error
	Done() <-chan struct{}
	Err() error
}

// recipe describes one of Curator's lock recipes on both sides, so that a
// scenario can run over all of them.
type recipe struct {
	name string
	// kind is how a holder enters the guard; max is how many may be inside
	// at once (the semaphore's leases; 1 otherwise).
	kind guardKind
	max  int
	// goOwner makes a Go owner of the lock at base on c, taking qty leases
	// at once where the recipe has leases (qty is 1 otherwise).
	goOwner func(t testing.TB, c *framework.Client, base string, qty int) owner
	// javaLock makes the lock at base in peer p, named lock, on the peer's
	// client jc, and returns the name to acquire and release it by.
	javaLock func(t testing.TB, p *peer, lock, jc, base string) string
	// guardPaths is how many guards a holder enters (the multi-lock: one
	// per path).
	guardPaths int
	// queuePath is where a waiter's node appears, and heldNodes how many
	// nodes are there while the lock is held fully and nobody waits.
	queuePath func(base string) string
	heldNodes int
	// revocable: the recipe is an InterProcessMutex in Curator (makeRevocable)
	// and its Go owner a *recipes.Handle.
	revocable bool
	// counting: a waiter waits on the children of the leases (a semaphore)
	// rather than on one node ahead of it; the server does not list child
	// watches (wchp), so the tests cannot see it waiting.
	counting bool
}

// waiting waits until w, a contender for this recipe's lock at base, has
// looked at the queue and chosen to wait (holder.waiting). A counting
// waiter cannot be seen waiting: for it this is only the probe notYet, and
// an early grant is seen only if it comes while the holder still holds.
func (r recipe) waiting(t testing.TB, w holder, base string) {
	t.Helper()
	if r.counting {
		w.notYet(t, r.name+" waiter")
		return
	}
	w.waiting(t, base, r.queuePath(base))
}

func sameBase(base string) string { return base }

// blockingRecipes is every recipe the compat tests cover but the read
// lock, whose holders shut out only writers (the scenarios meet it as a
// half of the read-write lock): the mutex, the write lock, the semaphore
// mutex, a semaphore with several leases and the multi-lock. The recipe's
// name names the scenarios' subtests.
func blockingRecipes() []recipe {
	return []recipe{mutexRecipe, readWriteRecipe("write", ""), semaphoreMutexRecipe, semaphoreRecipe(semaphoreLeases, ""), multiLockRecipe}
}

var mutexRecipe = recipe{
	name: "mutex",
	kind: exclusive,
	max:  1,
	goOwner: func(t testing.TB, c *framework.Client, base string, _ int) owner {
		return mustMutex(t, c, base).NewHandle()
	},
	javaLock: func(t testing.TB, p *peer, lock, jc, base string) string {
		p.do(t, "-", "mutex", lock, jc, base)
		return lock
	},
	guardPaths: 1,
	queuePath:  sameBase,
	heldNodes:  1,
	revocable:  true,
}

func mustMutex(t testing.TB, c *framework.Client, path string, opts ...recipes.LockOption) *recipes.InterProcessMutex {
	t.Helper()
	m, err := recipes.NewInterProcessMutex(c, path, opts...)
	testutil.Must(t, err)
	return m
}

// semaphoreLeases is the number of leases of the semaphore scenarios.
const semaphoreLeases = 3

// readWriteRecipe is one half ("read" or "write") of a read-write lock,
// whose nodes carry data if it is not "".
func readWriteRecipe(half, data string) recipe {
	kind := exclusive
	if half == "read" {
		kind = shared
	}
	return recipe{
		name: half,
		kind: kind,
		max:  1,
		goOwner: func(t testing.TB, c *framework.Client, base string, _ int) owner {
			h := mustReadWrite(t, c, base, data).NewHandle()
			if half == "read" {
				return h.ReadLock()
			}
			return h.WriteLock()
		},
		javaLock: func(t testing.TB, p *peer, lock, jc, base string) string {
			args := []string{lock, jc, base}
			if data != "" {
				args = append(args, "data="+data)
			}
			p.do(t, "-", "rwlock", args...)
			return lock + "." + half
		},
		guardPaths: 1,
		queuePath:  sameBase,
		heldNodes:  1,
		revocable:  true,
	}
}

func mustReadWrite(t testing.TB, c *framework.Client, base, data string) *recipes.InterProcessReadWriteLock {
	t.Helper()
	var opts []recipes.LockOption
	if data != "" {
		opts = append(opts, recipes.WithLockData([]byte(data)))
	}
	rw, err := recipes.NewInterProcessReadWriteLock(c, base, opts...)
	testutil.Must(t, err)
	return rw
}

func locksPath(base string) string { return base + "/locks" }

var semaphoreMutexRecipe = recipe{
	name: "semaphore-mutex",
	kind: exclusive,
	max:  1,
	goOwner: func(t testing.TB, c *framework.Client, base string, _ int) owner {
		m, err := recipes.NewInterProcessSemaphoreMutex(c, base)
		testutil.Must(t, err)
		return m
	},
	javaLock: func(t testing.TB, p *peer, lock, jc, base string) string {
		p.do(t, "-", "semmutex", lock, jc, base)
		return lock
	},
	guardPaths: 1,
	queuePath:  locksPath,
	heldNodes:  0, // the internal lock is released once the lease is granted
	counting:   true,
}

// semaphoreRecipe is an InterProcessSemaphoreV2 with max leases, whose lease
// nodes carry data if it is not "".
func semaphoreRecipe(max int, data string) recipe {
	return recipe{
		name: "semaphore-" + strconv.Itoa(max),
		kind: counted,
		max:  max,
		goOwner: func(t testing.TB, c *framework.Client, base string, qty int) owner {
			var opts []recipes.SemaphoreOption
			if data != "" {
				opts = append(opts, recipes.WithLeaseData([]byte(data)))
			}
			s, err := recipes.NewInterProcessSemaphoreV2(c, base, max, opts...)
			testutil.Must(t, err)
			return &leaseOwner{s: s, qty: qty}
		},
		javaLock: func(t testing.TB, p *peer, lock, jc, base string) string {
			args := []string{lock, jc, base, strconv.Itoa(max)}
			if data != "" {
				args = append(args, "data="+data)
			}
			p.do(t, "-", "semaphore", args...)
			return lock
		},
		guardPaths: 1,
		queuePath:  locksPath,
		heldNodes:  0,
		counting:   true,
	}
}

// leaseOwner holds qty leases of a semaphore as one owner.
type leaseOwner struct {
	s      *recipes.InterProcessSemaphoreV2
	qty    int
	leases []*recipes.Lease
}

func (o *leaseOwner) Acquire(ctx context.Context) (err error) {
	o.leases, err = o.s.AcquireN(ctx, o.qty)
	return err
}

func (o *leaseOwner) TryAcquire(ctx context.Context) (err error) {
	o.leases, err = o.s.TryAcquireN(ctx, o.qty)
	return err
}

func (o *leaseOwner) Release(ctx context.Context) error {
	var errs []error
	for _, l := range o.leases {
		errs = append(errs, l.Close(ctx))
	}
	o.leases = nil
	return errors.Join(errs...)
}

// Done closes when the first lease is lost.
func (o *leaseOwner) Done() <-chan struct{} { return o.leases[0].Done() }

func (o *leaseOwner) Err() error {
	var errs []error
	for _, l := range o.leases {
		errs = append(errs, l.Err())
	}
	return errors.Join(errs...)
}

func multiPaths(base string) []string { return []string{base + "/a", base + "/b"} }

var multiLockRecipe = recipe{
	name: "multi-lock",
	kind: exclusive,
	max:  1,
	goOwner: func(t testing.TB, c *framework.Client, base string, _ int) owner {
		m, err := recipes.NewInterProcessMultiLock(c, multiPaths(base))
		testutil.Must(t, err)
		return m
	},
	javaLock: func(t testing.TB, p *peer, lock, jc, base string) string {
		ps := multiPaths(base)
		p.do(t, "-", "multi", lock, jc, ps[0]+","+ps[1])
		return lock
	},
	guardPaths: 2,
	queuePath:  func(base string) string { return multiPaths(base)[0] },
	heldNodes:  1,
}
