package recipes

import (
	"context"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
)

// checkArgs checks what every recipe constructor (and Revoke) is given: a
// client that is neither nil (an error wrapping ErrBadArgument) nor closed
// (wrapping framework.ErrClosed), and a path ZooKeeper accepts other than
// the root (wrapping zk.ErrInvalidPath): a recipe's nodes go under its path,
// and Curator's names for them assume a path of at least one segment; no
// lock node is the root.
func checkArgs(client *framework.Client, path string) error {
	if client == nil {
		return fmt.Errorf("%w: nil client", ErrBadArgument)
	}
	if client.IsClosed() {
		return fmt.Errorf("gocurator: %s: %w", path, framework.ErrClosed)
	}
	if err := framework.ValidatePath(path); err != nil {
		return err
	}
	if path == "/" {
		return fmt.Errorf("%w %q: must not be the root", zk.ErrInvalidPath, path)
	}
	return nil
}

// checkContext refuses a nil context: every call that takes one needs it to
// know when to give up.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrBadArgument)
	}
	return nil
}
