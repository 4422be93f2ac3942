package framework

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/state"
)

// blockingCore is a log sink that blocks every write while it is shut,
// and calls back into the client as it writes (a sink that reads the
// client's state is the user's right): written under a lock of the
// client's, or on go-zookeeper's goroutine, it would stall the client.
type blockingCore struct {
	zapcore.Core
	mu     sync.Mutex
	shut   chan struct{} // nil: open
	c      *Client
	writes int // writes begun while shut
}

func (b *blockingCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	return ce.AddCore(e, b)
}

func (b *blockingCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	b.mu.Lock()
	shut, c, core := b.shut, b.c, b.Core
	if shut != nil {
		b.writes++
	}
	b.mu.Unlock()
	if c != nil {
		_ = c.State()
	}
	if shut != nil {
		<-shut
	}
	return core.Write(e, fields)
}

func (b *blockingCore) With([]zapcore.Field) zapcore.Core { return b }

func (b *blockingCore) Enabled(zapcore.Level) bool { return true } // every line, DEBUG included

// A log sink that blocks (and reads the client's state as it writes) holds
// nothing of the library up: the client changes state at a blip, its
// listeners hear it, and its calls go on, while every line waits. The
// lines come once the sink opens.
func TestSlowLogSinkDoesNotStallTheClient(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	sink := &blockingCore{Core: zapcore.NewNopCore()}
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), WithListener(rec), WithLogger(zap.New(sink)))
	open := make(chan struct{})
	sink.mu.Lock()
	sink.shut, sink.c = open, c
	sink.mu.Unlock()
	var opened sync.Once
	openSink := func() { opened.Do(func() { close(open) }) }
	t.Cleanup(openSink) // before the client's Close, which writes what is left
	proxy.DropConnections()
	rec.WaitFor(ctx, t, state.Suspended)
	rec.WaitFor(ctx, t, state.Reconnected)
	for i := range 20 {
		if _, _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatalf("call %d while the sink is blocked: %v", i, err)
		}
	}
	shutWrites := func() int {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return sink.writes
	}
	testutil.Until(t, "the sink's first write, which blocks", func() (bool, string) {
		return shutWrites() > 0, "none begun"
	})
	if writes := shutWrites(); writes > 1 {
		t.Fatalf("%d lines written while the sink blocks in its first: not one at a time, in order", writes)
	}
	// Opened, the sink gets the lines that waited: RECONNECTED's among them
	// (the first, which began while shut, was written to the shut core).
	core, logs := observer.New(zapcore.DebugLevel)
	sink.mu.Lock()
	sink.shut, sink.Core = nil, core
	sink.mu.Unlock()
	openSink()
	testutil.Until(t, "the lines that waited, once the sink opens", func() (bool, string) {
		n := logs.FilterMessage(StateChanged.String()).Len()
		return n >= 1, fmt.Sprintf("%d state changes written", n)
	})
}

// A hook too slow for the events: past the bound, starts are dropped (and
// say so: Emit reports it) but never an end of a start that was taken, so
// that a gauge built on the events comes back to zero; the queue never
// holds more droppable notes than its bound; a WARN says when the episode
// begins and when it ends, with what it dropped; EventsDropped counts it.
func TestOverflowKeepsEveryEndAndSaysSo(t *testing.T) {
	testutil.CheckLeaks(t)
	const pairs = 3 * maxQueuedEvents
	core, logs := observer.New(zapcore.WarnLevel)
	open := make(chan struct{})
	var mu sync.Mutex
	started, ended := map[string]bool{}, 0
	var orphans []string
	var opened sync.Once
	openHook := func() { opened.Do(func() { close(open) }) }
	c := newClient(t, server.Addr(), WithLogger(zap.New(core)), WithEventHook(EventFunc(func(e Event) {
		<-open
		mu.Lock()
		defer mu.Unlock()
		switch e.Kind {
		case testBegan:
			started[e.Path] = true
		case testEnded:
			if !started[e.Path] {
				orphans = append(orphans, e.Path)
			}
			ended++
		}
	})))
	t.Cleanup(openHook) // a failure below must not leave the hook blocked for the leak check
	dropped := 0
	most := 0
	for i := range pairs {
		p := fmt.Sprintf("/p%d", i)
		if c.Emit(Event{Kind: testBegan, Path: p}) {
			dropped++
			continue
		}
		c.Emit(Event{Kind: testEnded, Path: p})
		most = max(most, c.out.q.Len())
	}
	if dropped == 0 || uint64(dropped) != c.EventsDropped() {
		t.Fatalf("%d starts dropped, EventsDropped %d: want some, counted", dropped, c.EventsDropped())
	}
	if told := pairs - dropped; most > maxQueuedEvents+2 {
		t.Fatalf("%d notes queued at most (%d pairs taken): the bound is %d, and ends of taken starts", most, told, maxQueuedEvents)
	}
	openHook()
	testutil.Until(t, "every end of a taken start heard", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return ended == pairs-dropped, fmt.Sprintf("%d of %d", ended, pairs-dropped)
	})
	mu.Lock()
	if len(orphans) > 0 || len(started) != pairs-dropped {
		t.Fatalf("%d ends heard without their start (%v...), %d starts heard, want %d", len(orphans), orphans[:min(3, len(orphans))], len(started), pairs-dropped)
	}
	mu.Unlock()
	testutil.Until(t, "a WARN as the episode began, and one as it ended", func() (bool, string) {
		var msgs []string
		var ours []observer.LoggedEntry
		for _, e := range logs.All() {
			msgs = append(msgs, e.Message)
			if strings.Contains(e.Message, "dropped") || strings.Contains(e.Message, "overflow") {
				ours = append(ours, e)
			}
		}
		return len(ours) == 2 && strings.Contains(ours[0].Message, "dropped") && strings.Contains(ours[1].Message, "over") &&
			ours[1].ContextMap()["dropped"] == uint64(dropped), strings.Join(msgs, " | ")
	})
}

// An event's log line carries the event's time, not the time the outbox
// got to write it: behind a slow sink the lines keep their order in time
// with the client's other lines.
func TestEventLineKeepsTheEventsTime(t *testing.T) {
	testutil.CheckLeaks(t)
	core, logs := observer.New(zapcore.DebugLevel)
	c := newClient(t, server.Addr(), WithLogger(zap.New(core)))
	at := time.Now().Add(-time.Hour).Round(0)
	c.Emit(Event{Kind: Lost, Recipe: "mutex", Path: "/x", Time: at})
	testutil.Until(t, "the Lost event's line", func() (bool, string) {
		lines := logs.FilterMessage(Lost.String()).All()
		if len(lines) == 0 {
			return false, "not written yet"
		}
		if !lines[0].Time.Equal(at) {
			t.Fatalf("the line of an event at %v is stamped %v", at.Format(time.TimeOnly), lines[0].Time.Format(time.TimeOnly))
		}
		return true, ""
	})
}

// mutable is what a caller logs and then changes: a Stringer, an
// ObjectMarshaler and an error, all over one field.
type mutable struct{ v string }

func (m *mutable) String() string { return m.v }
func (m *mutable) Error() string  { return m.v }
func (m *mutable) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("v", m.v)
	return nil
}

// lineBuffer is a log sink's output, written and read on different
// goroutines.
type lineBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lineBuffer) line(msg string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, `"msg":"`+msg+`"`) {
			return l
		}
	}
	return ""
}

// The fields of a line logged through Client.Logger are encoded at the
// call: a caller that changes what it logged as soon as the call returns
// (the line still waits for a slow sink) gets the values at the call in
// the line, and no data race. They used to be encoded by the outbox's
// goroutine as it wrote the line: later values.
func TestLoggedFieldsAreEncodedAtTheCall(t *testing.T) {
	testutil.CheckLeaks(t)
	var out lineBuffer
	sink := &blockingCore{Core: zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&out), zapcore.DebugLevel)}
	c := newClient(t, server.Addr(), WithLogger(zap.New(sink)))
	open := make(chan struct{})
	sink.mu.Lock()
	sink.shut = open
	sink.mu.Unlock()
	var opened sync.Once
	openSink := func() { opened.Do(func() { close(open) }) }
	t.Cleanup(openSink)

	m := &mutable{"at the call"}
	counts := map[string]int{"n": 1}
	raw := []byte("at the call")
	ints := []int{1}
	c.Logger().Info("fields", zap.Stringer("stringer", m), zap.Object("object", m), zap.Error(m),
		zap.Any("map", counts), zap.ByteString("bytes", raw), zap.Ints("ints", ints), zap.Int("int", 1))
	m.v, counts["n"], ints[0] = "later", 2, 2
	copy(raw, "later")
	openSink()
	var line string
	testutil.Until(t, "the line, once the sink opens", func() (bool, string) {
		line = out.line("fields")
		return line != "", "not written yet"
	})
	for _, want := range []string{`"stringer":"at the call"`, `"object":{"v":"at the call"}`, `"error":"at the call"`,
		`"map":{"n":1}`, `"bytes":"at the call"`, `"ints":[1]`, `"int":1`} {
		if !strings.Contains(line, want) {
			t.Errorf("the line lacks %s, the value at the call: %s", want, line)
		}
	}
}
