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
//   - The end of something the hook heard begin is never dropped: an event
//     of a kind made by NewEndEventKind (the recipes': an acquisition's
//     grant or failure, a grant's release or loss, a term's end; they tell
//     an end only of a start the outbox took: Emit reports it). So gauges
//     built on the events come back to zero whatever is dropped. Ends are
//     few: at most one or two per acquisition under way.
//   - Past half the bound, DEBUG notes are dropped (log lines, and the
//     events logged at DEBUG: retries, acquisitions' starts); past the
//     bound, every note but those ends.
//   - Each overflow episode says so, at WARN, as it begins and as it ends
//     (how many it dropped); Client.EventsDropped counts them all.
//
// Close does not wait for the hook or the sink: the notes queued before it,
// and those queued after it (a waiter's last failure, a holder's loss told
// late), are still handed on, in order, by the outbox's goroutine (started
// again for them once it has ended), never by the goroutine that queued
// them, which may hold a lock of the library's.
type outbox struct {
	q       *listeners.Queue[note]
	deliver func(note)
	max     int
	dropped atomic.Uint64 // every note dropped, all episodes

	mu       sync.Mutex // taken under the queue's lock (admit) and on its goroutine
	episode  uint64     // notes dropped in the overflow episode under way; 0: none
	unwarned bool       // an episode began and its WARN is not written yet
	queuedAt int        // notes waiting when it began
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
	o := &outbox{deliver: deliver, max: max}
	o.q = listeners.NewQueue(o.handOn, o.admit, o.idle)
	return o
}

// droppable reports whether n may be dropped: every note but an event that
// ends what was told to begin (NewEndEventKind).
func (n note) droppable() bool {
	return n.line != nil || !n.event.Kind.end
}

// push queues n, and reports whether it did (false: dropped).
func (o *outbox) push(n note) bool { return o.q.Push(n) }

// admit decides, under the queue's lock, whether n is queued while queued
// notes wait: past the bound none that may be dropped, past half of it no
// DEBUG one.
func (o *outbox) admit(n note, queued int) bool {
	if !n.droppable() || queued < o.max && (n.level > zapcore.DebugLevel || 2*queued < o.max) {
		return true
	}
	o.dropped.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.episode == 0 {
		o.unwarned, o.queuedAt = true, queued
	}
	o.episode++
	return false
}

// handOn hands n on, on the queue's goroutine, after the WARN of an
// overflow episode that began since the last one.
func (o *outbox) handOn(n note) {
	o.warnBegun()
	o.deliver(n)
}

// idle ends the overflow episode under way, if any, once the queue has run
// dry: a WARN says how many notes it dropped.
func (o *outbox) idle() {
	o.warnBegun()
	o.mu.Lock()
	ended := o.episode
	o.episode = 0
	o.mu.Unlock()
	if ended > 0 {
		o.deliver(warning("the overflow of events and log lines is over", zap.Uint64("dropped", ended)))
	}
}

// warnBegun writes the WARN of an overflow episode that began, once.
func (o *outbox) warnBegun() {
	o.mu.Lock()
	warn, queued := o.unwarned, o.queuedAt
	o.unwarned = false
	o.mu.Unlock()
	if warn {
		o.deliver(warning("the event hook or log sink is too slow: events and log lines are dropped, DEBUG first, never the end of what was told to begin",
			zap.Int("queued", queued)))
	}
}

// warning is a WARN line of the outbox's own, written to the sink.
func warning(msg string, fields ...zap.Field) note {
	return note{level: zapcore.WarnLevel, line: &logLine{entry: zapcore.Entry{Level: zapcore.WarnLevel, Message: msg}, fields: fields}}
}

// close lets the goroutine end once it has handed on what is queued
// (listeners.Queue.Close: it waits for no hand-on, which is user code). It
// is idempotent.
func (o *outbox) close() { o.q.Close() }

// Closed returns a channel that is closed once the client is closed and
// has told everything it had to: every state change posted to the
// listeners, every event to the hooks, every log line to the sink. Close
// does not wait for those (they are user code); a program that must have
// them all before it goes on (a last metrics scrape, a log flushed before
// exit) waits for Closed. What comes after it (the loss of a grant still
// held at Close, told as its holder notices) is told later still. Before
// Close it stays open; for a nil or zero Client it is closed.
func (c *Client) Closed() <-chan struct{} {
	if !c.usable() {
		return closedChan
	}
	return c.told
}

// tellClosed closes c.told once, after Close, the listeners and then the
// hooks and the sink have heard everything queued: the states' queue
// first, as a listener's panic is logged on the outbox.
func (c *Client) tellClosed() {
	<-c.states.Dry()
	<-c.out.q.Dry()
	close(c.told)
}

// outboxCore is the client's logger's core: it asks the user's core whether
// a level is enabled, at once, and queues what it would write on the
// outbox, whose goroutine writes it.
type outboxCore struct {
	zapcore.Core // the user's
	box          *outbox
}

// With adds fields to the user's core, encoded now (see freeze).
func (c outboxCore) With(fields []zapcore.Field) zapcore.Core {
	return outboxCore{c.Core.With(freeze(fields)), c.box}
}

func (c outboxCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write queues the line, its fields encoded now (see freeze): the caller
// may change what they refer to once it returns.
func (c outboxCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	c.box.push(note{level: e.Level, line: &logLine{core: c.Core, entry: e, fields: freeze(fields)}})
	return nil
}

// Sync does nothing: the lines are written by the outbox's goroutine, and
// the user's Sync is the user's to call.
func (c outboxCore) Sync() error { return nil }
