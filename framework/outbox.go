package framework

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/internal/listeners"
)

// The outbox is where a client runs what its user gave it to hear: the
// event hook and the log sink. Nothing the library does waits for them:
// Emit and every log line of the client's (Logger, and go-zookeeper's own
// lines) only queue a note, and one goroutine of the client's hands the
// notes on, one at a time, in the order they were queued. So no user code
// runs under a library lock or on go-zookeeper's goroutines, and a slow
// sink makes its lines come later, never the library slower.
//
// The queue is bounded, and what it drops keeps the events whole:
//
//   - The end of something the hook heard begin is never dropped: an
//     acquisition's Acquired or AcquireFailed, a grant's Released or Lost,
//     a term's LeadershipLost (the recipes tell an end only of a start the
//     outbox took: Emit reports it). So gauges built on the events come
//     back to zero whatever is dropped. Ends are few: at most one or two
//     per acquisition under way.
//   - Past half the bound, DEBUG notes are dropped (log lines, and the
//     events logged at DEBUG: acquisitions' starts, retries); past the
//     bound, every note but those ends.
//   - Each overflow episode says so, at WARN, as it begins and as it ends
//     (how many it dropped); Client.EventsDropped counts them all.
//
// A note queued after Close is handed on at once, on the goroutine that
// queued it (a waiter's last failure, a holder's loss told late), so such
// notes may reach the hook at the same time as each other.
type outbox struct {
	deliver func(note)
	max     int
	dropped atomic.Uint64 // every note dropped, all episodes
	one     sync.Mutex    // held across each hand-on

	mu      sync.Mutex
	items   []note
	busy    int    // taken by the goroutine and not yet handed on: in the bound too
	episode uint64 // notes dropped in the overflow episode under way; 0: none
	closed  bool
	wake    chan struct{}
	done    chan struct{}
	gate    listeners.Gate // the hand-ons: Close does not wait while one is under way
}

// note is what the outbox hands on: an event (to the hook, and to the log
// sink when level says so), or a log line the client's logger wrote.
type note struct {
	event  Event
	logged bool          // log the event at level
	level  zapcore.Level // the event's, or the line's
	line   *logLine      // a log line, or nil for an event
}

// logLine is a log line of the client's logger, to be written to the user's
// sink.
type logLine struct {
	core   zapcore.Core
	entry  zapcore.Entry
	fields []zapcore.Field
}

// newOutbox starts an outbox that hands each note to deliver, holding at
// most max notes that may be dropped.
func newOutbox(deliver func(note), max int) *outbox {
	o := &outbox{deliver: deliver, max: max, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

// droppable reports whether n may be dropped: every note but an event that
// ends what was told to begin.
func (n note) droppable() bool {
	if n.line != nil {
		return true
	}
	switch n.event.Kind {
	case Acquired, AcquireFailed, Released, Lost, LeadershipLost:
		return false
	}
	return true
}

// push queues n, and reports whether it did (false: dropped). After Close
// it hands n on itself.
func (o *outbox) push(n note) bool {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		if o.one.TryLock() {
			defer o.one.Unlock()
		} // else a hand-on is under way, perhaps the very one that pushes n: waiting could never end
		o.deliver(n)
		return true
	}
	defer o.mu.Unlock()
	if queued := len(o.items) + o.busy; n.droppable() && (queued >= o.max || n.level <= zapcore.DebugLevel && 2*queued >= o.max) {
		o.dropped.Add(1)
		if o.episode == 0 {
			o.items = append(o.items, warning("the event hook or log sink is too slow: events and log lines are dropped, DEBUG first, never the end of what was told to begin",
				zap.Int("queued", queued)))
			o.signal()
		}
		o.episode++
		return false
	}
	o.items = append(o.items, n)
	o.signal()
	return true
}

// signal wakes the goroutine; o.mu is held.
func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// warning is a WARN line of the outbox's own, written to the sink.
func warning(msg string, fields ...zap.Field) note {
	return note{level: zapcore.WarnLevel, line: &logLine{entry: zapcore.Entry{Level: zapcore.WarnLevel, Message: msg}, fields: fields}}
}

func (o *outbox) run() {
	defer close(o.done)
	for range o.wake {
		for {
			o.mu.Lock()
			items := o.items
			o.items, o.busy = nil, len(items)
			var ended uint64
			if len(items) == 0 {
				ended, o.episode = o.episode, 0
			}
			o.mu.Unlock()
			if ended > 0 {
				o.handOn(warning("the overflow of events and log lines is over", zap.Uint64("dropped", ended)))
			}
			if len(items) == 0 {
				break
			}
			for i, n := range items {
				o.handOn(n)
				items[i] = note{}
				o.mu.Lock()
				o.busy--
				o.mu.Unlock()
			}
		}
	}
}

// handOn delivers n on the outbox's goroutine.
func (o *outbox) handOn(n note) {
	o.gate.Call(func() {
		o.one.Lock()
		defer o.one.Unlock()
		o.deliver(n)
	})
}

// close hands on what was queued before it, then ends the goroutine. It
// waits for that, unless a hand-on is under way when it is called (it may
// be the caller: a hook may close the client); the goroutine then ends by
// itself once that hand-on returns. It is idempotent.
func (o *outbox) close() {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.closed = true
	close(o.wake)
	o.mu.Unlock()
	if o.gate.Close() {
		<-o.done
	}
}

// outboxCore is the client's logger's core: it asks the user's core whether
// a level is enabled, at once, and queues what it would write on the
// outbox, whose goroutine writes it.
type outboxCore struct {
	zapcore.Core // the user's
	box          *outbox
}

func (c outboxCore) With(fields []zapcore.Field) zapcore.Core {
	return outboxCore{c.Core.With(fields), c.box}
}

func (c outboxCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c outboxCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	c.box.push(note{level: e.Level, line: &logLine{core: c.Core, entry: e, fields: append([]zapcore.Field(nil), fields...)}})
	return nil
}

// Sync does nothing: the lines are written by the outbox's goroutine, and
// the user's Sync is the user's to call.
func (c outboxCore) Sync() error { return nil }
