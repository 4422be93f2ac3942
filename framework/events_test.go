package framework

import (
	"errors"
	"testing"

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
