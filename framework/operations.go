package framework

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/protected"
	"github.com/gocurator/curator/internal/zkconn"
)

// CreateMode is the kind of node Create makes, with ZooKeeper's names.
type CreateMode int

// The create modes.
const (
	Persistent CreateMode = iota
	PersistentSequential
	Ephemeral
	EphemeralSequential
	Container
)

func (m CreateMode) flags() int32 {
	switch m {
	case PersistentSequential:
		return zk.FlagSequence
	case Ephemeral:
		return zk.FlagEphemeral
	case EphemeralSequential:
		return zk.FlagEphemeralSequential
	case Container:
		return zk.FlagContainer
	}
	return zk.FlagPersistent
}

// ttlFlags are the flags of a TTL create of mode m (Persistent or
// PersistentSequential: checkTTL refuses the others).
func (m CreateMode) ttlFlags() int32 {
	if m == PersistentSequential {
		return zk.FlagPersistentSequentialWithTTL
	}
	return zk.FlagTTL
}

// checkTTL refuses a TTL (WithTTL) out of its range or with a mode that
// cannot have one.
func (o createOptions) checkTTL() error {
	switch {
	case o.ttl == 0:
		return nil
	case o.ttl < time.Millisecond || o.ttl > MaxTTL:
		return invalidArgument("TTL %v: must be from 1ms to %v", o.ttl, MaxTTL)
	case o.mode != Persistent && o.mode != PersistentSequential:
		return invalidArgument("TTL %v: only a Persistent or PersistentSequential node may have one", o.ttl)
	}
	return nil
}

// IsEphemeral reports whether nodes of this mode end with their session.
func (m CreateMode) IsEphemeral() bool { return m == Ephemeral || m == EphemeralSequential }

// IsSequential reports whether the server appends a sequence number to the name.
func (m CreateMode) IsSequential() bool { return m == PersistentSequential || m == EphemeralSequential }

type parents int

const (
	noParents parents = iota
	persistentParents
	containerParents
)

type createOptions struct {
	mode        CreateMode
	protected   bool
	parents     parents
	acl         []zk.ACL
	parentWatch bool             // CreateAndList: a children watch with the listing
	ttl         time.Duration    // WithTTL: a TTL node (0: none)
	sent        zkconn.WriteHook // told as the create is written (CreateAndList)
}

// CreateOption changes how Create makes a node.
//
// Each option is a small value that sets its field of a copy of the
// options (applyCreate takes and returns them by value), so that making and
// applying the options of a create allocates nothing.
type CreateOption interface {
	applyCreate(createOptions) createOptions
}

type modeOption CreateMode

func (m modeOption) applyCreate(o createOptions) createOptions { o.mode = CreateMode(m); return o }

type protectionOption struct{}

func (protectionOption) applyCreate(o createOptions) createOptions { o.protected = true; return o }

type parentsOption parents

func (p parentsOption) applyCreate(o createOptions) createOptions { o.parents = parents(p); return o }

type aclOption struct{ acl []zk.ACL }

func (a aclOption) applyCreate(o createOptions) createOptions { o.acl = a.acl; return o }

type parentWatchOption struct{}

type ttlOption time.Duration

func (t ttlOption) applyCreate(o createOptions) createOptions { o.ttl = time.Duration(t); return o }

func (parentWatchOption) applyCreate(o createOptions) createOptions { o.parentWatch = true; return o }

// WithMode sets the create mode (default Persistent).
func WithMode(m CreateMode) CreateOption { return modeOption(m) }

// WithProtection makes the create protected: a create whose reply was lost
// still leaves exactly one node. As Curator's withProtection, the last path
// segment gets the prefix "_c_<uuid>-", and after a failure whose outcome is
// unknown (connection loss) the client looks for a node with that prefix
// before creating again. A node found from an earlier session of an
// ephemeral create is deleted instead of used. If the create finally fails,
// any node it did make is found and deleted in the background.
func WithProtection() CreateOption { return protectionOption{} }

// CreatingParentsIfNeeded creates missing parents as persistent nodes, after
// the create has failed with NoNode (Curator's creatingParentsIfNeeded).
func CreatingParentsIfNeeded() CreateOption { return parentsOption(persistentParents) }

// CreatingParentContainersIfNeeded creates missing parents as containers. It
// creates them after the create has failed with NoNode (Curator's
// creatingParentContainersIfNeeded), and as persistent nodes if the client
// was made WithContainerParents(false). The server deletes an empty container
// some time after its last child is gone.
func CreatingParentContainersIfNeeded() CreateOption { return parentsOption(containerParents) }

// WatchingParent makes CreateAndList set a children watch on the parent
// with its listing (Listing.Watch); Create ignores it.
func WatchingParent() CreateOption { return parentWatchOption{} }

// WithACL sets the node's ACL instead of the client's ACL provider's.
func WithACL(acl []zk.ACL) CreateOption { return aclOption{acl} }

// WithTTL makes a Persistent or PersistentSequential create make a TTL node
// (ZooKeeper's PERSISTENT_WITH_TTL, PERSISTENT_SEQUENTIAL_WITH_TTL: Curator's
// create().withTtl(ttl)): the servers delete it once it has had no child and
// no change for ttl. ttl is counted in whole milliseconds, as the servers
// do, and must be from 1 ms to MaxTTL; with another mode, or out of that
// range, Create fails with an error wrapping ErrInvalidArgument. The servers
// refuse TTL nodes unless they run with zookeeper.extendedTypesEnabled=true
// (ZooKeeper's Unimplemented, which go-zookeeper reports as "unknown error:
// -6"), and the client does not retry that.
func WithTTL(ttl time.Duration) CreateOption { return ttlOption(ttl) }

// MaxTTL is the longest TTL a node may have: the servers keep it in 40 bits
// of milliseconds (ZooKeeper's EphemeralType.TTL), about 34.8 years.
const MaxTTL = (1<<40 - 1) * time.Millisecond

// Create makes a node at path and returns the path the server gave it. That
// path has the namespace stripped, a sequence number for sequential modes,
// and the protection prefix for protected creates. data nil means the
// client's default data (the local IP address, as in Curator); pass []byte{}
// for an empty node.
func (c *Client) Create(ctx context.Context, path string, data []byte, opts ...CreateOption) (string, error) {
	if !c.usable() {
		return "", opError("create", path, errUnusable)
	}
	return c.create(ctx, path, data, createOptionsOf(opts))
}

func createOptionsOf(opts []CreateOption) createOptions {
	var o createOptions
	for _, opt := range opts {
		if opt != nil {
			o = opt.applyCreate(o)
		}
	}
	return o
}

// create is Create with its options read.
func (c *Client) create(ctx context.Context, path string, data []byte, o createOptions) (string, error) {
	if data == nil {
		data = c.cfg.defaultData
	}
	if o.acl == nil {
		o.acl = c.cfg.aclProvider.ACLForPath(path)
	}
	if err := o.checkTTL(); err != nil {
		return "", opError("create", path, err)
	}
	if err := c.checkRequest("create", path, func(p string) int {
		n := createSize(p, data, o.acl)
		if o.protected {
			n += protected.PrefixLength
		}
		if o.ttl != 0 {
			n += 8 // the TTL, a long
		}
		return n
	}); err != nil {
		return "", err
	}
	if o.protected {
		return c.createProtected(ctx, path, data, o)
	}
	sp := c.ns.fix(path)
	if o.sent != nil {
		z := c.zk().Conn // the current connection: a create retried on another is not heard of
		defer z.Forget(z.OnWritten(sp, o.sent))
	}
	created, err := call(ctx, c, "create", path, sp, func(z *zkconn.Conn, p string) (string, error) {
		return c.createWithParents(z, p, data, o)
	})
	if err != nil {
		return "", err
	}
	return c.ns.unfix(created), nil
}

// createWithParents issues one create of the server path p and, if its
// parent is missing and parents were asked for, creates them and tries once more.
func (c *Client) createWithParents(z *zkconn.Conn, p string, data []byte, o createOptions) (string, error) {
	create := func() (string, error) {
		switch {
		case o.mode == Container:
			return z.CreateContainer(p, data, zk.FlagContainer, o.acl)
		case o.ttl != 0:
			return z.CreateTTL(p, data, o.mode.ttlFlags(), o.acl, o.ttl)
		}
		return z.Create(p, data, o.mode.flags(), o.acl)
	}
	created, err := create()
	// The server may reap an ancestor that is an empty container while
	// mkdirs runs (after mkdirs saw it, so that a create in mkdirs fails
	// with NoNode) or between mkdirs and the create: make the parents
	// again, a bounded number of times.
	for try := 0; errors.Is(err, zk.ErrNoNode) && o.parents != noParents && try < parentAttempts; try++ {
		if err = c.mkdirs(z, p, false, o.parents == containerParents && c.cfg.containers); err == nil {
			created, err = create()
		}
	}
	return created, err
}

// parentAttempts bounds how often a create makes its missing parents.
const parentAttempts = 3

type deleteOptions struct {
	version    int32
	guaranteed bool
}

// DeleteOption changes how Delete removes a node. Like a CreateOption, it
// is a small value, so that the options of a delete allocate nothing.
type DeleteOption interface {
	applyDelete(deleteOptions) deleteOptions
}

type versionOption int32

func (v versionOption) applyDelete(o deleteOptions) deleteOptions { o.version = int32(v); return o }

type guaranteedOption struct{}

func (guaranteedOption) applyDelete(o deleteOptions) deleteOptions { o.guaranteed = true; return o }

// WithVersion deletes only if the node's data version is v (default: any version).
func WithVersion(v int32) DeleteOption { return versionOption(v) }

// Guaranteed makes a delete that fails for a retryable reason go on in the
// background. When it fails so (connection loss, retries exhausted, ctx
// ended), the error is returned and the client goes on deleting in the
// background until the node is gone or the client closes (Curator's
// guaranteed()). An orphaned lock node would block every contender forever;
// this is what prevents it.
func Guaranteed() DeleteOption { return guaranteedOption{} }

// Delete removes the node at path. A missing node is an error that unwraps
// to zk.ErrNoNode.
func (c *Client) Delete(ctx context.Context, path string, opts ...DeleteOption) error {
	if !c.usable() {
		return opError("delete", path, errUnusable)
	}
	o := deleteOptions{version: -1}
	for _, opt := range opts {
		if opt != nil {
			o = opt.applyDelete(o)
		}
	}
	if err := ValidatePath(path); err != nil {
		return opError("delete", path, err)
	}
	del := deleteAnyVersion
	if version := o.version; version != -1 {
		del = func(z *zkconn.Conn, p string) (struct{}, error) { return struct{}{}, z.Delete(p, version) }
	}
	full := c.ns.fix(path)
	_, err := call(ctx, c, "delete", path, full, del)
	if err != nil && o.guaranteed && !errors.Is(err, ErrClosed) &&
		(c.retryable(err) || ctx != nil && ctx.Err() != nil) {
		c.log.Info("delete failed; it goes on in the background", zap.String("path", path), zap.Error(err))
		_ = c.inBackground("guaranteed delete", path, func(z *zkconn.Conn) error {
			if _, err := del(z, full); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			return nil
		})
	}
	return err
}

// deleteAnyVersion is the attempt of a delete of whatever version.
func deleteAnyVersion(z *zkconn.Conn, p string) (struct{}, error) { return struct{}{}, z.Delete(p, -1) }

// Exists reports whether a node is at path, with its Stat if so.
func (c *Client) Exists(ctx context.Context, path string) (bool, *zk.Stat, error) {
	r, err := read(ctx, c, "exists", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		ok, stat, err := z.Exists(p)
		return nodeResult{ok: ok, stat: stat}, err
	})
	return r.ok, r.stat, err
}

// ExistsW is Exists plus a one-shot watch, set whether or not the node
// exists. Prefer GetDataW to wait for a node to go: a watch on a node that
// never appears stays on the server. Event paths are server paths
// (namespace included).
func (c *Client) ExistsW(ctx context.Context, path string) (bool, *zk.Stat, <-chan zk.Event, error) {
	r, err := read(ctx, c, "exists", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		ok, stat, w, err := z.ExistsW(p)
		c.watches.touched(p, false)
		return nodeResult{ok: ok, stat: stat, watch: w}, err
	})
	return r.ok, r.stat, r.watch, err
}

// GetData returns the node's data and Stat.
func (c *Client) GetData(ctx context.Context, path string) ([]byte, *zk.Stat, error) {
	r, err := read(ctx, c, "get data", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		data, stat, err := z.Get(p)
		return nodeResult{data: data, stat: stat}, err
	})
	return r.data, r.stat, err
}

// GetDataW is GetData plus a one-shot watch on the node's data and deletion.
// A missing node returns zk.ErrNoNode and leaves no watch behind, which is
// why lock waiters use it (CURATOR-107). The channel gets one event; on
// session expiry or Close the event has Type zk.EventNotWatching and Err set.
// Event paths are server paths (namespace included).
func (c *Client) GetDataW(ctx context.Context, path string) ([]byte, *zk.Stat, <-chan zk.Event, error) {
	r, err := read(ctx, c, "get data", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		data, stat, w, err := z.GetW(p)
		c.watches.touched(p, false)
		return nodeResult{data: data, stat: stat, watch: w}, err
	})
	return r.data, r.stat, r.watch, err
}

// SetData sets the node's data if its version is version (-1: any).
func (c *Client) SetData(ctx context.Context, path string, data []byte, version int32) (*zk.Stat, error) {
	if !c.usable() {
		return nil, opError("set data", path, errUnusable)
	}
	if err := c.checkRequest("set data", path, func(p string) int { return setDataSize(p, data) }); err != nil {
		return nil, err
	}
	r, err := read(ctx, c, "set data", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		stat, err := z.Set(p, data, version)
		return nodeResult{stat: stat}, err
	})
	return r.stat, err
}

// Children returns the names of the node's children, in server order.
func (c *Client) Children(ctx context.Context, path string) ([]string, *zk.Stat, error) {
	r, err := read(ctx, c, "get children", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		names, stat, err := z.Children(p)
		return nodeResult{children: names, stat: stat}, err
	})
	return r.children, r.stat, err
}

// ChildrenW is Children plus a one-shot watch on the node's children.
// Event paths are server paths (namespace included).
func (c *Client) ChildrenW(ctx context.Context, path string) ([]string, *zk.Stat, <-chan zk.Event, error) {
	r, err := read(ctx, c, "get children", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		names, stat, w, err := z.ChildrenW(p)
		c.watches.touched(p, true)
		return nodeResult{children: names, stat: stat, watch: w}, err
	})
	return r.children, r.stat, r.watch, err
}

// Sync asks the server the client is connected to to catch up with the leader for path.
func (c *Client) Sync(ctx context.Context, path string) error {
	_, err := read(ctx, c, "sync", path, func(z *zkconn.Conn, p string) (nodeResult, error) {
		_, err := z.Sync(p)
		return nodeResult{}, err
	})
	return err
}

// nodeResult carries what a single-node operation returns.
type nodeResult struct {
	ok       bool
	data     []byte
	children []string
	stat     *zk.Stat
	watch    <-chan zk.Event
}

// read validates path and runs a single-node operation on its server path
// in the retry loop. (SetData and Sync go through it too: they are as safe
// to retry as a read.)
func read[T any](ctx context.Context, c *Client, op, path string, fn func(z *zkconn.Conn, serverPath string) (T, error)) (T, error) {
	var zero T
	if !c.usable() {
		return zero, opError(op, path, errUnusable)
	}
	if err := ValidatePath(path); err != nil {
		return zero, opError(op, path, err)
	}
	return call(ctx, c, op, path, c.ns.fix(path), fn)
}

// Multi runs ops as one transaction: all or none. The operations are
// *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest and
// *zk.CheckVersionRequest, with paths as the caller sees them. Created paths
// in the responses have the namespace stripped. A failed transaction returns
// the responses with each operation's error and an error for the first
// failure.
func (c *Client) Multi(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	if !c.usable() {
		return nil, opError("multi", "", errUnusable)
	}
	fixed := make([]any, len(ops))
	size := requestHeaderSize + multiHeaderSize // the header, and the end marker
	for i, op := range ops {
		path, fixedOp, opSize, err := c.fixMultiOp(op)
		if err != nil {
			return nil, opError("multi", path, errs.Errorf("operation %d: %w", i, err))
		}
		fixed[i] = fixedOp
		size += multiHeaderSize + opSize
	}
	if err := c.checkSize(size); err != nil {
		return nil, opError("multi", "", err)
	}
	res, err := call(ctx, c, "multi", "", "", func(z *zkconn.Conn, _ string) ([]zk.MultiResponse, error) {
		return z.Multi(fixed...)
	})
	for i := range res {
		if res[i].String != "" {
			res[i].String = c.ns.unfix(res[i].String)
		}
	}
	return res, err
}

// fixMultiOp validates one operation of a Multi and returns its path as the
// caller gave it, a copy with the server path (and, for a create without an
// ACL, the provider's ACL), and the size of its body on the wire.
func (c *Client) fixMultiOp(op any) (path string, fixed any, size int, err error) {
	switch r := op.(type) {
	case *zk.CreateRequest:
		if cp, p, ok := inNamespace(c, r, func(r *zk.CreateRequest) *string { return &r.Path }); ok {
			if cp.Acl == nil {
				cp.Acl = c.cfg.aclProvider.ACLForPath(p)
			}
			return p, cp, createSize(cp.Path, cp.Data, cp.Acl), ValidatePath(p)
		}
	case *zk.SetDataRequest:
		if cp, p, ok := inNamespace(c, r, func(r *zk.SetDataRequest) *string { return &r.Path }); ok {
			return p, cp, setDataSize(cp.Path, cp.Data), ValidatePath(p)
		}
	case *zk.DeleteRequest:
		if cp, p, ok := inNamespace(c, r, func(r *zk.DeleteRequest) *string { return &r.Path }); ok {
			return p, cp, stringSize(cp.Path) + 4, ValidatePath(p) // path, version
		}
	case *zk.CheckVersionRequest:
		if cp, p, ok := inNamespace(c, r, func(r *zk.CheckVersionRequest) *string { return &r.Path }); ok {
			return p, cp, stringSize(cp.Path) + 4, ValidatePath(p) // path, version
		}
	}
	return "", nil, 0, invalidArgument("unsupported operation %T (%v); want a non-nil *zk.CreateRequest, *zk.DeleteRequest, *zk.SetDataRequest or *zk.CheckVersionRequest", op, op)
}

// inNamespace returns a copy of the request r whose path (the field pathOf
// points to) is in the client's namespace, and the path as the caller gave
// it; ok is false for a nil r.
func inNamespace[T any](c *Client, r *T, pathOf func(*T) *string) (cp *T, path string, ok bool) {
	if r == nil {
		return nil, "", false
	}
	v := *r
	path = *pathOf(r)
	*pathOf(&v) = c.ns.fix(path)
	return &v, path, true
}
