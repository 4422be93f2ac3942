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
	admit   func(v T, queued int) bool // nil: every value
	idle    func()                     // nil: nothing to do when the queue runs dry
	one     sync.Mutex                 // held across each delivery

	mu     sync.Mutex
	items  []T
	busy   int // taken by the goroutine and not yet delivered
	closed bool
	wake   chan struct{}
	done   chan struct{} // closed when the goroutine has ended
	gate   Gate          // the deliveries: Close does not wait while one is under way
}

// NewQueue starts a queue that hands each value to deliver. admit, if not
// nil, decides whether a value pushed is queued, given how many wait (those
// queued and the one being delivered, if any): it is called under the
// queue's lock, and must be quick and call no user code. idle, if not nil,
// is called on the queue's goroutine each time it has delivered every
// value it had.
func NewQueue[T any](deliver func(T), admit func(v T, queued int) bool, idle func()) *Queue[T] {
	q := &Queue[T]{deliver: deliver, admit: admit, idle: idle, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run()
	return q
}

// Push queues v for delivery, unless admit refuses it, and reports whether
// it did; after Close it delivers v itself (and reports true).
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		if q.one.TryLock() {
			defer q.one.Unlock()
		} // else a delivery is under way, perhaps the very one that pushes v: waiting could never end
		q.deliver(v)
		return true
	}
	defer q.mu.Unlock()
	if q.admit != nil && !q.admit(v, len(q.items)+q.busy) {
		return false
	}
	q.items = append(q.items, v)
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// Len returns how many values wait: queued, and being delivered.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + q.busy
}

func (q *Queue[T]) run() {
	defer close(q.done)
	for range q.wake {
		for {
			q.mu.Lock()
			items := q.items
			q.items, q.busy = nil, len(items)
			q.mu.Unlock()
			if len(items) == 0 {
				break
			}
			for i, v := range items {
				q.gate.Call(func() {
					q.one.Lock()
					defer q.one.Unlock()
					q.deliver(v)
				})
				var zero T
				items[i] = zero // delivered: not kept alive by the batch
				q.mu.Lock()
				q.busy--
				q.mu.Unlock()
			}
		}
		if q.idle != nil {
			q.gate.Call(func() {
				q.one.Lock()
				defer q.one.Unlock()
				q.idle()
			})
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
