package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// queue is owners waiting behind a holder (scenarios 3 and 6), each on a
// goroutine of its own that acquires, notes its token and releases at once.
// The first error ends the queue's context.
type queue struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup
	tokens []int64 // in the order of acquisition
	mu     sync.Mutex
}

func newQueue(ctx context.Context) *queue {
	q := &queue{}
	q.ctx, q.cancel = context.WithCancelCause(ctx)
	return q
}

// add starts o's turn.
func (q *queue) add(o owner) {
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		if err := o.Acquire(q.ctx); err != nil {
			q.cancel(err)
			return
		}
		q.mu.Lock()
		q.tokens = append(q.tokens, o.Token())
		q.mu.Unlock()
		if err := o.Release(context.WithoutCancel(q.ctx)); err != nil {
			q.cancel(fmt.Errorf("release: %w", err))
		}
	}()
}

// drain releases holder and waits, at most limit, until every owner has
// acquired and released; it returns the time that took.
func (q *queue) drain(holder owner, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := holder.Release(q.ctx); err != nil {
		return 0, err
	}
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		return 0, fmt.Errorf("the queue did not drain within %s", limit)
	}
	return time.Since(start), context.Cause(q.ctx)
}

// close ends the queue's context and waits for its goroutines.
func (q *queue) close() {
	q.cancel(errors.New("the queue was closed"))
	q.wg.Wait()
}

// waitWatches waits, at most limit, until the server counts n more watches
// than watch0, asking every interval: every waiter waits.
func (e *env) waitWatches(ctx context.Context, watch0 int64, n int, every, limit time.Duration) error {
	w := watch0
	err := waitFor(ctx, limit, every, func() (bool, error) {
		var err error
		w, err = e.counter("zk_watch_count")
		return w-watch0 >= int64(n), err
	})
	if err != nil {
		return fmt.Errorf("waiters did not all wait: %d of %d watches: %w", w-watch0, n, err)
	}
	return nil
}

// holdFor acquires, on sess, a holder of the mutex at path for a queue to
// form behind it, and returns what makes the queue's owners and the
// server's watch count before it formed (form's watch0).
func (e *env) holdFor(ctx context.Context, sess *session, path string) (mk func() owner, holder owner, watch0 int64, err error) {
	if mk, err = sess.mutex(path); err != nil {
		return nil, nil, 0, err
	}
	holder = mk()
	if err := holder.Acquire(ctx); err != nil {
		return nil, nil, 0, err
	}
	watch0, err = e.counter("zk_watch_count")
	return mk, holder, watch0, err
}

// form queues n owners of mk on q and waits until they all wait: until
// the server counts n more watches than watch0.
func (e *env) form(q *queue, mk func() owner, n int, watch0 int64) error {
	for range n {
		q.add(mk())
	}
	return e.waitWatches(q.ctx, watch0, n, 20*time.Millisecond, time.Minute)
}
