package recipes

import (
	"context"
	"errors"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// Owner is the owner of an acquisition, as WithLock needs it: it tells
// when the acquisition ends and why, and gives it up. Every Locker is an
// Owner, and so is a *Lease (a lease is acquired by its semaphore's Acquire,
// and given up by Release, which is its Close).
//
// Done and Err tell the life of the current acquisition, as Handle
// documents: Done is closed when it ends (lost or released; already closed
// when nothing is held), Err is nil while it holds, wraps ErrLockLost once it
// is lost, and wraps ErrNotHeld when nothing is held.
type Owner interface {
	// Release gives the acquisition up.
	Release(ctx context.Context) error
	// Done returns a channel closed when the current acquisition ends.
	Done() <-chan struct{}
	// Err returns nil while the acquisition holds, and otherwise why not.
	Err() error
}

// Locker is a lock owner of this package that acquires its lock itself:
// Curator's InterProcessLock. Handle (also the read-write lock's ReadLock
// and WriteLock), InterProcessSemaphoreMutex and InterProcessMultiLock are
// Lockers. All of them also have TryAcquire.
type Locker interface {
	Owner
	// Acquire takes the lock, waiting as long as ctx allows.
	Acquire(ctx context.Context) error
}

// WithLock runs fn while l holds, and releases l whatever fn does. A Locker
// is acquired first; a Lease, which its semaphore's Acquire acquired, is
// used as it is (if it no longer holds, lost or returned, fn does not run:
// it is released, and the error says why). It is the shortest way to hold
// a lock or a lease, and the one that leaks nothing. fn's context
// is cancelled, with a cause wrapping ErrLockLost (see context.Cause), as
// soon as the lock can no longer be trusted, so that work under a lost lock
// stops. The result is fn's error joined with the release's: after a loss the
// release reports it (ErrLockLost), so the caller always learns that fn's
// work was not protected all along. If fn panics (or calls
// runtime.Goexit), l is released first, with a context of its own bounded
// by a few seconds, and the panic then goes on as it was: a caller that
// recovers it (net/http does) finds the lock free. A nil ctx, l or fn is an
// error wrapping framework.ErrInvalidArgument.
func WithLock(ctx context.Context, l Owner, fn func(ctx context.Context) error) (err error) {
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("with lock: %w", err)
	}
	if listeners.IsNil(l) || fn == nil {
		return errs.Errorf("with lock: %w: nil locker or function", framework.ErrInvalidArgument)
	}
	if lk, ok := l.(Locker); ok {
		if err := lk.Acquire(ctx); err != nil {
			return err
		}
	} else if err := l.Err(); err != nil { // an acquisition made already, over
		rctx, rcancel := acquire.CleanupContext(ctx)
		defer rcancel()
		if rerr := l.Release(rctx); rerr != nil {
			return rerr
		}
		return errs.Errorf("with lock: %w", err)
	}
	lctx, _, stop := watchLoss(ctx, l)
	defer func() { // also as fn panics: the lock goes before the panic does
		stop()
		rctx, rcancel := acquire.CleanupContext(ctx)
		defer rcancel()
		err = errors.Join(err, l.Release(rctx))
	}()
	return fn(lctx)
}

// watchLoss returns a context of ctx that is cancelled, with a cause
// wrapping ErrLockLost, when l's acquisition ends; cancel ends it for a
// cause of the caller's; stop ends it and stops following l.
func watchLoss(ctx context.Context, l Owner) (lctx context.Context, cancel context.CancelCauseFunc, stop func()) {
	lctx, cancel = context.WithCancelCause(ctx)
	stopFollowing := follow(l, func() { cancel(acquire.AsLost(l.Err())) })
	return lctx, cancel, func() {
		stopFollowing()
		cancel(nil)
	}
}

// follow calls ended once l's current acquisition ends, until stop. It
// follows this package's owners with context.AfterFunc, with no goroutine;
// only an Owner of another kind has a goroutine that watches its Done, and
// stop waits for it.
func follow(l Owner, ended func()) (stop func()) {
	if c, ok := l.(contextOf); ok {
		if gctx := c.grantContext(); gctx != nil {
			stopAfter := context.AfterFunc(gctx, ended)
			return func() { stopAfter() }
		}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	done := l.Done()
	go func() {
		defer close(exited)
		select {
		case <-done:
			ended()
		case <-quit:
		}
	}()
	return func() {
		close(quit)
		<-exited
	}
}
