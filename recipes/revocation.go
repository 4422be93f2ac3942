package recipes

import (
	"context"
	"errors"
	"sync"

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

// watchRevocation watches our own node's data, as Curator's revocation
// watcher does: each change is read again (re-arming the watch), and
// RevokeMessage calls listener on a goroutine of its own, so that the
// listener may release the lock. Unlike Curator's, the first read counts
// too: a request written between the node's create and the watch is
// heard, not lost. It returns a function that stops the
// watching and waits for it to end. Its events name recipe, the kind of
// the lock.
func (li *lockInternals) watchRevocation(recipe, path string, listener func()) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			data, _, w, err := li.client.GetDataW(ctx, path)
			if err != nil {
				return // node gone, client closed, or stopped
			}
			if string(data) == RevokeMessage { // the first read too: a request made before the watch was set is heard
				li.client.Emit(framework.Event{Kind: framework.RevocationRequested, Recipe: recipe, Path: li.base, Node: path})
				go li.revoked(path, listener)
			}
			select {
			case ev := <-w:
				if ev.Type != zk.EventNodeDataChanged {
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// revoked calls the revocation listener of our node at path. A listener that
// panics takes the process down (it runs on a goroutine of the library's),
// but not with the lock: the node is deleted first, within a bound of its
// own, and the panic then goes on.
func (li *lockInternals) revoked(path string, listener func()) {
	defer func() {
		if p := recover(); p != nil {
			li.deleteNode(context.Background(), path)
			panic(p)
		}
	}()
	listener()
}
