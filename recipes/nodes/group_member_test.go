package nodes_test

import (
	"context"
	"fmt"
	"maps"
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
	"github.com/gocurator/curator/recipes/nodes"
)

func mustMember(t testing.TB, c *framework.Client, path, id string, payload []byte) *nodes.GroupMember {
	t.Helper()
	m, err := nodes.NewGroupMember(c, path, id, payload)
	testutil.Must(t, err)
	t.Cleanup(func() { m.Close() })
	return m
}

// members waits until m sees the group as want (id → data).
func members(t testing.TB, m *nodes.GroupMember, want map[string]string) {
	t.Helper()
	testutil.Until(t, fmt.Sprintf("%s seeing the group %v", m.ID(), want), func() (bool, string) {
		got := map[string]string{}
		for id, data := range m.CurrentMembers() {
			got[id] = string(data)
		}
		return maps.Equal(got, want), fmt.Sprintf("it sees %v", got)
	})
}

// memberEvents records the MemberJoined and MemberLeft events of the
// other members that a client's hook hears, said "joined a" and "left a".
type memberEvents struct {
	mu     sync.Mutex
	events []framework.Event
	more   chan struct{}
}

func newMemberEvents() *memberEvents { return &memberEvents{more: make(chan struct{})} }

func (r *memberEvents) hook() framework.Option {
	return framework.WithEventHook(framework.EventFunc(func(e framework.Event) {
		if e.Kind != nodes.MemberJoined && e.Kind != nodes.MemberLeft || e.Detail.(nodes.MemberEvent).Self {
			return // a member's own coming may be in its first load, or after
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.events = append(r.events, e)
		close(r.more)
		r.more = make(chan struct{})
	}))
}

func (r *memberEvents) say(e framework.Event) string {
	d := e.Detail.(nodes.MemberEvent)
	verb := "joined"
	if e.Kind == nodes.MemberLeft {
		verb = "left"
	}
	return verb + " " + d.ID
}

// wait waits until the hook has heard n events, and returns them, said.
func (r *memberEvents) wait(t testing.TB, n int) ([]string, []framework.Event) {
	t.Helper()
	ctx := testutil.Context(t)
	for {
		r.mu.Lock()
		events, more := slices.Clone(r.events), r.more
		r.mu.Unlock()
		if len(events) >= n {
			var said []string
			for _, e := range events {
				said = append(said, r.say(e))
			}
			return said, events
		}
		select {
		case <-more:
		case <-ctx.Done():
			t.Fatalf("the hook heard %d member events, want %d", len(events), n)
		}
	}
}

// Members see each other with their data, the nodes are Curator's (an
// ephemeral node membershipPath/id holding the payload, owned by the
// member's session), a member's new data reaches the others, and a member
// that closes leaves: its node is deleted, and the others see it gone.
// The client's hook hears the members come and go, once its first load is
// done.
func TestGroupMembers(t *testing.T) {
	testutil.CheckLeaks(t)
	rec := newMemberEvents()
	ca, cb := testclient.New(t, server.Addr()), testclient.New(t, server.Addr(), rec.hook())
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	group := base(t) + "/group"
	a := mustMember(t, ca, group, "a", []byte("A"))
	b := mustMember(t, cb, group, "b", []byte("B"))

	// Before Start, and before its node is seen, the group is the member
	// itself, with its data.
	if got := a.CurrentMembers(); len(got) != 1 || string(got["a"]) != "A" {
		t.Fatalf("a's group before Start: %q, want a alone", got)
	}
	testutil.ErrorIs(t, b.AwaitCurrent(ctx), recipes.ErrInvalidState, "not started")
	testutil.Must(t, b.Start())
	testutil.Must(t, b.AwaitCurrent(ctx)) // a's coming is told, not loaded
	testutil.Must(t, a.Start())
	if got := a.CurrentMembers(); string(got["a"]) != "A" {
		t.Fatalf("a's group just after Start: %q, want a in it", got)
	}
	members(t, a, map[string]string{"a": "A", "b": "B"})
	members(t, b, map[string]string{"a": "A", "b": "B"})
	for id, c := range map[string]*framework.Client{"a": ca, "b": cb} {
		data, st, err := raw.Get(group + "/" + id)
		testutil.Must(t, err)
		if string(data) != strings.ToUpper(id) || st.EphemeralOwner != c.SessionID() {
			t.Errorf("%s/%s: data %q, owner %x; want %q, owned by %x", group, id, data, st.EphemeralOwner, strings.ToUpper(id), c.SessionID())
		}
	}

	testutil.Must(t, a.SetThisData(ctx, []byte("A2")))
	if got := a.CurrentMembers()["a"]; string(got) != "A2" || string(a.ThisData()) != "A2" {
		t.Errorf("a's own data just after SetThisData: %q, ThisData %q; want A2", got, a.ThisData())
	}
	members(t, b, map[string]string{"a": "A2", "b": "B"})

	testutil.Must(t, a.Close())
	if ok, _, _ := raw.Exists(group + "/a"); ok {
		t.Errorf("%s/a still there after Close", group)
	}
	members(t, b, map[string]string{"b": "B"})
	if got := a.CurrentMembers(); got != nil {
		t.Errorf("a closed sees %q, want nil", got)
	}
	testutil.ErrorIs(t, a.SetThisData(ctx, nil), framework.ErrClosed)
	testutil.ErrorIs(t, a.AwaitCurrent(ctx), framework.ErrClosed)
	testutil.Must(t, a.Close()) // idempotent

	said, events := rec.wait(t, 2)
	if want := []string{"joined a", "left a"}; !slices.Equal(said, want) {
		t.Errorf("b's hook heard %q, want %q", said, want)
	}
	if e := events[0]; e.Path != group || e.Node != group+"/a" || e.Session != ca.SessionID() {
		t.Errorf("joined: path %q, node %q, session %x; want %s, %s/a, %x", e.Path, e.Node, e.Session, group, group, ca.SessionID())
	}
}

// A member whose session the server expires comes back: its node is made
// again, in its new session, with its data (the one SetThisData last
// gave), and the others see it leave and come back.
func TestGroupMemberSessionExpired(t *testing.T) {
	testutil.CheckLeaks(t)
	rec := newMemberEvents()
	proxy := zktest.NewProxy(t, server.Addr())
	ca := testclient.New(t, proxy.Addr(), framework.WithSessionTimeout(time.Second))
	cb := testclient.New(t, server.Addr(), rec.hook())
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	group := base(t)
	a := mustMember(t, ca, group, "a", []byte("A"))
	b := mustMember(t, cb, group, "b", []byte("B"))
	testutil.Must(t, b.Start())
	testutil.Must(t, b.AwaitCurrent(ctx))
	testutil.Must(t, a.Start())
	testutil.Must(t, a.SetThisData(ctx, []byte("A2")))
	members(t, b, map[string]string{"a": "A2", "b": "B"})
	before := ca.SessionID()

	testutil.Must(t, proxy.ExpireSession(before))
	said, events := rec.wait(t, 3)
	if want := []string{"joined a", "left a", "joined a"}; !slices.Equal(said, want) {
		t.Fatalf("b's hook heard %q, want %q", said, want)
	}
	if events[2].Session == before || events[2].Session != ca.SessionID() {
		t.Errorf("a came back in session %x; the old one was %x, the client's is %x", events[2].Session, before, ca.SessionID())
	}
	members(t, b, map[string]string{"a": "A2", "b": "B"})
	members(t, a, map[string]string{"a": "A2", "b": "B"})
	data, st, err := raw.Get(group + "/a")
	testutil.Must(t, err)
	if string(data) != "A2" || st.EphemeralOwner != ca.SessionID() {
		t.Errorf("%s/a: data %q, owner %x; want A2, owned by %x", group, data, st.EphemeralOwner, ca.SessionID())
	}
}

// A nil payload is Curator's default, the local host's address, whatever
// the client's own default data; an empty one is empty.
func TestGroupMemberPayload(t *testing.T) {
	testutil.CheckLeaks(t)
	c := testclient.New(t, server.Addr(), framework.WithDefaultData([]byte("client default")))
	addr := testclient.New(t, server.Addr()).DefaultData() // the local address
	raw := testutil.Connect(t, server.Addr())
	ctx := testutil.Context(t)
	group := base(t)
	def := mustMember(t, c, group, "default", nil)
	empty := mustMember(t, c, group, "empty", []byte{})
	for _, m := range []*nodes.GroupMember{def, empty} {
		testutil.Must(t, m.Start())
		testutil.Must(t, m.SetThisData(ctx, m.ThisData())) // waits for the node
	}
	for id, want := range map[string]string{"default": string(addr), "empty": ""} {
		data, _, err := raw.Get(group + "/" + id)
		testutil.Must(t, err)
		if string(data) != want {
			t.Errorf("%s: data %q, want %q", id, data, want)
		}
	}
}

// Misuse is an error: a nil or closed client, a bad path, an id that is
// not a node's name, a nil context, Start twice or after Close, data set
// before Start; a zero or nil GroupMember's every method.
func TestGroupMemberMisuse(t *testing.T) {
	testutil.CheckLeaks(t)
	c := testclient.New(t, server.Addr())
	ctx := testutil.Context(t)
	group := base(t)
	check := testutil.NothingCreated(t, server.Addr(), group)
	for _, tc := range []struct {
		client     *framework.Client
		path, id   string
		want       error
		wantSaying string
	}{
		{nil, group, "a", framework.ErrInvalidArgument, "nil client"},
		{c, group, "", zk.ErrInvalidPath, "must not be empty"},
		{c, group, "a/b", zk.ErrInvalidPath, "must not hold a '/'"},
		{c, group, "/a", zk.ErrInvalidPath, "must not hold a '/'"},
		{c, group, ".", zk.ErrInvalidPath, "relative segment"},
		{c, group, "..", zk.ErrInvalidPath, "relative segment"},
		{c, group, "a\x00", zk.ErrInvalidPath, "NUL"},
		{c, "/", "a", zk.ErrInvalidPath, "root"},
		{c, "/zookeeper", "a", zk.ErrInvalidPath, "/zookeeper"},
	} {
		_, err := nodes.NewGroupMember(tc.client, tc.path, tc.id, nil)
		testutil.ErrorIs(t, err, tc.want, tc.wantSaying)
		if tc.want == zk.ErrInvalidPath {
			testutil.ErrorIs(t, err, framework.ErrInvalidArgument)
		}
	}
	for _, bad := range testutil.BadPaths(group) {
		_, err := nodes.NewGroupMember(c, bad.Path, "a", nil)
		testutil.ErrorIs(t, err, zk.ErrInvalidPath, bad.Problem)
	}
	check()

	m := mustMember(t, c, group, "a", nil)
	var nilCtx context.Context
	testutil.ErrorIs(t, m.SetThisData(nilCtx, nil), framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, m.SetThisData(ctx, nil), recipes.ErrInvalidState, "not started")
	testutil.Must(t, m.Start())
	testutil.ErrorIs(t, m.Start(), recipes.ErrInvalidState, "started twice")
	testutil.Must(t, m.Close())
	testutil.ErrorIs(t, m.Start(), recipes.ErrInvalidState, "after Close")

	never := mustMember(t, c, group, "never", nil)
	testutil.Must(t, never.Close())
	testutil.ErrorIs(t, never.Start(), recipes.ErrInvalidState)

	closedClient := testclient.New(t, server.Addr())
	underClosed := mustMember(t, closedClient, group, "closed", nil)
	closedClient.Close()
	_, err := nodes.NewGroupMember(closedClient, group, "b", nil)
	testutil.ErrorIs(t, err, framework.ErrClosed)
	testutil.ErrorIs(t, underClosed.Start(), framework.ErrClosed)
	testutil.ErrorIs(t, underClosed.SetThisData(ctx, nil), recipes.ErrInvalidState, "not started")

	for _, v := range []any{&nodes.GroupMember{}, (*nodes.GroupMember)(nil)} {
		if testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument) == 0 {
			t.Errorf("%T: no method called", v)
		}
	}
}
