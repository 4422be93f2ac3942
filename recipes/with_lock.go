package recipes

import (
	"context"
	"errors"
)

// Locker is what every lock handle of this package offers: Handle (also
// the read-write lock's ReadLock and WriteLock), InterProcessSemaphoreMutex
// and InterProcessMultiLock. All of them also have TryAcquire.
type Locker interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	Lost() <-chan struct{}
}

// WithLock acquires l, runs fn, and releases l whatever fn returns. fn's
// context is cancelled, with cause ErrLockLost (see context.Cause), as soon
// as the lock can no longer be trusted, so that work under a lost lock stops.
// The result is fn's error joined with any release error.
func WithLock(ctx context.Context, l Locker, fn func(ctx context.Context) error) error {
	if err := l.Acquire(ctx); err != nil {
		return err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		select {
		case <-l.Lost():
			cancel(ErrLockLost)
		case <-lctx.Done():
		}
	}()
	err := fn(lctx)
	cancel(nil)
	<-watching
	rctx, rcancel := cleanupContext(ctx)
	defer rcancel()
	return errors.Join(err, l.Release(rctx))
}
