package listeners

import "sync"

// Queue hands values to a function on a goroutine of its own, one at a
// time, in the order they were pushed: whoever pushes never waits for the
// function, which is user code (a client's state listeners, its event hooks
// and log sink). So Close never waits for it either: it only says that no
// goroutine need wait for more. What was pushed before Close, and what is
// pushed after it (what happens to a closed client's recipes: a waiter's
// last failure, a holder's loss at Close), is still delivered, in order, on
// the queue's goroutine, never on the pusher's (which may hold a lock of
// the library's); once closed, that goroutine ends whenever it runs dry,
// and a later Push starts another. A Queue is made by NewQueue.
type Queue[T any] struct {
	deliver func(T)
	admit   func(v T, queued int) bool // nil: every value
	idle    func()                     // nil: nothing to do when the queue runs dry

	mu      sync.Mutex
	items   []T
	busy    int  // taken by the goroutine and not yet delivered
	closed  bool // no goroutine need wait for more: it ends when dry
	running bool // a goroutine delivers (always, until Close)
	wake    chan struct{}
	dry     []chan struct{} // closed when the goroutine next ends (Dry)
}

// NewQueue starts a queue that hands each value to deliver. admit, if not
// nil, decides whether a value pushed is queued, given how many wait (those
// queued and the one being delivered, if any): it is called under the
// queue's lock, and must be quick and call no user code. idle, if not nil,
// is called on the queue's goroutine each time it has delivered every
// value it had.
func NewQueue[T any](deliver func(T), admit func(v T, queued int) bool, idle func()) *Queue[T] {
	q := &Queue[T]{deliver: deliver, admit: admit, idle: idle, wake: make(chan struct{}, 1), running: true}
	go q.run()
	return q
}

// Push queues v for delivery, unless admit refuses it, and reports whether
// it did. It never delivers v itself.
func (q *Queue[T]) Push(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.admit != nil && !q.admit(v, len(q.items)+q.busy) {
		return false
	}
	q.items = append(q.items, v)
	if !q.running { // closed, and the goroutine ran dry and ended
		q.running = true
		go q.run()
		return true
	}
	q.signal()
	return true
}

// signal wakes the goroutine; q.mu is held.
func (q *Queue[T]) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Len returns how many values wait: queued, and being delivered.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) + q.busy
}

// run delivers what is queued, batch after batch, calling idle once each
// time it has run dry after delivering; it waits for more until Close, and
// ends at the first time it is dry after Close.
func (q *Queue[T]) run() {
	dry := true // nothing delivered since idle last ran
	for {
		q.mu.Lock()
		items := q.items
		q.items, q.busy = nil, len(items)
		if len(items) == 0 && (dry || q.idle == nil) {
			if q.closed {
				q.running = false
				for _, ch := range q.dry {
					close(ch)
				}
				q.dry = nil
				q.mu.Unlock()
				return
			}
			q.mu.Unlock()
			<-q.wake
			continue
		}
		q.mu.Unlock()
		if len(items) == 0 {
			dry = true
			q.idle()
			continue
		}
		for i, v := range items {
			q.deliver(v)
			var zero T
			items[i] = zero // delivered: not kept alive by the batch
			q.mu.Lock()
			q.busy--
			q.mu.Unlock()
		}
		dry = false
	}
}

// Dry returns a channel closed once the queue is closed and has nothing
// left to deliver: at once if that is so now, or else when its goroutine
// ends. A value pushed later is delivered later still.
func (q *Queue[T]) Dry() <-chan struct{} {
	q.mu.Lock()
	defer q.mu.Unlock()
	ch := make(chan struct{})
	if q.closed && !q.running {
		close(ch)
	} else {
		q.dry = append(q.dry, ch)
	}
	return ch
}

// Close says that no goroutine need wait for more values: the queue's
// goroutine delivers what is queued and ends. Close waits for nothing (a
// delivery under way may be its caller, or wait for it). It is idempotent.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		q.signal()
	}
}
