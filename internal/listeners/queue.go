package listeners

import "sync"

// Queue hands values to a function on a goroutine of its own, one at a
// time, in the order they were pushed: whoever pushes never waits for the
// function. Close delivers what was pushed before it, then ends the
// goroutine; a value pushed after Close is delivered on the pusher's
// goroutine (at once, even while a last delivery is under way: that may be
// what pushes it): what happens to a closed client's recipes (a waiter's
// last failure) is still told. A Queue is made by NewQueue.
type Queue[T any] struct {
	deliver func(T)
	max     int         // values waiting at most; past it the oldest go (0: no bound)
	dropped func(n int) // told when values were dropped: n so far
	one     sync.Mutex  // held across each delivery

	mu     sync.Mutex
	items  []T
	ndrop  int
	closed bool
	wake   chan struct{}
	done   chan struct{} // closed when the goroutine has ended
	gate   Gate          // the deliveries: Close does not wait while one is under way
}

// NewQueue starts a queue that hands each value to deliver. With max > 0,
// at most max values wait: past it the oldest are dropped, and dropped
// (if not nil) hears how many so far.
func NewQueue[T any](deliver func(T), max int, dropped func(n int)) *Queue[T] {
	q := &Queue[T]{deliver: deliver, max: max, dropped: dropped, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// Push queues v for delivery; after Close it delivers v itself.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		if q.one.TryLock() {
			defer q.one.Unlock()
		} // else a delivery is under way, perhaps the very one that pushes v: waiting could never end
		q.deliver(v)
		return
	}
	defer q.mu.Unlock()
	if q.max > 0 && len(q.items) >= q.max {
		q.items = q.items[1:]
		q.ndrop++
		if q.dropped != nil {
			q.dropped(q.ndrop)
		}
	}
	q.items = append(q.items, v)
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *Queue[T]) run() {
	defer close(q.done)
	for range q.wake {
		for {
			q.mu.Lock()
			items := q.items
			q.items = nil
			q.mu.Unlock()
			if len(items) == 0 {
				break
			}
			for _, v := range items {
				q.gate.Call(func() {
					q.one.Lock()
					defer q.one.Unlock()
					q.deliver(v)
				})
			}
		}
	}
}

// Close delivers what was pushed before it, then ends the goroutine. It
// waits for that, unless a delivery is under way when it is called (it may
// be the caller: a listener may close what calls it); then the goroutine
// ends by itself once that delivery returns. Close is idempotent.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	close(q.wake)
	q.mu.Unlock()
	if q.gate.Close() {
		<-q.done
	}
}
