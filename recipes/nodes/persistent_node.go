package nodes

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/lifecycle"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/recipeargs"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// retryWait is how long the node's goroutine waits, after a failure the
// client's retry loop gave up on (no server answered), before it tries
// again, unless the client reconnects first.
const retryWait = time.Second

// cleanupTimeout bounds how long a PersistentNode's goroutine waits, as it
// ends, for its node's delete; the delete is guaranteed: it goes on in the
// background after that.
const cleanupTimeout = 5 * time.Second

// The recipe kinds the package's events name (NodeEvent.Recipe).
const (
	recipePersistentNode    = "persistent-node"
	recipePersistentTTLNode = "persistent-ttl-node"
)

// PersistentNode is a node that the library keeps in place across
// connection loss and session expiry: Curator's PersistentNode. Once
// started it creates its node in the background (with its parents, as
// containers), watches it, and makes it again, with its data, whenever it
// finds it gone: deleted by someone, expired with its session (an
// ephemeral node), or reaped by the servers (a TTL node). At each reconnect
// it makes sure the node is there and holds its data.
//
// The node is made once with the mode given (ephemeral, sequential,
// protected, TTL) and keeps its name from then on: a sequential node is
// made again under the name the servers first gave it, a protected one with
// the same "_c_<uuid>-" prefix, as Curator's (it re-creates at the path it
// has, in the mode without the sequence). Close deletes it (guaranteed).
//
// Start it, and Close it when done; Start and Close follow the module's one
// lifecycle rule: starting twice, or after Close, fails with
// recipes.ErrInvalidState; Close is idempotent and never waits for a
// listener. Every method of a nil or zero PersistentNode returns an error
// wrapping framework.ErrInvalidArgument (or the zero value).
type PersistentNode struct {
	client    *framework.Client
	base      string
	mode      framework.CreateMode
	cfg       config
	recipe    string                // the events' recipe kind
	keep      bool                  // Close leaves the node (a PersistentTtlNode's)
	touch     func(context.Context) // a PersistentTtlNode's touch of its child, every touchEvery
	touchTick time.Duration

	gate      listeners.Gate // the listener calls: shut at Close
	run       lifecycle.Runner
	listeners listeners.Registry[func(path string)]
	wake      chan struct{} // (1) the client reconnected: make sure of the node

	mu      sync.Mutex
	data    []byte
	path    string        // the node's actual path; "" until the first create
	created bool          // the initial create is done (WaitForInitialCreate)
	failure error         // why the node could not be made, if it never was: the servers refuse it
	changed chan struct{} // closed (and replaced) when created or failure changes
}

// NewPersistentNode returns a persistent node at path (for a sequential
// mode, the prefix of its name) of the mode given, with data (nil is empty
// data, as Curator's byte[0]; the node holds a copy). A nil client or a
// closed one, a bad path (the root, or under /zookeeper, included), a
// mode that is none of framework's, a TTL (WithTTL) with a mode that
// cannot have one or out of its range, or an option of a PersistentTtlNode,
// is an error wrapping framework.ErrInvalidArgument (framework.ErrClosed
// for a closed client; a bad path also unwraps to zk.ErrInvalidPath).
func NewPersistentNode(client *framework.Client, mode framework.CreateMode, path string, data []byte, opts ...Option) (*PersistentNode, error) {
	if err := recipeargs.Check(client, path); err != nil {
		return nil, err
	}
	cfg, err := configOf(opts, persistentNode)
	if err != nil {
		return nil, err
	}
	if err := checkMode(mode, cfg.ttl); err != nil {
		return nil, err
	}
	return newNode(client, mode, path, data, cfg, recipePersistentNode), nil
}

func newNode(client *framework.Client, mode framework.CreateMode, path string, data []byte, cfg config, recipe string) *PersistentNode {
	return &PersistentNode{client: client, base: path, mode: mode, cfg: cfg, recipe: recipe,
		wake: make(chan struct{}, 1), data: bytes.Clone(nonNil(data)), changed: make(chan struct{})}
}

// nonNil returns data, or empty data for nil: framework's Create makes a
// node of nil data with the client's default data, and a persistent node's
// data is what it is given, as Curator's.
func nonNil(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// usable reports whether n was made by a constructor.
func (n *PersistentNode) usable() bool { return n != nil && n.client != nil }

func (n *PersistentNode) what() string { return "persistent node " + n.base }

// Path returns the path the node was made for: its name's prefix for a
// sequential or protected node ("" for a nil or zero node). ActualPath
// returns the node's own.
func (n *PersistentNode) Path() string {
	if !n.usable() {
		return ""
	}
	return n.base
}

// Start begins making the node, in the background, and keeping it (Curator's
// start). It does not wait: WaitForInitialCreate does. Starting twice, or
// after Close, is an error wrapping recipes.ErrInvalidState.
func (n *PersistentNode) Start() error {
	if !n.usable() {
		return recipeargs.Zero("PersistentNode")
	}
	return n.run.Start(n.what(), n.loop)
}

// WaitForInitialCreate waits until the node's first create has been done
// (Curator's waitForInitialCreate), or ctx ends (ctx's error, Curator's
// false). It returns at once an error wrapping recipes.ErrInvalidState
// before Start, one wrapping framework.ErrClosed once the node is closed,
// and the servers' refusal while they refuse to make the node at all (it
// wraps zk.ErrNoAuth, zk.ErrNoNode without parent creation; a TTL node on
// servers without TTLs is go-zookeeper's "unknown error: -6", Unimplemented),
// or framework.ErrClosed once the client is closed: the node tries again at
// the client's next reconnect.
func (n *PersistentNode) WaitForInitialCreate(ctx context.Context) error {
	if !n.usable() {
		return recipeargs.Zero("PersistentNode")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	for {
		if err := n.running(); err != nil {
			return err
		}
		n.mu.Lock()
		created, failure, changed := n.created, n.failure, n.changed
		n.mu.Unlock()
		switch {
		case created:
			return nil
		case failure != nil:
			return errs.Errorf("%s: cannot be created: %w", n.what(), failure)
		}
		select {
		case <-changed:
		case <-n.run.Ended():
		case <-ctx.Done():
			return errs.Errorf("%s: waiting for its initial create: %w", n.what(), ctx.Err())
		}
	}
}

// running refuses a call that needs the node started and not closed.
func (n *PersistentNode) running() error {
	switch n.run.Current() {
	case lifecycle.Latent:
		return errs.Errorf("%s: %w: not started", n.what(), recipes.ErrInvalidState)
	case lifecycle.Closed:
		return n.closedErr()
	}
	return nil
}

func (n *PersistentNode) closedErr() error {
	return errs.Errorf("%s is closed: %w", n.what(), framework.ErrClosed)
}

// ActualPath returns the node's path ("" until its first create; Curator's
// getActualPath, whose null is "" here): for a sequential node, with its
// sequence number; for a protected one, with its prefix.
func (n *PersistentNode) ActualPath() string {
	if !n.usable() {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.path
}

// Data returns a copy of the node's data: what it holds once written, and
// what it is made with again.
func (n *PersistentNode) Data() []byte {
	if !n.usable() {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return bytes.Clone(n.data)
}

// SetData changes the node's data (nil is empty data) and writes it to the
// node (Curator's setData); the node is made again with it from now on.
// As in Curator it is an error (wrapping recipes.ErrInvalidState) before the
// initial create is done (see WaitForInitialCreate), or once the node is
// closed (framework.ErrClosed). The write's error is returned, but a node
// found gone is no error: it is being made again, with the new data, and at
// each reconnect the node's data is made sure of.
func (n *PersistentNode) SetData(ctx context.Context, data []byte) error {
	if !n.usable() {
		return recipeargs.Zero("PersistentNode")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return err
	}
	if err := n.running(); err != nil {
		return err
	}
	n.mu.Lock()
	path := n.path
	if path == "" {
		n.mu.Unlock()
		return errs.Errorf("%s: %w: its initial create has not been done (WaitForInitialCreate)", n.what(), recipes.ErrInvalidState)
	}
	n.data = bytes.Clone(nonNil(data))
	n.mu.Unlock()
	if _, err := n.client.SetData(ctx, path, nonNil(data), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return errs.Errorf("%s: %w", n.what(), err)
	}
	return nil
}

// AddListener registers fn to be called with the node's path each time the
// node is created (Curator's PersistentNodeListener.nodeCreated): at its
// first create and at each time it is made again (not when it was found
// there already). fn is called on the node's goroutine, in order, never
// once Close has begun; listeners are called in the order they were added.
// It returns a function that removes fn. A nil fn is ignored; a listener
// that panics is logged, and the others are still called.
func (n *PersistentNode) AddListener(fn func(path string)) (remove func()) {
	if !n.usable() || fn == nil {
		return func() {}
	}
	return n.listeners.Add(fn)
}

// Close stops keeping the node and deletes it (guaranteed: if the delete
// cannot be done within a few seconds it goes on in the background; a
// PersistentTtlNode's node is left to its TTL). It waits for the node's
// goroutine, but never for a listener: while a listener call is under way
// (a listener may close its node), Close returns at once, and the node is
// deleted once that call returns. A create under way is seen through (for
// at most a few seconds more) and its node deleted; one that takes longer
// (no server answers) is abandoned, and the node it may make is deleted
// too, but for an unprotected sequential node's first, whose name only its
// reply would have told (an ephemeral one goes with its session). Close is
// idempotent, and closing a node never started keeps it from starting.
func (n *PersistentNode) Close() error {
	if !n.usable() {
		return recipeargs.Zero("PersistentNode")
	}
	n.run.Close(&n.gate, n.closedErr(), func() {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.signalLocked() // WaitForInitialCreate sees it closed
	})
	return nil
}

// signalLocked wakes WaitForInitialCreate; n.mu is held.
func (n *PersistentNode) signalLocked() {
	close(n.changed)
	n.changed = make(chan struct{})
}

// step is where the node's goroutine stands with the node.
type step int

const (
	gone     step = iota // not there (or not known to be): make it (Curator's createNode)
	present              // there: watch it (Curator's watchNode)
	watching             // watched: wait for its watch
	failed               // no server answered: try the step again after a pause, or at a reconnect
	refused              // the servers refuse to make it: try again at a reconnect
)

// loop is the node's goroutine: it makes the node, watches it, and makes
// it again when it is found gone, until ctx ends (Close); then it deletes
// it, unless it is to be kept.
func (n *PersistentNode) loop(ctx context.Context) (then func()) {
	remove := n.client.AddListener(state.ListenerFunc(func(s state.ConnectionState) {
		if s.IsConnected() {
			select { // Curator's RECONNECTED: make sure of the node
			case n.wake <- struct{}{}:
			default:
			}
		}
	}))
	defer remove()
	defer n.cleanup()
	var touch <-chan time.Time
	if n.touch != nil {
		t := time.NewTicker(n.touchTick)
		defer t.Stop()
		touch = t.C
	}
	pause := time.NewTimer(retryWait)
	pause.Stop()
	defer pause.Stop()
	next, again := gone, gone // again: the step that failed
	var watch <-chan zk.Event
	for ctx.Err() == nil {
		switch next {
		case gone:
			again, next = gone, n.create(ctx)
		case present:
			watch = nil
			again, next = present, n.watch(ctx, &watch)
		}
		switch next {
		case gone, present:
			continue
		case failed:
			pause.Reset(retryWait)
		}
		select {
		case <-watch: // deleted, changed, or the session's watches dropped: look again
			next = present
		case <-n.wake:
			next = gone
		case <-pause.C:
			next = again
		case <-touch:
			n.touch(ctx)
			if next == failed {
				next = again
			}
		case <-ctx.Done():
			return nil
		}
		pause.Stop()
	}
	return nil
}

// create makes the node (Curator's createNode and its background
// callback): at its base path in the mode given the first time, at the
// path it has (in the mode without the sequence) after that.
func (n *PersistentNode) create(ctx context.Context) step {
	n.mu.Lock()
	path, data := n.path, n.data
	n.mu.Unlock()
	createPath, opts := n.base, []framework.CreateOption{framework.WithMode(n.mode)}
	if path != "" {
		createPath, opts[0] = path, framework.WithMode(n.remakeMode())
	} else if n.cfg.protected {
		opts = append(opts, framework.WithProtection())
	}
	if !n.cfg.noParents {
		opts = append(opts, framework.CreatingParentContainersIfNeeded())
	}
	if n.cfg.ttl != 0 {
		opts = append(opts, framework.WithTTL(n.cfg.ttl))
	}
	cctx, done := afterClose(ctx)
	created, err := n.client.Create(cctx, createPath, data, opts...)
	cut := cctx.Err() != nil
	done()
	switch {
	case err == nil:
		n.madeAt(ctx, created, data)
		return present
	case errors.Is(err, zk.ErrNodeExists):
		// There already (ours, from before a lost reply or from another
		// session, or someone else's): take it, and write our data to it.
		n.setPath(createPath)
		return n.writeData(ctx, createPath, data)
	case cut: // Close came, and the create took cleanupTimeout more
		n.abandoned(createPath, path == "")
		return failed
	case ctx.Err() != nil: // closed: the goroutine ends
		return failed
	case retry.IsRetryable(err) || errors.Is(err, zk.ErrNoServer):
		n.client.Logger().Info("persistent node: create failed; trying again", zap.String("path", createPath), zap.Error(err))
		return failed
	}
	// The servers refuse (no auth, no parent, no TTLs...), or the client
	// is closed: tried again at the next reconnect.
	if n.cfg.ttl != 0 && !errors.Is(err, zk.ErrNoAuth) && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, framework.ErrClosed) {
		err = errs.Errorf("%w (do the servers run with zookeeper.extendedTypesEnabled=true, which TTL nodes need?)", err)
	}
	n.refuse(err)
	return refused
}

// afterClose returns the context of a create of the node's goroutine, whose
// ctx Close ends: it ends cleanupTimeout after ctx does, so that a create
// under way at Close is seen through (and its node deleted as the goroutine
// ends) rather than abandoned, to land after the delete; done releases it.
func afterClose(ctx context.Context) (cctx context.Context, done func()) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(cleanupTimeout, cancel) })
	return cctx, func() {
		stop()
		cancel()
	}
}

// remakeMode is the mode the node is made again in, under the name it
// has: the mode without its sequence (Curator's getCreateMode).
func (n *PersistentNode) remakeMode() framework.CreateMode {
	switch n.mode {
	case framework.EphemeralSequential:
		return framework.Ephemeral
	case framework.PersistentSequential:
		return framework.Persistent
	}
	return n.mode
}

// madeAt records that the node was created at path with data, tells the
// event hook and the listeners, and writes the data again if SetData
// changed it meanwhile.
func (n *PersistentNode) madeAt(ctx context.Context, path string, data []byte) {
	n.mu.Lock()
	n.path, n.failure = path, nil
	if !n.created {
		n.created = true
		n.signalLocked()
	}
	current := n.data
	n.mu.Unlock()
	n.client.Emit(framework.Event{Kind: NodeCreated, Path: n.base, Node: path, Session: n.client.SessionID(), Detail: NodeEvent{Recipe: n.recipe}})
	for _, l := range n.listeners.Snapshot() {
		ran, err := listeners.Call(&n.gate, func() { l(path) })
		if !ran {
			break // closed: listeners hear nothing more
		}
		if err != nil {
			n.client.Logger().Error("persistent node listener", zap.String("path", n.base), zap.Error(err))
		}
	}
	if !bytes.Equal(current, data) {
		n.writeData(ctx, path, current)
	}
}

// setPath records the node's path, once found there.
func (n *PersistentNode) setPath(path string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.path, n.failure = path, nil
}

// writeData writes the node's data to it (after the node was found there);
// the initial create is done once it is written (Curator's setDataCallback).
// A node found gone meanwhile is to be looked at again, and made.
func (n *PersistentNode) writeData(ctx context.Context, path string, data []byte) step {
	_, err := n.client.SetData(ctx, path, data, -1)
	switch {
	case err == nil:
		n.mu.Lock()
		if !n.created {
			n.created = true
			n.signalLocked()
		}
		n.mu.Unlock()
	case errors.Is(err, zk.ErrNoNode):
	case errors.Is(err, zk.ErrNoAuth):
		n.client.Logger().Warn("persistent node: the client may not write the node's data", zap.String("path", path))
	case ctx.Err() != nil:
		return failed
	default:
		n.client.Logger().Info("persistent node: writing its data failed; trying again", zap.String("path", path), zap.Error(err))
		return failed
	}
	return present
}

// refuse records why the servers will not make the node, and says so once.
func (n *PersistentNode) refuse(err error) {
	n.mu.Lock()
	first := n.failure == nil
	n.failure = err
	n.signalLocked()
	n.mu.Unlock()
	if first {
		n.client.Logger().Warn("persistent node: the servers refuse to make it; trying again at the next reconnect",
			zap.String("path", n.base), zap.Error(err))
	}
}

// abandoned deals with a create that Close cut short (cleanupTimeout after
// it), whose outcome is not known. A node at a known path is deleted as the goroutine ends (cleanup),
// and the client finds and deletes a protected create's; an unprotected
// sequential node's first create leaves a name nobody knows.
func (n *PersistentNode) abandoned(path string, first bool) {
	switch {
	case !first || n.cfg.protected:
	case n.mode.IsSequential():
		n.client.Logger().Warn("persistent node closed during its first create: a node it made, if any, is left (an ephemeral one goes with its session)",
			zap.String("path", path))
	default:
		n.setPath(path)
	}
}

// watch sets a watch on the node (Curator's watchNode: checkExists with a
// watcher), into *w. It returns watching, or gone when the node is not
// there, or failed when it could not look.
func (n *PersistentNode) watch(ctx context.Context, w *<-chan zk.Event) step {
	n.mu.Lock()
	path := n.path
	n.mu.Unlock()
	ok, stat, ew, err := n.client.ExistsW(ctx, path)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			n.client.Logger().Info("persistent node: looking at it failed; trying again", zap.String("path", path), zap.Error(err))
		}
		return failed
	case !ok:
		return gone // make it (the watch set fires at its create, unread)
	}
	if isEphemeral(stat.EphemeralOwner) != n.mode.IsEphemeral() {
		n.client.Logger().Warn("persistent node: the node there is not of the mode asked for (was it made by someone else?)",
			zap.String("path", path), zap.Bool("ephemeral", n.mode.IsEphemeral()))
	}
	*w = ew
	return watching
}

// isEphemeral reports whether a node's ephemeral owner is a session (the
// servers show a container's and a TTL node's as 0, as a persistent
// node's).
func isEphemeral(owner int64) bool { return owner != 0 }

// cleanup deletes the node as the goroutine ends (Close), unless it is to
// be kept, with a context of its own: guaranteed, it goes on in the
// background past cleanupTimeout.
func (n *PersistentNode) cleanup() {
	n.mu.Lock()
	path := n.path
	n.path = ""
	n.mu.Unlock()
	if n.keep || path == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := n.client.Delete(ctx, path, framework.Guaranteed()); err != nil && !errors.Is(err, zk.ErrNoNode) &&
		!errors.Is(err, framework.ErrClosed) {
		n.client.Logger().Info("persistent node: its delete goes on in the background", zap.String("path", path), zap.Error(err))
	}
}
