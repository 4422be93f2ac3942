package acquire

import (
	"context"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/locktree"
)

// watchRevocation watches our own node's data, as Curator's revocation
// watcher does: each change is read again (re-arming the watch), and
// locktree.RevokeMessage calls revoked on a goroutine of its own, so that
// it may release the lock. Unlike Curator's, the first read counts too: a
// request written between the node's create and the watch is heard, not
// lost. It returns a function that stops the watching and waits for it to
// end.
func (l *Lock) watchRevocation(path string, revoked func(node string)) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			data, _, w, err := l.client.GetDataW(ctx, path)
			if err != nil {
				return // node gone, client closed, or stopped
			}
			if string(data) == locktree.RevokeMessage { // the first read too: a request made before the watch was set is heard
				go l.revoked(path, revoked)
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
func (l *Lock) revoked(path string, listener func(node string)) {
	defer func() {
		if p := recover(); p != nil {
			l.deleteNode(context.Background(), path)
			panic(p)
		}
	}()
	listener(path)
}
