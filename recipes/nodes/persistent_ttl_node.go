package nodes

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/recipeargs"
)

// PersistentTtlNode is a TTL node kept alive while the process runs:
// Curator's PersistentTtlNode. Its node (at path, with its data) is a
// PersistentNode of a TTL node (PERSISTENT_WITH_TTL, as in Curator since
// 5.9; Curator 5.4 makes it a container), kept in place as a
// PersistentNode's is; every ttl/factor the recipe touches a child of it
// ("touch", a TTL node too, with the client's default data), which keeps
// the node from being reaped without a change to the node itself (a watch
// on it sees none). Once the process stops touching it (it crashed, or
// closed the recipe), the child goes after its TTL, and the node, then
// empty and unchanged, after its own: Close does not delete it.
//
// The servers must run with zookeeper.extendedTypesEnabled=true (TTL nodes);
// without it, WaitForInitialCreate says so.
//
// Start it, and Close it when done, as a PersistentNode. Every method of a
// nil or zero PersistentTtlNode returns an error wrapping
// framework.ErrInvalidArgument (or the zero value).
type PersistentTtlNode struct {
	node  *PersistentNode
	child string
	ttl   time.Duration
}

// NewPersistentTtlNode returns a TTL node at path with data (nil is empty
// data) and ttl, touched every ttl/DefaultTouchScheduleFactor unless
// WithTouchScheduleFactor says otherwise. A nil client or a closed one, a
// bad path, a ttl under 1 ms or over framework.MaxTTL, a touch more often
// than every millisecond, a child name that is not one segment, or an
// option of a PersistentNode, is an error wrapping
// framework.ErrInvalidArgument (framework.ErrClosed for a closed client; a
// bad path or child name also unwraps to zk.ErrInvalidPath).
func NewPersistentTtlNode(client *framework.Client, path string, ttl time.Duration, data []byte, opts ...Option) (*PersistentTtlNode, error) {
	if err := recipeargs.Check(client, path); err != nil {
		return nil, err
	}
	cfg, err := configOf(opts, persistentTTLNode)
	if err != nil {
		return nil, err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	if cfg.touchFactor < 1 || ttl/time.Duration(cfg.touchFactor) < time.Millisecond {
		return nil, errs.Errorf("%w: touch schedule factor %d: the child must be touched every ttl/factor, at least 1ms (ttl %v)",
			framework.ErrInvalidArgument, cfg.touchFactor, ttl)
	}
	child := framework.JoinPath(path, cfg.childName)
	if cfg.childName == "" || strings.Contains(cfg.childName, "/") {
		return nil, &framework.PathError{Path: child, Problem: "the child's name must be one segment"}
	}
	if err := framework.ValidatePath(child); err != nil {
		return nil, err
	}
	cfg.ttl = ttl
	t := &PersistentTtlNode{child: child, ttl: ttl}
	t.node = newNode(client, framework.Persistent, path, data, cfg, recipePersistentTTLNode)
	t.node.keep = true
	t.node.touch, t.node.touchTick = t.touch, ttl/time.Duration(cfg.touchFactor)
	return t, nil
}

// usable reports whether t was made by NewPersistentTtlNode.
func (t *PersistentTtlNode) usable() bool { return t != nil && t.node != nil }

// Path returns the node's path ("" for a nil or zero node).
func (t *PersistentTtlNode) Path() string {
	if !t.usable() {
		return ""
	}
	return t.node.base
}

// ChildPath returns the path of the child the recipe touches.
func (t *PersistentTtlNode) ChildPath() string {
	if !t.usable() {
		return ""
	}
	return t.child
}

// Start begins making the node and touching its child, in the background
// (Curator's start; the first touch comes ttl/factor after it). Starting
// twice, or after Close, is an error wrapping recipes.ErrInvalidState.
func (t *PersistentTtlNode) Start() error {
	if !t.usable() {
		return recipeargs.Zero("PersistentTtlNode")
	}
	return t.node.Start()
}

// WaitForInitialCreate waits until the node's first create has been done,
// as PersistentNode's.
func (t *PersistentTtlNode) WaitForInitialCreate(ctx context.Context) error {
	if !t.usable() {
		return recipeargs.Zero("PersistentTtlNode")
	}
	return t.node.WaitForInitialCreate(ctx)
}

// Data returns a copy of the node's data.
func (t *PersistentTtlNode) Data() []byte {
	if !t.usable() {
		return nil
	}
	return t.node.Data()
}

// SetData changes the node's data and writes it, as PersistentNode's.
func (t *PersistentTtlNode) SetData(ctx context.Context, data []byte) error {
	if !t.usable() {
		return recipeargs.Zero("PersistentTtlNode")
	}
	return t.node.SetData(ctx, data)
}

// Close stops keeping the node and touching its child, and waits for the
// recipe's goroutine. It does not delete the node: once no process touches
// its child, the servers delete the child and then the node, each after its
// TTL (Curator's close). Close is idempotent.
func (t *PersistentTtlNode) Close() error {
	if !t.usable() {
		return recipeargs.Zero("PersistentTtlNode")
	}
	return t.node.Close()
}

// touch writes the child (the client's default data), or makes it if it
// is missing (Curator's touch: setData, else create().orSetData() with the
// TTL), on the node's goroutine. A node that is gone is no error (it is
// being made again); other failures are logged at DEBUG, as Curator's.
func (t *PersistentTtlNode) touch(ctx context.Context) {
	c := t.node.client
	data := c.DefaultData()
	_, err := c.SetData(ctx, t.child, data, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = c.Create(ctx, t.child, data, framework.WithMode(framework.Persistent), framework.WithTTL(t.ttl))
		if errors.Is(err, zk.ErrNodeExists) { // made meanwhile: orSetData
			_, err = c.SetData(ctx, t.child, data, -1)
		}
	}
	if err != nil && !errors.Is(err, zk.ErrNoNode) && ctx.Err() == nil {
		c.Logger().Debug("persistent TTL node: could not touch its child", zap.String("path", t.child), zap.Error(err))
	}
}
