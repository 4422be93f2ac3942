package framework

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/state"
)

// Each WithEventHook adds a hook: every hook hears every event, in the
// order the hooks were added, and one that panics (logged at ERROR) does
// not keep the event from the hooks after it. A nil hook among others is
// refused.
func TestEventHooksAllHearInOrder(t *testing.T) {
	testutil.CheckLeaks(t)
	if _, err := New(server.Addr(), nil, WithEventHook(EventFunc(func(Event) {})), WithEventHook(nil)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("New with a nil hook after another = %v", err)
	}

	type heard struct {
		hook string
		e    Event
	}
	ch := make(chan heard, 64)
	hook := func(name string, then func()) Option {
		return WithEventHook(EventFunc(func(e Event) {
			send(ch, heard{name, e})
			then()
		}))
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	c := newClient(t, server.Addr(), WithLogger(zap.New(core)),
		hook("first", func() {}),
		hook("panics", func() { panic("a hook's bug") }),
		hook("last", func() {}))
	var got []string // up to the last hook's: the others are called before it
	for len(got) == 0 || got[len(got)-1] != "last" {
		h := testutil.Recv(t, ch, "the first event, told to each hook")
		if h.e.Kind != StateChanged || h.e.State != state.Connected {
			t.Fatalf("%s heard %s first, want CONNECTED", h.hook, h.e)
		}
		got = append(got, h.hook)
	}
	if len(got) != 3 || got[0] != "first" || got[1] != "panics" {
		t.Fatalf("the hooks heard the event in the order %q, want first, panics, last", got)
	}
	c.Close()
	testutil.Recv(t, c.Closed(), "everything told") // Close does not wait for the hooks and the sink
	if logs.FilterMessage("event hook").Len() == 0 {
		t.Fatal("the hook's panic was not logged")
	}
}
