package recipes

import (
	"context"
	"fmt"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
)

// checkArgs checks what every recipe constructor (and Revoke) is given: a
// client that is neither nil (an error wrapping framework.ErrInvalidArgument) nor closed
// (wrapping framework.ErrClosed), and a path ZooKeeper accepts other than
// the root or under /zookeeper, the servers' own tree (namespace included;
// framework.IsReserved), wrapping framework.ErrInvalidArgument and zk.ErrInvalidPath: a
// recipe's nodes go under its path, and Curator's names for them assume a
// path of at least one segment; no lock node is the root. A path so long
// that no node under it would fit in a request the servers take is refused
// too (wrapping framework.ErrInvalidArgument).
func checkArgs(client *framework.Client, path string) error {
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
	if room := client.JuteMaxBuffer() - lockNodeRoom - len(client.Namespace()); len(path) > room {
		return errs.Errorf("%w: path of %d bytes is too long: the servers take requests of at most %d bytes (jute.maxbuffer), and a lock node's name, data and ACL need %d of them",
			framework.ErrInvalidArgument, len(path), client.JuteMaxBuffer(), lockNodeRoom)
	}
	return nil
}

// lockNodeRoom is what a recipe keeps of the servers' jute.maxbuffer for
// the name, data and ACL of a node under its path.
const lockNodeRoom = 1024

// checkContext refuses a nil context: every call that takes one needs it to
// know when to give up.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return errs.Errorf("%w: nil context", framework.ErrInvalidArgument)
	}
	return nil
}
