package recipes_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// heardValues returns a listener for a recipes.SharedValue and a channel of what it
// hears.
func heardValues() (func([]byte), chan string) {
	heard := make(chan string, 100)
	return func(v []byte) { heard <- string(v) }, heard
}

// waitHeard waits until the listener has heard want, skipping what came
// before.
func waitHeard(t *testing.T, heard <-chan string, want string) {
	t.Helper()
	for {
		if got := testutil.Recv(t, heard, "the listener hearing "+want); got == want {
			return
		}
	}
}

// Two participants share a value: the node is made with the seed, bytes as
// they are; each sees the other's sets through its listener; TrySetValue
// sets only on the value it was given, and otherwise leaves the newer one
// in Value; a version of -1 cannot be compared.
func TestSharedValue(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	path := base + "/value"
	a := must(recipes.NewSharedValue(newClient(t, ""), path, []byte("seed"))).get(t)
	b := must(recipes.NewSharedValue(newClient(t, ""), path, []byte("other seed"))).get(t)
	defer a.Close()
	defer b.Close()
	if vv := a.VersionedValue(); string(vv.Value) != "seed" || vv.Version != -1 || vv.Zxid != -1 {
		t.Fatalf("before Start: %+v", vv)
	}
	testutil.ErrorIs(t, a.SetValue(ctx, []byte("x")), recipes.ErrInvalidState, "not started")
	listen, heard := heardValues()
	a.AddListener(listen)
	testutil.Must(t, a.Start(ctx))
	testutil.Must(t, b.Start(ctx))
	if string(b.Value()) != "seed" {
		t.Fatalf("b reads %q, want the node's seed", b.Value())
	}
	testutil.ErrorIs(t, a.Start(ctx), recipes.ErrInvalidState, "started twice")

	testutil.Must(t, b.SetValue(ctx, []byte("one")))
	waitHeard(t, heard, "one")
	if string(a.Value()) != "one" {
		t.Fatalf("a's Value %q after its listener heard one", a.Value())
	}

	stale := b.VersionedValue()
	testutil.Must(t, a.SetValue(ctx, []byte("two")))
	testutil.Until(t, "b seeing two", func() (bool, string) { return string(b.Value()) == "two", string(b.Value()) })
	if ok, err := b.TrySetValue(ctx, stale, []byte("three")); err != nil || ok {
		t.Fatalf("TrySetValue on a stale value: %v, %v", ok, err)
	}
	// A stale value that b has not seen as stale (its watching goroutine
	// is held in a listener): the server refuses it, and b reads the newer
	// one.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	b.AddListener(func(v []byte) {
		if string(v) == "three-a" {
			once.Do(func() { close(held) })
			<-release
		}
	})
	testutil.Must(t, a.SetValue(ctx, []byte("three-a")))
	testutil.Recv(t, held, "b's listener hearing three-a")
	cur := b.VersionedValue()
	testutil.Must(t, a.SetValue(ctx, nil))
	ok, err := b.TrySetValue(ctx, cur, []byte("four"))
	close(release)
	if err != nil || ok {
		t.Fatalf("TrySetValue on a value changed meanwhile: %v, %v", ok, err)
	}
	if v := b.Value(); v == nil || len(v) != 0 {
		t.Fatalf("after a refused TrySetValue, Value is %q, want the newer (empty) one", v)
	}
	cur = b.VersionedValue()
	if ok, err := b.TrySetValue(ctx, cur, []byte("five")); err != nil || !ok {
		t.Fatalf("TrySetValue on the current value: %v, %v", ok, err)
	}
	waitHeard(t, heard, "five")
	raw, _, err := rawConn(t).Get(path)
	testutil.Must(t, err)
	if !bytes.Equal(raw, []byte("five")) {
		t.Fatalf("the node holds %q", raw)
	}
	overflowed := b.VersionedValue()
	overflowed.Version = -1
	_, err = b.TrySetValue(ctx, overflowed, []byte("six"))
	testutil.ErrorIs(t, err, framework.ErrInvalidArgument, "ZOOKEEPER-4743")
}

// A shared value follows its node through a session the server expires
// (its watch goes with the session; it reads the node again in the new
// one) and through the node's delete and re-creation.
func TestSharedValueFaults(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	path := base + "/value"
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(time.Second))
	v := must(recipes.NewSharedValue(c, path, []byte("seed"))).get(t)
	defer v.Close()
	listen, heard := heardValues()
	v.AddListener(listen)
	testutil.Must(t, v.Start(ctx))
	other := newClient(t, "")
	setter := must(recipes.NewSharedValue(other, path, nil)).get(t)
	defer setter.Close()
	testutil.Must(t, setter.Start(ctx))

	testutil.Must(t, proxy.ExpireSession(c.SessionID()))
	testutil.Must(t, setter.SetValue(ctx, []byte("after expiry")))
	waitHeard(t, heard, "after expiry")

	proxy.DropConnections()
	testutil.Must(t, setter.SetValue(ctx, []byte("after a drop")))
	waitHeard(t, heard, "after a drop")

	testutil.Must(t, other.Delete(ctx, path))
	_, err := other.Create(ctx, path, []byte("made again"))
	testutil.Must(t, err)
	waitHeard(t, heard, "made again")
}

// Close never waits for a listener: one that closes its value returns.
func TestSharedValueClosedFromItsListener(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	v := must(recipes.NewSharedValue(newClient(t, ""), base+"/value", nil)).get(t)
	closed := make(chan error, 1)
	v.AddListener(func([]byte) { closed <- v.Close() })
	testutil.Must(t, v.Start(ctx))
	testutil.Must(t, v.SetValue(ctx, []byte("x")))
	testutil.Must(t, testutil.Recv(t, closed, "Close from the value's listener"))
	testutil.ErrorIs(t, v.SetValue(ctx, []byte("y")), recipes.ErrInvalidState)
	testutil.Must(t, v.Close()) // idempotent
}
