package recipes

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
)

// RevokeMessage is the data Curator's Revoker writes to ask a holder to
// release: ASCII "__REVOKE__".
const RevokeMessage = locktree.RevokeMessage

// Revoke asks the holder of the lock node at nodePath to release it. As
// Curator's Revoker.attemptRevoke, it writes RevokeMessage to the node. The
// holder must have made its lock revocable (in Go or in Java); revocation is
// a request, not a force. A node that is already gone is no error. A nil
// client is an error wrapping framework.ErrInvalidArgument, a closed one
// framework.ErrClosed; a bad path (the root included) unwraps to
// zk.ErrInvalidPath; without WRITE permission on the node, the error unwraps
// to zk.ErrNoAuth.
func Revoke(ctx context.Context, client *framework.Client, nodePath string) error {
	if err := checkArgs(client, nodePath); err != nil {
		return err
	}
	_, err := client.SetData(ctx, nodePath, []byte(RevokeMessage), -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}
