package nodes

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"

	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/lifecycle"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/localaddr"
	"github.com/gocurator/curator/internal/recipeargs"
	"github.com/gocurator/curator/recipes/cache"
)

// recipeGroupMember is the recipe kind a group member's events name.
const recipeGroupMember = "group-member"

// The kinds of event (framework.Event) a GroupMember tells its client's
// event hook as its view of the group changes after its first load
// (members there already when it starts are not told): Path is the
// membership path, Node the member's node, Session the session that owns
// it, and the event's Detail a MemberEvent. Both are logged at INFO.
var (
	// MemberJoined: a member's node appeared (or appeared again, after
	// its session expired).
	MemberJoined = framework.NewEventKind("group-member-joined", zapcore.InfoLevel)
	// MemberLeft: a member's node is gone (closed, or its session ended).
	MemberLeft = framework.NewEventKind("group-member-left", zapcore.InfoLevel)
)

// MemberEvent is what a GroupMember's events add (framework.Event.Detail).
type MemberEvent struct {
	// ID is the member's id: its node's name.
	ID string
	// Self is true when the member is the GroupMember that told the event.
	Self bool
}

// EachField shows the recipe, the member's id and whether it is this one.
func (d MemberEvent) EachField(_ framework.Event, f func(key string, value any)) {
	f("recipe", recipeGroupMember)
	f("member", d.ID)
	if d.Self {
		f("self", true)
	}
}

// GroupMember is a process's membership of a group: Curator's GroupMember.
// It keeps an ephemeral node named after the member's id under the
// membership path, holding the member's data (a PersistentNode: made
// again after its session expires), and a cache of the path's children,
// the group as this member sees it (CurrentMembers). Java's GroupMember and
// this one make and read the same nodes: the two mix in one group.
//
// Start it, and Close it to leave the group; Start and Close follow the
// module's one lifecycle rule: starting twice, or after Close, fails with
// recipes.ErrInvalidState; Close is idempotent. Every method of a nil or
// zero GroupMember returns an error wrapping framework.ErrInvalidArgument
// (or the zero value).
type GroupMember struct {
	client *framework.Client
	path   string // the membership path
	id     string
	node   *PersistentNode

	run  lifecycle.Runner
	gate listeners.Gate // nothing of the user's runs through it: Close's rule

	mu     sync.Mutex
	cache  *cache.Cache // the group, once started; nil before, and after Close
	closed bool         // Close has taken the cache: Start must not set one
}

// NewGroupMember returns a member of the group at membershipPath whose id is
// thisID (Curator's GroupMember(client, membershipPath, thisId, payload)):
// its node is membershipPath/thisID, ephemeral, holding payload (the node
// holds a copy); a nil payload is Curator's default, the local host's
// address as text (CuratorFrameworkFactory.getLocalAddress(), whatever the
// client's own default data), and an empty one is empty data. The id must
// be unique in the group, as Curator says: two members of one id share one
// node, each writing its data to it.
//
// A nil client or a closed one, or a bad membership path, is an error as
// NewPersistentNode's; an id that is not a node's name (empty, with a '/',
// "." or "..", or a character ZooKeeper refuses) is an error wrapping
// framework.ErrInvalidArgument and zk.ErrInvalidPath (Curator takes it as
// it is, and an id with a '/' makes a node further down).
func NewGroupMember(client *framework.Client, membershipPath, thisID string, payload []byte) (*GroupMember, error) {
	if err := recipeargs.Check(client, membershipPath); err != nil {
		return nil, err
	}
	if err := checkID(membershipPath, thisID); err != nil {
		return nil, err
	}
	if payload == nil {
		payload = localaddr.Bytes()
	}
	cfg, err := configOf(nil, persistentNode)
	if err != nil {
		return nil, err
	}
	node := newNode(client, framework.Ephemeral, framework.JoinPath(membershipPath, thisID), payload, cfg, recipeGroupMember)
	return &GroupMember{client: client, path: membershipPath, id: thisID, node: node}, nil
}

// checkID refuses an id that is not a node's name.
func checkID(membershipPath, id string) error {
	switch {
	case id == "":
		return &framework.PathError{Path: membershipPath + "/", Problem: "a group member's id must not be empty"}
	case strings.Contains(id, "/"):
		return &framework.PathError{Path: framework.JoinPath(membershipPath, id), Problem: "a group member's id is a node's name: it must not hold a '/'"}
	}
	return framework.ValidatePath(framework.JoinPath(membershipPath, id))
}

// usable reports whether g was made by NewGroupMember.
func (g *GroupMember) usable() bool { return g != nil && g.client != nil }

func (g *GroupMember) what() string { return "group member " + g.id + " of " + g.path }

// ID returns the member's id ("" for a nil or zero GroupMember).
func (g *GroupMember) ID() string {
	if !g.usable() {
		return ""
	}
	return g.id
}

// Path returns the membership path, as given.
func (g *GroupMember) Path() string {
	if !g.usable() {
		return ""
	}
	return g.path
}

// Start joins the group (Curator's start): it starts the member's node,
// made in the background, and the cache of the group's members. It does
// not wait for either (SetThisData waits for the node). Starting twice, or
// after Close, is an error wrapping recipes.ErrInvalidState; with a client
// closed since NewGroupMember, one wrapping framework.ErrClosed.
func (g *GroupMember) Start() error {
	if !g.usable() {
		return recipeargs.Zero("GroupMember")
	}
	if g.run.Current() != lifecycle.Latent { // refused before a cache is made
		return g.startedErr()
	}
	c, err := cache.NewPathChildrenCache(g.client, g.path, cache.WithListener(g.listener()))
	if err != nil {
		return errs.Errorf("%s: %w", g.what(), err)
	}
	if err := g.run.Start(g.what(), func(context.Context) func() { return nil }); err != nil {
		_ = c.Close() // another Start, or a Close, came first
		return err
	}
	g.mu.Lock()
	if g.closed { // Close came in between, and found no cache
		g.mu.Unlock()
		_ = c.Close()
		return g.closedErr()
	}
	g.cache = c
	g.mu.Unlock()
	if err := g.node.Start(); err != nil { // Close came in between: it closed the node
		return g.closedErr()
	}
	return nil
}

// startedErr is the error of a Start that comes second, or after Close.
func (g *GroupMember) startedErr() error {
	return errs.Errorf("%s: %w: started twice or after Close", g.what(), lifecycle.ErrInvalidState)
}

func (g *GroupMember) closedErr() error {
	return errs.Errorf("%s is closed: %w", g.what(), framework.ErrClosed)
}

// listener returns the cache's listener, which tells the client's event
// hook of the members that come and go once the first load is done. It
// runs on the cache's goroutine, one event at a time: seen needs no lock.
func (g *GroupMember) listener() cache.Listener {
	seen := false
	return cache.ListenerFunc(func(e cache.Event) {
		var kind framework.EventKind
		switch e.Type {
		case cache.CacheInitialized:
			seen = true
			return
		case cache.NodeCreated:
			kind = MemberJoined
		case cache.NodeDeleted:
			kind = MemberLeft
		default:
			return
		}
		if !seen {
			return
		}
		id := g.IDFromPath(e.Node.Path)
		g.client.Emit(framework.Event{Kind: kind, Path: g.path, Node: e.Node.Path, Session: e.Node.Stat.EphemeralOwner,
			Detail: MemberEvent{ID: id, Self: id == g.id}})
	})
}

// SetThisData changes the data of this member's node (nil is empty data)
// and writes it (Curator's setThisData), first waiting, while ctx lasts,
// for the node's first create (Curator's throws IllegalStateException
// until then): its error is WaitForInitialCreate's, a PersistentNode's
// (the servers' refusal to make the node, ctx's error). The write's error
// is returned, but a node found gone is no error: it is being made again,
// with the new data. Before Start it is an error wrapping
// recipes.ErrInvalidState, after Close one wrapping framework.ErrClosed.
func (g *GroupMember) SetThisData(ctx context.Context, data []byte) error {
	if !g.usable() {
		return recipeargs.Zero("GroupMember")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	switch g.run.Current() {
	case lifecycle.Latent:
		return errs.Errorf("%s: %w: not started", g.what(), lifecycle.ErrInvalidState)
	case lifecycle.Closed:
		return g.closedErr()
	}
	if err := g.node.WaitForInitialCreate(ctx); err != nil {
		return errs.Errorf("%s: %w", g.what(), err)
	}
	if err := g.node.SetData(ctx, data); err != nil {
		return errs.Errorf("%s: %w", g.what(), err)
	}
	return nil
}

// ThisData returns a copy of this member's data: what its node holds once
// written, and what it is made with again.
func (g *GroupMember) ThisData() []byte {
	if !g.usable() {
		return nil
	}
	return g.node.Data()
}

// CurrentMembers returns the group as this member sees it (Curator's
// getCurrentMembers): each member's id, its node's name, with its data.
// It reads nothing: it is the member's cache of the group, kept current in
// the background, and may be behind the servers for a moment after a
// change, or while the client is disconnected. This member is always in
// it, with its own current data (ThisData), even before its node is made
// or seen (Curator's takes the cache's copy of its node once the cache has
// it: its data may then be behind a setThisData). The map and its values
// are the caller's. Before Start the group is this member alone, as in
// Curator; after Close, and for a nil or zero GroupMember, it is nil.
func (g *GroupMember) CurrentMembers() map[string][]byte {
	if !g.usable() || g.run.Current() == lifecycle.Closed {
		return nil
	}
	g.mu.Lock()
	c := g.cache
	g.mu.Unlock()
	members := map[string][]byte{}
	if c != nil {
		for _, n := range c.Nodes() { // the path's children only (a PathChildrenCache)
			members[g.IDFromPath(n.Path)] = bytes.Clone(nonNil(n.Data))
		}
	}
	members[g.id] = g.node.Data() // this member is always one
	return members
}

// AwaitCurrent waits until this member's view of the group (CurrentMembers)
// is current, or ctx ends: the cache of the group has done its first load
// and follows the group's changes, its client connected (see the cache
// package's Cache.AwaitCurrent; Curator's GroupMember has no such wait).
// It returns nil, ctx's error, an error wrapping recipes.ErrInvalidState
// before Start, or one wrapping framework.ErrClosed once the member or its
// client is closed.
func (g *GroupMember) AwaitCurrent(ctx context.Context) error {
	if !g.usable() {
		return recipeargs.Zero("GroupMember")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	c, closed := g.cache, g.closed
	g.mu.Unlock()
	switch {
	case closed:
		return g.closedErr()
	case c == nil:
		return errs.Errorf("%s: %w: not started", g.what(), lifecycle.ErrInvalidState)
	}
	err := c.AwaitCurrent(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, cache.ErrClosed): // the member closed meanwhile
		return g.closedErr()
	}
	return errs.Errorf("%s: %w", g.what(), err)
}

// IDFromPath returns the member id of a member's node path: its last
// segment (Curator's idFromPath, ZKPaths.getNodeFromPath).
func (g *GroupMember) IDFromPath(path string) string {
	_, name := framework.SplitPath(path)
	return name
}

// Close leaves the group (Curator's close): it stops the cache and deletes
// this member's node (guaranteed: a delete that cannot be done within a
// few seconds goes on in the background). It calls no user code and waits
// for none. Close is idempotent, and closing a member never started keeps
// it from starting.
func (g *GroupMember) Close() error {
	if !g.usable() {
		return recipeargs.Zero("GroupMember")
	}
	g.run.Close(&g.gate, g.closedErr(), func() {
		g.mu.Lock()
		c := g.cache
		g.cache, g.closed = nil, true
		g.mu.Unlock()
		if c != nil {
			_ = c.Close()
		}
		_ = g.node.Close()
	})
	return nil
}
