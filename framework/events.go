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

// EventKind says what an Event reports.
type EventKind int

// The kinds of events. A lock's or lease's acquisition is AcquireStarted,
// then Acquired or AcquireFailed, then (once acquired) Released or Lost,
// exactly one of the two: a lost grant's late release is not an event of
// its own. A term of leadership is LeadershipGained, then LeadershipLost.
const (
	// AcquireStarted: an acquire began to queue (a reentrant one that only
	// counts up is no event).
	AcquireStarted EventKind = iota + 1
	// Acquired: the lock or lease was granted. Wait is the time since
	// AcquireStarted, Position the node's place in the queue at its first
	// look (0: it held at once).
	Acquired
	// AcquireFailed: the acquire gave up; Err says why (a context's
	// deadline: a timeout; ErrLocked: a try that found it held).
	AcquireFailed
	// Released: the owner released what it held; Hold is the time since
	// Acquired.
	Released
	// Lost: the grant can no longer be trusted. Err says why (a *StateError,
	// ErrClosed, or zk.ErrNoNode for a node found gone); Hold is the time it
	// was held.
	Lost
	// RevocationRequested: another participant asked the holder to
	// release (Curator's revocation).
	RevocationRequested
	// LeadershipGained: a leader latch or selector began to lead.
	LeadershipGained
	// LeadershipLost: its term of leadership ended (lost, given up, or
	// closed). Err says why, nil when given up; Hold is the term's length.
	LeadershipLost
	// StateChanged: the connection state changed to State.
	StateChanged
	// Retrying: an operation (Op, on Path) failed with Err and is tried
	// again after Wait; Retry counts the retries so far.
	Retrying
	// SessionAbandoned: the client gave Session up after posting LOST (no
	// server answered before it could expire), and moved to a new one.
	SessionAbandoned
	// NodeCreated: a persistent node (recipes/nodes) created its Node, at
	// its start or again after it was found gone (deleted, or its session
	// ended), in Session.
	NodeCreated
	// BarrierPassed: a member passed a barrier (recipes/barriers): Op is
	// "wait" (a DistributedBarrier was removed), "enter" or "leave" (every
	// member of a DistributedDoubleBarrier had entered, or left); Wait is
	// the time it waited.
	BarrierPassed
	// CacheStale: a cache (package recipes/cache) at Path may miss changes
	// from now on, and says so: its watch lapsed (the connection dropped)
	// or a read failed. Err says why.
	CacheStale
	// CacheCurrent: a cache at Path has read its tree, at first or again
	// after CacheStale, and follows its changes: Wait is the time since it
	// started, or since it went stale.
	CacheCurrent
)

var eventNames = [...]string{
	AcquireStarted:      "acquire-started",
	Acquired:            "acquired",
	AcquireFailed:       "acquire-failed",
	Released:            "released",
	Lost:                "lost",
	RevocationRequested: "revocation-requested",
	LeadershipGained:    "leadership-gained",
	LeadershipLost:      "leadership-lost",
	StateChanged:        "state-changed",
	Retrying:            "retrying",
	SessionAbandoned:    "session-abandoned",
	NodeCreated:         "node-created",
	BarrierPassed:       "barrier-passed",
	CacheStale:          "cache-stale",
	CacheCurrent:        "cache-current",
}

// String returns the kind's name, as the logs show it: "acquired", ....
func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventNames) {
		return eventNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one thing that happened to a client or to a recipe built on it. It
// may be a lock acquired, lost or released, leadership gained, a connection
// state change, a retry. Fields that do not apply to its Kind are zero.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Time is when it happened (events reach the hook a moment later).
	Time time.Time
	// Recipe is the kind of recipe: "mutex", "read", "write", "semaphore"
	// (a lease, also a semaphore mutex's), "latch", "selector",
	// "persistent-node", "persistent-ttl-node", "barrier",
	// "double-barrier", "atomic" (an atomic value's optimistic tries,
	// Retrying), "cache"; "" for the client's own events.
	Recipe string
	// Path is the recipe's path (or the operation's), as the caller gave
	// it; Node is the node's path, when there is one.
	Path, Node string
	// Session is the session the node belongs to, or the client's.
	Session int64
	// Position is the node's place in the queue at its first look
	// (Acquired; 0 when it held at once).
	Position int
	// Wait is the time an acquire waited (Acquired, AcquireFailed), the
	// wait before a retry (Retrying), or the time a member waited at a
	// barrier (BarrierPassed).
	Wait time.Duration
	// Hold is the time a grant or a term was held (Released, Lost,
	// LeadershipLost).
	Hold time.Duration
	// Err says why (Lost, AcquireFailed, LeadershipLost, Retrying).
	Err error
	// State is the new connection state (StateChanged).
	State state.ConnectionState
	// Op is the operation retried, and Retry the retries made so far
	// (Retrying); or the barrier's step passed (BarrierPassed).
	Op    string
	Retry int
	// Context carries the values of the context the acquire was called
	// with (AcquireStarted, Acquired, AcquireFailed, and the Released or
	// Lost that ends its grant), without its deadline or cancellation: a
	// hook finds the caller's trace span there, say. Nil for other events.
	Context context.Context
}

// EventHook hears a client's events, and its recipes'. A client may have
// several (WithEventHook): each hears every event, in the order they were
// added. A hook is called on a goroutine of the client's, one event at a
// time, in the order they happened: it never holds the library up (a slow
// hook only makes its events come later), and it is never called under a
// lock of the library's or on go-zookeeper's goroutines. Past maxQueuedEvents (10000) notes waiting for
// a slow hook or log sink, events are dropped, DEBUG ones first, but never
// the end of what the hook heard begin (an acquisition's Acquired or
// AcquireFailed, a grant's Released or Lost, a term's LeadershipLost): an
// acquisition whose start was dropped is not told at all, so that gauges
// built on the events stay true. A WARN says when dropping begins and ends;
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

// WithEventHook adds a hook that hears the client's events, and its
// recipes' (see EventHook and Event). Each WithEventHook adds one: a second
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
func (c *Client) Observed() bool {
	return c.usable() && (len(c.hooks) > 0 || c.log.Core().Enabled(zapcore.DebugLevel))
}

// Emit reports e to the hooks, if any, and to the client's logger,
// and reports whether e was dropped because they are too slow (see
// EventHook): a recipe then tells nothing more of what e began. The log
// level is e's kind's: DEBUG for an acquisition's steps, a retry,
// leadership gained and a barrier passed; INFO for a loss, a revocation
// asked, leadership lost, a state change, a session given up, a persistent
// node created and a cache gone stale or current again. Recipes built on
// the client report
// their events with it; a zero Time is now. It never blocks, and runs no
// user code but the logger's level check: the hook and the log sink hear e
// on the client's goroutine, after Close too (see EventHook).
func (c *Client) Emit(e Event) (dropped bool) {
	if !c.usable() {
		return false
	}
	level := e.Kind.level()
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

// level is the level events of kind k are logged at.
func (k EventKind) level() zapcore.Level {
	switch k {
	case Lost, RevocationRequested, LeadershipLost, StateChanged, SessionAbandoned, NodeCreated, CacheStale, CacheCurrent:
		return zapcore.InfoLevel
	}
	return zapcore.DebugLevel
}

// fields are e's log fields.
func (e Event) fields() []zap.Field {
	fields := make([]zap.Field, 0, 8)
	e.each(func(key string, value any) { fields = append(fields, zap.Any(key, value)) })
	return fields
}

// each calls f with each of e's fields that apply to its kind, as its log
// line, String and MarshalLogObject show them: what it concerns (recipe,
// path, node, session), what its kind measures, then why (the error). A
// field of its kind that is zero still shows (a position 0: held at once);
// one of another kind never does.
func (e Event) each(f func(key string, value any)) {
	if e.Recipe != "" {
		f("recipe", e.Recipe)
	}
	if e.Path != "" {
		f("path", e.Path)
	}
	if e.Node != "" {
		f("node", e.Node)
	}
	if e.Session != 0 {
		f("session", zkconn.SessionString(e.Session))
	}
	switch e.Kind {
	case Acquired:
		f("position", e.Position)
		f("wait", e.Wait)
	case AcquireFailed:
		f("wait", e.Wait)
	case Released, Lost, LeadershipLost:
		f("hold", e.Hold)
	case StateChanged:
		f("state", e.State)
	case Retrying:
		f("op", e.Op)
		f("retry", e.Retry)
		f("wait", e.Wait)
	case BarrierPassed:
		f("op", e.Op)
		f("wait", e.Wait)
	case CacheCurrent:
		f("wait", e.Wait)
	}
	if e.Err != nil {
		f("error", e.Err)
	}
}

// String returns e as its kind and the fields that apply to it, as its log
// line shows them: "acquired recipe=mutex path=/locks/a node=… position=0
// wait=1.2ms". Its Time and Context are left out.
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
