package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/zkconn"
	"github.com/gocurator/curator/state"
)

// EventKind says what an Event reports: its name, as the logs show it, the
// level the client logs it at, and whether it ends something an earlier
// event began (such an event is never dropped: see EventHook). The
// client's own kinds are StateChanged, Retrying and SessionAbandoned; a
// package built on the client makes its own with NewEventKind and
// NewEndEventKind, and tells them through Emit (the module's recipes tell
// their lock events so). Kinds are compared with ==: two made with the same
// arguments are equal. The zero EventKind is no kind.
type EventKind struct {
	name  string
	level zapcore.Level
	end   bool
}

// NewEventKind returns a kind of event named name (as its log line and
// String show it: a short lower-case word, "acquire-started"), logged at
// level when the client's logger takes that level.
func NewEventKind(name string, level zapcore.Level) EventKind {
	return EventKind{name: name, level: level}
}

// NewEndEventKind returns a kind of event as NewEventKind does, of events
// that end what an event told earlier began (an acquisition's grant or
// failure, a grant's end): past the bound of a slow hook such an event is
// never dropped, so that what is built on the events (a gauge) comes back
// to zero. A package that tells one should tell nothing more of what
// began with an event Emit reported dropped.
func NewEndEventKind(name string, level zapcore.Level) EventKind {
	return EventKind{name: name, level: level, end: true}
}

// The client's own kinds of events.
var (
	// StateChanged: the connection state changed to State.
	StateChanged = NewEventKind("state-changed", zapcore.InfoLevel)
	// Retrying: an operation (Op, on Path) failed with Err and is tried
	// again after Wait; Retry counts the retries so far.
	Retrying = NewEventKind("retrying", zapcore.DebugLevel)
	// SessionAbandoned: the client gave Session up after posting LOST (no
	// server answered before it could expire), and moved to a new one.
	SessionAbandoned = NewEventKind("session-abandoned", zapcore.InfoLevel)
)

// The kinds of the recipes' lock events, under the names they had here
// before the recipes named them (recipes.AcquireStarted, ...): each is
// equal to the recipes' kind of the same name. The client makes no use of
// them.
//
// Deprecated: use the recipes' kinds (recipes.AcquireStarted,
// recipes.Acquired, ...). These names are kept for one release.
var (
	AcquireStarted      = NewEventKind("acquire-started", zapcore.DebugLevel)
	Acquired            = NewEndEventKind("acquired", zapcore.DebugLevel)
	AcquireFailed       = NewEndEventKind("acquire-failed", zapcore.DebugLevel)
	Released            = NewEndEventKind("released", zapcore.DebugLevel)
	Lost                = NewEndEventKind("lost", zapcore.InfoLevel)
	RevocationRequested = NewEventKind("revocation-requested", zapcore.InfoLevel)
	LeadershipGained    = NewEventKind("leadership-gained", zapcore.DebugLevel)
	LeadershipLost      = NewEndEventKind("leadership-lost", zapcore.InfoLevel)
)

// String returns the kind's name, as the logs show it: "state-changed",
// ...; "EventKind{}" for the zero kind.
func (k EventKind) String() string {
	if k.name == "" {
		return "EventKind{}"
	}
	return k.name
}

// Event is one thing that happened to a client or to what a package built
// on it does (the recipes tell their locks' acquisitions, grants, releases
// and losses, and their elections' terms). Fields that do not apply to its
// Kind are zero.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Time is when it happened (events reach the hook a moment later).
	Time time.Time
	// Path is the operation's path (Retrying), or the path a package's
	// event is of (a recipe's path), as the caller gave it; Node is a
	// node's path, when there is one.
	Path, Node string
	// Session is the session the node belongs to, or the client's.
	Session int64
	// Wait is the wait before a retry (Retrying), or a time waited that a
	// package's event measures (an acquire's).
	Wait time.Duration
	// Hold is a time something was held that a package's event measures
	// (a lock's, a lease's, a term of leadership's).
	Hold time.Duration
	// Err says why (Retrying, and a package's events: a loss, a failure).
	Err error
	// State is the new connection state (StateChanged).
	State state.ConnectionState
	// Op is the operation retried, and Retry the retries made so far
	// (Retrying).
	Op    string
	Retry int
	// Context carries the values of the context of the call a package's
	// event is of (the recipes: the acquire's, for its start, its grant or
	// failure, and its grant's end), without its deadline or cancellation:
	// a hook finds the caller's trace span there, say. Nil for the
	// client's own events.
	Context context.Context
	// Detail is what the package that told the event adds to it (the
	// recipes: recipes.LockEvent, the kind of recipe and a place in the
	// queue), shown with the event's fields; nil for the client's own
	// events.
	Detail EventDetail

	// Recipe is the kind of recipe of a recipe's event.
	//
	// Deprecated: the recipes' events carry it in their Detail
	// (recipes.LockEventOf(e).Recipe); the recipes fill this field too, for
	// one release.
	Recipe string
	// Position is a node's place in the queue at its first look (a
	// recipe's Acquired).
	//
	// Deprecated: the recipes' events carry it in their Detail
	// (recipes.LockEventOf(e).Position); the recipes fill this field too,
	// for one release.
	Position int
}

// EventDetail is what a package built on the client adds to its events
// (Event.Detail): fields of its own, which it shows as the event's log
// line, String and MarshalLogObject show the event's.
type EventDetail interface {
	// EachField calls f with each field the detail shows for e, its event:
	// its own, and what e's kind measures of e's (a wait, a hold).
	EachField(e Event, f func(key string, value any))
}

// EventHook hears a client's events, and those of the packages built on it
// (the recipes'). A client may have several (WithEventHook): each hears
// every event, in the order they were added. A hook is called on a
// goroutine of the client's, one event at a time, in the order they
// happened: it never holds the library up (a slow hook only makes its
// events come later), and it is never called under a lock of the library's
// or on go-zookeeper's goroutines. Past maxQueuedEvents (10000) notes
// waiting for a slow hook or log sink, events are dropped, DEBUG ones
// first, but never the end of what the hook heard begin (an event of a kind
// NewEndEventKind made: the recipes' acquisitions' grants and failures,
// their grants' releases and losses, their terms' ends): what began with an
// event that was dropped is not told at all, so that gauges built on the
// events stay true. A WARN says when dropping begins and ends;
// Client.EventsDropped counts what was dropped. A slow hook delays the
// hooks after it too. A hook that panics is logged at ERROR; the library,
// and the hooks after it, go on. The client's Close does not wait for the
// hooks: the events queued before it, and those that come after it (a
// waiter's last failure, a holder's loss), are still told, in order, on a
// goroutine of the client's that ends once none is left.
type EventHook interface {
	// Event is called with each event.
	Event(Event)
}

// EventFunc is a func as an EventHook.
type EventFunc func(Event)

// Event calls f(e).
func (f EventFunc) Event(e Event) { f(e) }

// WithEventHook adds a hook that hears the client's events, and those of
// the packages built on it (see EventHook and Event). Each WithEventHook adds one: a second
// does not replace the first, and the hooks hear each event in the order
// they were added (otelmetrics' and your own, say). Without any, an event
// costs a check, and a log line where the logger's level asks for it. A nil
// hook makes New fail with ErrInvalidArgument.
func WithEventHook(h EventHook) Option {
	return optionFunc(func(c *config) { c.eventHooks = append(c.eventHooks, h) })
}

// maxQueuedEvents bounds the notes (events and log lines) that may be
// dropped while they wait for a slow hook or log sink (outbox.go).
const maxQueuedEvents = 10000

// Observed reports whether events are heard: a hook is added, or the
// client's logger takes DEBUG lines. A recipe may skip what it would only
// measure for an event (a time.Now) when nothing hears it.
func (c *Client) Observed() bool { return c.Hears(anyKind) }

// anyKind is a kind of the lowest level: heard if anything is.
var anyKind = EventKind{level: zapcore.DebugLevel}

// Hears reports whether an event of kind k would be heard now: a hook is
// added, or the client's logger takes k's level. A package may skip
// building an event nothing would hear.
func (c *Client) Hears(k EventKind) bool {
	return c.usable() && (len(c.hooks) > 0 || c.log.Core().Enabled(k.level))
}

// Emit reports e to the hooks, if any, and to the client's logger,
// and reports whether e was dropped because they are too slow (see
// EventHook): the package that told it then tells nothing more of what e
// began. The log level is e's kind's (NewEventKind): the client's own
// retries at DEBUG, its state changes and sessions given up at INFO.
// Packages built on the client (the recipes) report their events with it;
// a zero Time is now. It never blocks, and runs no user code but the
// logger's level check: the hook and the log sink hear e on the client's
// goroutine, after Close too (see EventHook).
func (c *Client) Emit(e Event) (dropped bool) {
	if !c.usable() {
		return false
	}
	level := e.Kind.level
	logged := c.log.Core().Enabled(level)
	if !logged && len(c.hooks) == 0 {
		return false // nothing hears it
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	return !c.out.push(note{event: e, logged: logged, level: level})
}

// EventsDropped returns how many events and log lines the client has
// dropped because its hook or log sink was too slow (see EventHook).
func (c *Client) EventsDropped() uint64 {
	if !c.usable() {
		return 0
	}
	return c.out.dropped.Load()
}

// deliver hands a note to the user's log sink and hooks (each in turn), on
// the outbox's goroutine. A hook that panics is logged at ERROR; a sink that panics
// loses that line.
func (c *Client) deliver(n note) {
	if l := n.line; l != nil {
		core, entry := l.core, l.entry
		if core == nil { // the outbox's own, about now
			core = c.sink.Core()
			entry.LoggerName, entry.Time = c.sink.Name(), time.Now()
		}
		writeLine(core, entry, l.fields)
		return
	}
	e := n.event
	if n.logged { // stamped when it happened, not when its turn came
		writeLine(c.sink.Core(), zapcore.Entry{LoggerName: c.sink.Name(), Time: e.Time, Level: n.level, Message: e.Kind.String()}, e.fields())
	}
	for _, h := range c.hooks {
		if err := listeners.Safe(func() { h.Event(e) }); err != nil {
			c.log.Error("event hook", zap.Stringer("event", e.Kind), zap.Error(err))
		}
	}
}

// writeLine writes a line to core as zap does, to every core it composes
// (hooks included); a core that panics loses that line.
func writeLine(core zapcore.Core, entry zapcore.Entry, fields []zapcore.Field) {
	_ = listeners.Safe(func() {
		if ce := core.Check(entry, nil); ce != nil {
			ce.Write(fields...)
		}
	})
}

// fields are e's log fields.
func (e Event) fields() []zap.Field {
	fields := make([]zap.Field, 0, 8)
	e.each(func(key string, value any) { fields = append(fields, zap.Any(key, value)) })
	return fields
}

// each calls f with each of e's fields that apply to its kind, as its log
// line, String and MarshalLogObject show them: what it concerns (path,
// node, session), its detail's fields (a package's own, and what its kind
// measures), the client's own kinds' fields, then why (the error). A field
// of its kind that is zero still shows; one of another kind never does.
func (e Event) each(f func(key string, value any)) {
	if e.Path != "" {
		f("path", e.Path)
	}
	if e.Node != "" {
		f("node", e.Node)
	}
	if e.Session != 0 {
		f("session", zkconn.SessionString(e.Session))
	}
	if e.Detail != nil {
		e.Detail.EachField(e, f)
	}
	switch e.Kind {
	case StateChanged:
		f("state", e.State)
	case Retrying:
		f("op", e.Op)
		f("retry", e.Retry)
		f("wait", e.Wait)
	}
	if e.Err != nil {
		f("error", e.Err)
	}
}

// String returns e as its kind and the fields that apply to it, as its log
// line shows them: "state-changed session=0x1f2e3d state=SUSPENDED". Its
// Time and Context are left out.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(e.Kind.String())
	e.each(func(key string, value any) {
		v := fmt.Sprint(value)
		if v == "" || strings.ContainsAny(v, " \t\n\"=") {
			v = strconv.Quote(v)
		}
		b.WriteString(" " + key + "=" + v)
	})
	return b.String()
}

// MarshalLogObject writes e's kind and the fields that apply to it, for
// zap.Object("event", e) (a zapcore.ObjectMarshaler).
func (e Event) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("kind", e.Kind.String())
	for _, f := range e.fields() {
		f.AddTo(enc)
	}
	return nil
}
