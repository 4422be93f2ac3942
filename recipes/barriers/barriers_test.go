package barriers_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/recipes/barriers"
)

// passed records the BarrierPassed events a client's hook hears.
type passed struct {
	mu     sync.Mutex
	events []framework.Event
}

func (p *passed) hook() framework.Option {
	return framework.WithEventHook(framework.EventFunc(func(e framework.Event) {
		if e.Kind == barriers.BarrierPassed {
			p.mu.Lock()
			p.events = append(p.events, e)
			p.mu.Unlock()
		}
	}))
}

// steps returns the Op of each event heard, once c has told everything.
func (p *passed) steps(c *framework.Client) []string {
	c.Close()
	<-c.Closed()
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		d, _ := e.Detail.(barriers.BarrierEvent)
		out = append(out, d.Recipe+":"+d.Step)
	}
	return out
}

// A DistributedBarrier holds every waiter back while its node is there
// (a change of its data included), and lets them all go once it is
// removed; a waiter given up leaves the barrier as it was.
func TestDistributedBarrier(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	var heard passed
	c := testclient.New(t, server.Addr(), heard.hook())
	path := base + "/barrier"
	b, err := barriers.NewDistributedBarrier(c, path)
	testutil.Must(t, err)
	testutil.Must(t, b.WaitOnBarrier(ctx)) // no barrier: at once
	testutil.Must(t, b.SetBarrier(ctx))
	testutil.Must(t, b.SetBarrier(ctx)) // there already: no error

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	testutil.ErrorIs(t, b.WaitOnBarrier(short), context.DeadlineExceeded)
	cancel()

	const waiters = 3
	done := make(chan error, waiters)
	for range waiters {
		go func() { done <- b.WaitOnBarrier(ctx) }()
	}
	testutil.Until(t, "the waiters waiting", func() (bool, string) {
		return testutil.Parked("barriers.(*DistributedBarrier).WaitOnBarrier") == waiters, "fewer"
	})
	// A change of the node wakes the waiters; they look, and wait again.
	_, err = c.SetData(ctx, path, []byte("changed"), -1)
	testutil.Must(t, err)
	testutil.Until(t, "the waiters waiting again", func() (bool, string) {
		return testutil.Parked("barriers.(*DistributedBarrier).WaitOnBarrier") == waiters, "fewer"
	})
	select {
	case err := <-done:
		t.Fatalf("a waiter passed the barrier while it stands: %v", err)
	default:
	}
	testutil.Must(t, b.RemoveBarrier(ctx))
	for range waiters {
		testutil.Must(t, testutil.Recv(t, done, "a waiter once the barrier is removed"))
	}
	testutil.Must(t, b.RemoveBarrier(ctx)) // gone already: no error
	if got := heard.steps(c); !slices.Equal(got, slices.Repeat([]string{"barrier:wait"}, waiters+1)) {
		t.Fatalf("events %v", got)
	}
}

// member is a double barrier's member entering or leaving on a goroutine.
type member struct {
	b    *barriers.DistributedDoubleBarrier
	done chan error
}

func newMember(t *testing.T, c *framework.Client, path string, qty int) *member {
	t.Helper()
	b, err := barriers.NewDistributedDoubleBarrier(c, path, qty)
	testutil.Must(t, err)
	return &member{b: b, done: make(chan error, 1)}
}

func (m *member) enter(ctx context.Context) *member {
	go func() { m.done <- m.b.Enter(ctx) }()
	return m
}

func (m *member) leave(ctx context.Context) *member {
	go func() { m.done <- m.b.Leave(ctx) }()
	return m
}

// notYet fails the test if a member's call has returned.
func notYet(t *testing.T, what string, ms ...*member) {
	t.Helper()
	for i, m := range ms {
		select {
		case err := <-m.done:
			t.Fatalf("member %d passed %s early (error %v)", i, what, err)
		default:
		}
	}
}

// waitParked waits until n goroutines are parked in the barrier's wait of
// step (enter or leave).
func waitParked(t *testing.T, step string, n int) {
	t.Helper()
	frame := "barriers.(*DistributedDoubleBarrier)." + step
	testutil.Until(t, "members waiting in "+step, func() (bool, string) {
		return testutil.Parked(frame) == n, "fewer"
	})
}

// members returns the member nodes under path (ready left out).
func members(t *testing.T, c *framework.Client, path string) []string {
	t.Helper()
	kids, _, err := c.Children(testutil.Context(t), path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		t.Fatal(err)
	}
	return slices.DeleteFunc(kids, func(n string) bool { return n == "ready" })
}

// No member passes Enter before memberQty have entered, nor Leave before
// every member has begun to leave; then all pass, and the barrier is left
// empty, "ready" deleted. The nodes are Curator's: members named by
// UUIDs, "ready" beside them.
func TestDistributedDoubleBarrier(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	var heard passed
	c := testclient.New(t, server.Addr(), heard.hook())
	path := base + "/double"
	const qty = 3
	var ms []*member
	for range qty {
		ms = append(ms, newMember(t, c, path, qty))
	}
	ms[0].enter(ctx)
	ms[1].enter(ctx)
	waitParked(t, "enter", 2)
	notYet(t, "Enter", ms...)
	if got := members(t, c, path); len(got) != 2 {
		t.Fatalf("member nodes %v, want 2", got)
	}
	ms[2].enter(ctx)
	for i, m := range ms {
		testutil.Must(t, testutil.Recv(t, m.done, fmt.Sprintf("member %d's Enter", i)))
		if _, name := framework.SplitPath(m.b.MemberPath()); len(name) != 36 || strings.Count(name, "-") != 4 {
			t.Errorf("member node %s is not named by a UUID", m.b.MemberPath())
		}
	}
	if ok, _, _ := c.Exists(ctx, path+"/ready"); !ok {
		t.Fatal("no ready node after every member entered")
	}
	testutil.ErrorIs(t, ms[0].b.Enter(ctx), recipes.ErrInvalidState, "entered already")

	ms[0].leave(ctx)
	ms[1].leave(ctx)
	waitParked(t, "leave", 2)
	notYet(t, "Leave", ms...)
	ms[2].leave(ctx)
	for _, m := range ms {
		testutil.Must(t, testutil.Recv(t, m.done, "Leave"))
	}
	if got := members(t, c, path); len(got) != 0 {
		t.Fatalf("member nodes %v after every member left", got)
	}
	if ok, _, _ := c.Exists(ctx, path+"/ready"); ok {
		t.Fatal("ready is still there after every member left")
	}
	testutil.ErrorIs(t, ms[0].b.Leave(ctx), recipes.ErrInvalidState, "not entered")
	want := append(slices.Repeat([]string{"double-barrier:enter"}, qty), slices.Repeat([]string{"double-barrier:leave"}, qty)...)
	if got := heard.steps(c); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// An Enter that gives up deletes its member node: it is not counted, and
// the member may enter again.
func TestDoubleBarrierEnterGivenUp(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := testclient.New(t, server.Addr())
	path := base + "/double"
	m := newMember(t, c, path, 2)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	testutil.ErrorIs(t, m.b.Enter(short), context.DeadlineExceeded)
	if got := members(t, c, path); len(got) != 0 {
		t.Fatalf("member nodes %v after an Enter given up", got)
	}
	m.enter(ctx)
	other := newMember(t, c, path, 2).enter(ctx)
	testutil.Must(t, testutil.Recv(t, m.done, "Enter again"))
	testutil.Must(t, testutil.Recv(t, other.done, "the other's Enter"))
}

// The invariant under faults: no member passes Enter before memberQty
// members have entered. A member whose session the server expires while it
// waits fails its Enter (its node went with the session), and the others
// go on waiting; a member whose connection drops goes on waiting in its
// session. Then all pass together.
func TestDoubleBarrierFaults(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	path := base + "/double"
	const qty = 3
	proxy := zktest.NewProxy(t, server.Addr())
	xc := testclient.New(t, proxy.Addr(), framework.WithSessionTimeout(time.Second))
	c := testclient.New(t, server.Addr())
	x, y := newMember(t, xc, path, qty).enter(ctx), newMember(t, c, path, qty).enter(ctx)
	waitParked(t, "enter", 2)

	proxy.DropConnections()
	testutil.Must(t, xc.BlockUntilConnected(ctx))
	notYet(t, "Enter after its connection dropped", x, y)

	testutil.Must(t, proxy.ExpireSession(xc.SessionID()))
	err := testutil.Recv(t, x.done, "the expired member's Enter")
	testutil.ErrorIs(t, err, zk.ErrSessionExpired, "went with its session")
	notYet(t, "Enter after another member's session expired", y)
	if got := members(t, c, path); len(got) != 1 {
		t.Fatalf("member nodes %v, want y's alone", got)
	}

	x.enter(ctx) // again, in its new session
	waitParked(t, "enter", 2)
	notYet(t, "Enter", x, y)
	z := newMember(t, c, path, qty).enter(ctx)
	for _, m := range []*member{x, y, z} {
		testutil.Must(t, testutil.Recv(t, m.done, "Enter"))
	}
}

// Misuse is an error, never a panic or a hang.
func TestBarriersMisuse(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := testclient.New(t, server.Addr())
	_, err := barriers.NewDistributedBarrier(nil, base)
	testutil.ErrorIs(t, err, framework.ErrInvalidArgument, "nil client")
	_, err = barriers.NewDistributedDoubleBarrier(c, base, 0)
	testutil.ErrorIs(t, err, framework.ErrInvalidArgument, "memberQty 0")
	_, err = barriers.NewDistributedDoubleBarrier(c, "/zookeeper/b", 1)
	testutil.ErrorIs(t, err, zk.ErrInvalidPath)
	for _, bad := range testutil.BadPaths(base) {
		_, err := barriers.NewDistributedBarrier(c, bad.Path)
		testutil.ErrorIs(t, err, zk.ErrInvalidPath, bad.Problem)
		_, err = barriers.NewDistributedDoubleBarrier(c, bad.Path, 1)
		testutil.ErrorIs(t, err, zk.ErrInvalidPath, bad.Problem)
	}
	b, err := barriers.NewDistributedBarrier(c, base+"/b")
	testutil.Must(t, err)
	m := newMember(t, c, base+"/d", 1)
	var nilCtx context.Context
	testutil.ErrorIs(t, b.WaitOnBarrier(nilCtx), framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, m.b.Enter(nilCtx), framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, m.b.Leave(ctx), recipes.ErrInvalidState, "not entered")

	closed := testclient.New(t, server.Addr())
	closed.Close()
	_, err = barriers.NewDistributedBarrier(closed, base)
	testutil.ErrorIs(t, err, framework.ErrClosed)
	testutil.Must(t, b.SetBarrier(ctx)) // the live client's
	cb, _ := barriers.NewDistributedBarrier(c, base+"/c")
	c.Close()
	testutil.ErrorIs(t, cb.SetBarrier(ctx), framework.ErrClosed)
	testutil.ErrorIs(t, m.b.Enter(ctx), framework.ErrClosed)

	for _, v := range []any{&barriers.DistributedBarrier{}, (*barriers.DistributedBarrier)(nil),
		&barriers.DistributedDoubleBarrier{}, (*barriers.DistributedDoubleBarrier)(nil)} {
		if testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument) == 0 {
			t.Errorf("%T: no method called", v)
		}
	}
}
