package framework

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/protected"
	"github.com/gocurator/curator/internal/zkconn"
)

// ProtectedName returns name with Curator's protection prefix for id:
// "_c_<id>-<name>" (ProtectedUtils.toProtectedZNode).
func ProtectedName(id, name string) string { return protected.Name(id, name) }

// IsProtectedName reports whether a node name carries Curator's protection
// prefix. It applies Curator's own test (ProtectedUtils.isProtectedZNode):
// longer than 40 characters, "_c_" first, "-" at index 39, and a UUID in
// between.
func IsProtectedName(name string) bool { return protected.Is(name) }

// createProtected is Curator's protected create (docs/tree-format.md):
// the first attempt just creates; every later attempt first looks for a
// child with our prefix, which a create whose reply was lost has left. A node
// found from a session other than the one the create began in is deleted and
// not used (its session is gone, or going). When the create finally fails,
// whatever it may have made is found and deleted in the background.
func (c *Client) createProtected(ctx context.Context, path string, data []byte, o createOptions) (string, error) {
	pc := &protectedCreate{c: c, data: data, o: o}
	full := pc.paths(path)
	if o.sent != nil {
		z := c.zk().Conn
		defer z.Forget(z.OnWritten(full, o.sent))
	}
	var abandoned <-chan struct{}
	created, err := retryLoop[string](ctx, c, "create", path, full, pc, &abandoned)
	if err == nil {
		return c.ns.unfix(created), nil
	}
	if c.retryable(err) || ctx != nil && ctx.Err() != nil {
		over := c.findAndDeleteInBackground(pc.parent, pc.prefix, abandoned)
		return "", opError("create", path, &cleaningUp{err, over})
	}
	return "", opError("create", path, err)
}

// cleaningUp is the error of a protected create whose node, if it made
// one, the client deletes in the background: over is closed once it has
// (CleanupDone).
type cleaningUp struct {
	err  error
	over <-chan struct{}
}

func (e *cleaningUp) Error() string { return e.err.Error() }
func (e *cleaningUp) Unwrap() error { return e.err }

// CleanupDone returns, for the error of a create made with WithProtection,
// a channel closed once the client has deleted whatever the failed create
// may have made (Curator's FindAndDeleteProtectedNodeInBackground: a
// create whose context ended while it was in flight, or whose retries ran
// out, may have made its node all the same), or has given up because it
// closed; nil for any other error, whose create left nothing to delete. The
// delete runs in the background whether or not anyone waits: a caller that
// must not return while the node may still be there (a lock recipe's
// Close) waits on the channel, bounded as it sees fit.
func CleanupDone(err error) <-chan struct{} {
	var cu *cleaningUp
	if errors.As(err, &cu) {
		return cu.over
	}
	return nil
}

// protectedCreate is the attempter of a protected create. Its attempts run
// one after the other (each ends, or is abandoned with the whole create,
// before the next begins), so it keeps its state across them unguarded.
type protectedCreate struct {
	c              *Client
	data           []byte
	o              createOptions
	parent, prefix string // the parent's server path, and "_c_<uuid>-"
	tried          bool   // a create was sent
	session        int64  // the session of the last create sent
}

// paths returns the server path of the create of path with a new
// protection prefix, and notes its parent's server path and the prefix, as
// parts of it: a single allocation.
func (pc *protectedCreate) paths(path string) (full string) {
	dir, name := SplitPath(path)
	var b strings.Builder
	b.Grow(len(pc.c.ns) + len(dir) + 1 + protected.PrefixLength + len(name))
	b.WriteString(string(pc.c.ns))
	if dir != "/" {
		b.WriteString(dir)
	}
	end := b.Len()
	b.WriteByte('/')
	start := b.Len()
	protected.WriteName(&b, protected.NewIDBytes(), name)
	full = b.String()
	pc.parent, pc.prefix = full[:end], full[start:start+protected.PrefixLength]
	if pc.parent == "" {
		pc.parent = "/"
	}
	return full
}

func (pc *protectedCreate) attempt(z *zkconn.Conn, full string) (string, error) {
	c := pc.c
	if pc.tried {
		found, err := findProtected(z, pc.parent, pc.prefix)
		if err != nil {
			return "", err
		}
		if found != "" {
			if !pc.o.mode.IsEphemeral() || c.SessionID() == pc.session {
				return found, nil
			}
			c.log.Info("protected create found a node of an earlier session; deleting it", zap.String("path", found))
			c.deleteInBackground(found)
		}
	}
	pc.tried = true
	pc.session = c.SessionID()
	return c.createWithParents(z, full, pc.data, pc.o)
}

// findProtected returns the server path of the first child of parent (in
// server order) whose name starts with prefix, or "".
func findProtected(z *zkconn.Conn, parent, prefix string) (string, error) {
	children, _, err := z.Children(parent)
	if errors.Is(err, zk.ErrNoNode) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, ch := range children {
		if strings.HasPrefix(ch, prefix) {
			return JoinPath(parent, ch), nil
		}
	}
	return "", nil
}
