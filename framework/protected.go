package framework

import (
	"context"
	"errors"
	"strings"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/locktree"
)

// ProtectedName returns name with Curator's protection prefix for id:
// "_c_<id>-<name>" (ProtectedUtils.toProtectedZNode).
func ProtectedName(id, name string) string { return locktree.ProtectedName(id, name) }

// IsProtectedName reports whether a node name carries Curator's protection
// prefix, by Curator's own test (ProtectedUtils.isProtectedZNode): longer
// than 40 characters, "_c_" first, "-" at index 39, and a UUID in between.
func IsProtectedName(name string) bool { return locktree.IsProtected(name) }

// createProtected is Curator's protected create (curator-lock-trees.md §2):
// the first attempt just creates; every later attempt first looks for a
// child with our prefix, which a create whose reply was lost has left. A node
// found from a session other than the one the create began in is deleted and
// not used (its session is gone, or going). When the create finally fails,
// whatever it may have made is found and deleted in the background.
func (c *Client) createProtected(ctx context.Context, path string, data []byte, o createOptions) (string, error) {
	parent, name := SplitPath(c.ns.fix(path))
	prefix := locktree.ProtectedName(locktree.NewProtectedID(), "")
	full := JoinPath(parent, prefix+name)
	session := c.SessionID()
	first := true
	var abandoned <-chan struct{}
	created, err := retryLoop(ctx, c, "create", path, func(z *zk.Conn) (string, error) {
		if !first {
			found, err := findProtected(z, parent, prefix)
			if err != nil {
				return "", err
			}
			if found != "" {
				if !o.mode.IsEphemeral() || c.SessionID() == session {
					return found, nil
				}
				c.log.Info("protected create found a node of an earlier session; deleting it", zap.String("path", found))
				c.deleteInBackground(found)
			}
		}
		first = false
		session = c.SessionID()
		return c.createWithParents(z, full, data, o)
	}, &abandoned)
	if err == nil {
		return c.ns.unfix(created), nil
	}
	if c.retryable(err) || ctx != nil && ctx.Err() != nil {
		c.findAndDeleteInBackground(parent, prefix, abandoned)
	}
	return "", opError("create", path, err)
}

// findProtected returns the server path of the first child of parent (in
// server order) whose name starts with prefix, or "".
func findProtected(z *zk.Conn, parent, prefix string) (string, error) {
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
