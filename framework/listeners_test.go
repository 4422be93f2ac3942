package framework

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// Listeners hear each change in the order they were added (ten of them, at
// CONNECTED and at SUSPENDED); a nil listener given to New is refused, one
// given to AddListener ignored; a listener that panics is logged at ERROR,
// once per change (SUSPENDED, RECONNECTED), and the listeners after it are
// still called: a listener's bug does not take the process down.
func TestListenersInOrderAndMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	for _, l := range []state.Listener{nil, state.ListenerFunc(nil)} {
		if _, err := New(server.Addr(), retry.NewOneTime(0), WithListener(l)); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("New with WithListener(%#v) = %v, want ErrInvalidArgument", l, err)
		}
	}
	heard := make(chan string, 64)
	var opts []Option
	for i := range 10 {
		opts = append(opts, WithListener(state.ListenerFunc(func(s state.ConnectionState) {
			send(heard, fmt.Sprintf("%d:%v", i, s))
		})))
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr(), append(opts, WithLogger(zap.New(core)))...)
	var got []string
	for range 10 {
		got = append(got, testutil.Recv(t, heard, "CONNECTED"))
	}
	c.AddListener(nil)
	c.AddListener(state.ListenerFunc(nil))
	c.AddListener(state.ListenerFunc(func(s state.ConnectionState) { panic("a listener's bug") }))
	c.AddListener(state.ListenerFunc(func(s state.ConnectionState) { send(heard, "last:"+s.String()) }))
	proxy.DropConnections()
	for range 11 {
		got = append(got, testutil.Recv(t, heard, "SUSPENDED"))
	}
	var want []string
	for _, s := range []state.ConnectionState{state.Connected, state.Suspended} {
		for i := range 10 {
			want = append(want, fmt.Sprintf("%d:%v", i, s))
		}
	}
	want = append(want, "last:SUSPENDED")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("heard\n%v\nwant\n%v", got, want)
	}
	if err := c.BlockUntilConnected(ctx); err != nil {
		t.Fatal(err)
	}
	for last := ""; last != "last:RECONNECTED"; {
		last = testutil.Recv(t, heard, "RECONNECTED, told past the panicking listener")
	}
	// The log lines reach the sink on the client's goroutine, a moment later.
	testutil.Until(t, "2 ERRORs of the panicking listener: at SUSPENDED and at RECONNECTED", func() (bool, string) {
		n, all := logs.FilterMessage("connection state listener").Len(), logs.Len()
		return n == 2 && all == 2, fmt.Sprintf("%d of them, %d ERRORs in all", n, all)
	})
}

// send sends v on ch unless ch is full: a listener or hook never blocks
// the library (ch's capacity is more than the test needs).
func send[T any](ch chan<- T, v T) {
	select {
	case ch <- v:
	default:
	}
}
