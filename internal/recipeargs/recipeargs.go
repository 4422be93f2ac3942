// Package recipeargs checks what every recipe is given, in package recipes
// and in its sibling packages (recipes/nodes, recipes/barriers,
// recipes/atomic), so that each refuses the same misuse with the same error:
// an error, never a panic or a hang.
package recipeargs

import (
	"context"
	"fmt"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// Check checks what every recipe constructor is given: a client that is
// neither nil (an error wrapping framework.ErrInvalidArgument) nor closed
// (wrapping framework.ErrClosed), and a path ZooKeeper accepts other than
// the root or under /zookeeper, the servers' own tree (namespace included;
// framework.IsReserved), wrapping framework.ErrInvalidArgument and
// zk.ErrInvalidPath: a recipe's nodes go at or under its path, and Curator's
// names for them assume a path of at least one segment. A path so long that
// no node under it would fit in a request the servers take is refused too
// (wrapping framework.ErrInvalidArgument).
func Check(client *framework.Client, path string) error {
	if client == nil {
		return errs.Errorf("%w: nil client", framework.ErrInvalidArgument)
	}
	if client.IsClosed() {
		return errs.Errorf("%s: %w", path, framework.ErrClosed)
	}
	if err := framework.ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return &framework.PathError{Path: path, Problem: "a recipe's path must not be the root"}
	}
	if full := framework.JoinPath("/"+client.Namespace(), path); framework.IsReserved(full) {
		problem := "a recipe's path must not be under /zookeeper, the servers' own tree"
		if full != path {
			problem += fmt.Sprintf(" (in namespace %q it is %s)", client.Namespace(), full)
		}
		return &framework.PathError{Path: path, Problem: problem}
	}
	if room := client.JuteMaxBuffer() - NodeRoom - len(client.Namespace()); len(path) > room {
		return errs.Errorf("%w: path of %d bytes is too long: the servers take requests of at most %d bytes (jute.maxbuffer), and a recipe node's name, data and ACL need %d of them",
			framework.ErrInvalidArgument, len(path), client.JuteMaxBuffer(), NodeRoom)
	}
	return nil
}

// NodeRoom is what a recipe keeps of the servers' jute.maxbuffer for the
// name, data and ACL of a node under its path.
const NodeRoom = 1024

// Context refuses a nil context: every call that takes one needs it to know
// when to give up.
func Context(ctx context.Context) error {
	if ctx == nil {
		return errs.Errorf("%w: nil context", framework.ErrInvalidArgument)
	}
	return nil
}

// Zero is the error of a call on a nil or zero value of what, an exported
// type whose values come from a constructor.
func Zero(what string) error {
	return errs.Errorf("%w: nil or zero %s: make one with its constructor", framework.ErrInvalidArgument, what)
}
