package framework

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/state"
)

// The event hook never holds the library up, and its panics do not take
// the process down: with a hook that blocks (until the test ends) the
// client still works and changes state; with one that panics, each panic
// is logged at ERROR and the events after it still come. A nil hook is
// refused.
func TestEventHookNeverHoldsTheLibrary(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	if _, err := New(server.Addr(), nil, WithEventHook(nil)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("New with a nil hook = %v", err)
	}

	release := make(chan struct{})
	blocked := make(chan Event, 1)
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c := newClient(t, proxy.Addr(), WithListener(rec), WithEventHook(EventFunc(func(e Event) {
		select {
		case blocked <- e:
		default:
		}
		<-release
	})))
	t.Cleanup(func() { close(release) }) // before the client's Close, which delivers what is left
	testutil.Recv(t, blocked, "the first event")
	for range 50 {
		if _, _, err := c.Exists(ctx, "/"); err != nil {
			t.Fatal(err)
		}
	}
	proxy.DropConnections()
	rec.WaitFor(ctx, t, state.Suspended)
	rec.WaitFor(ctx, t, state.Reconnected)

	core, logs := observer.New(zapcore.ErrorLevel)
	heard := make(chan Event, 16)
	proxy2 := zktest.NewProxy(t, server.Addr())
	newClient(t, proxy2.Addr(), WithLogger(zap.New(core)), WithEventHook(EventFunc(func(e Event) {
		send(heard, e)
		panic("a hook's bug")
	})))
	testutil.Recv(t, heard, "the first event")
	proxy2.DropConnections()
	for {
		e := testutil.Recv(t, heard, "the events after a panic")
		if e.Kind == StateChanged && e.State == state.Reconnected {
			break
		}
	}
	if logs.FilterMessage("event hook").Len() == 0 {
		t.Fatal("the hook's panics were not logged")
	}
}

// An event emitted after Close, by a goroutine that holds a lock the hook
// takes (a recipe's, as a Handle's mutex): the hook hears it on the
// client's goroutine, not on the emitter's, so Emit returns and the hook
// gets the lock once the emitter lets it go. Emit after Close used to call
// the hook on the emitter's goroutine, under its lock.
func TestEmitAfterCloseRunsNoHookOnTheCaller(t *testing.T) {
	testutil.CheckLeaks(t)
	const bound = 10 * time.Second
	lock := make(chan struct{}, 1) // the emitter's lock
	heard := make(chan string, 1)
	c := newClient(t, server.Addr(), WithEventHook(EventFunc(func(e Event) {
		if e.Path != "/after-close" {
			return
		}
		select {
		case lock <- struct{}{}:
			<-lock
			heard <- ""
		case <-time.After(bound):
			heard <- "the hook ran on the emitter's goroutine, under its lock"
		}
	})))
	testutil.Must(t, c.Close())
	lock <- struct{}{}
	c.Emit(Event{Kind: testEnded, Path: "/after-close"})
	<-lock
	if why := testutil.Recv(t, heard, "the event emitted after Close"); why != "" {
		t.Fatal(why)
	}
}

// Close waits for no hook: with a hook blocked on an event and another
// event queued behind it, Close returns; Closed stays open until the hook
// has heard both, and then closes.
func TestClosedTellsWhenTheHooksHaveHeardAll(t *testing.T) {
	testutil.CheckLeaks(t)
	release := make(chan struct{})
	blocked := make(chan struct{})
	var heard []string
	c := newClient(t, server.Addr(), WithEventHook(EventFunc(func(e Event) {
		switch e.Path {
		case "/blocks":
			close(blocked)
			<-release
		case "/queued":
		default:
			return
		}
		heard = append(heard, e.Path) // one hook call at a time
	})))
	select {
	case <-c.Closed():
		t.Fatal("Closed before Close")
	default:
	}
	c.Emit(Event{Kind: testEnded, Path: "/blocks"})
	testutil.Recv(t, blocked, "the hook blocked")
	c.Emit(Event{Kind: testEnded, Path: "/queued"})
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	testutil.Must(t, testutil.Recv(t, closed, "Close, while a hook blocks"))
	select {
	case <-c.Closed():
		t.Fatal("Closed while the hook still blocks")
	default:
	}
	close(release)
	testutil.Recv(t, c.Closed(), "Closed, once the hook has heard all")
	if len(heard) != 2 || heard[1] != "/queued" {
		t.Fatalf("the hook heard %q by Closed, want /blocks then /queued", heard)
	}
}
