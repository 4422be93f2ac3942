package framework

import (
	"errors"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/retry"
)

// inBackground runs fn in the retry loop on a goroutine of the client's,
// again and again, until it succeeds, fails for a reason that retrying
// cannot fix, or the client closes. It is how guaranteed deletes and the
// clean-up of failed protected creates outlive the call that started them.
func (c *Client) inBackground(what, path string, fn func(z *zk.Conn) error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.bg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.bg.Done()
		for {
			_, err := retryLoop[struct{}](c.bgCtx, c, what, path, "", attemptFunc[struct{}](func(z *zk.Conn, _ string) (struct{}, error) { return struct{}{}, fn(z) }), nil)
			switch {
			case err == nil:
				c.log.Debug("background work done", zap.String("what", what), zap.String("path", path))
				return
			case c.bgCtx.Err() != nil || errors.Is(err, ErrClosed):
				return
			case !c.retryable(err):
				c.log.Warn("background work failed", zap.String("what", what), zap.String("path", path), zap.Error(err))
				return
			}
			c.log.Debug("background work goes on", zap.String("what", what), zap.String("path", path), zap.Error(err))
		}
	}()
}

// deleteInBackground deletes the server path p until it is gone.
func (c *Client) deleteInBackground(p string) {
	c.inBackground("guaranteed delete", c.ns.unfix(p), func(z *zk.Conn) error {
		if err := z.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	})
}

// findAndDeleteInBackground deletes the child of parent with the protected
// prefix, if a failed create made one (Curator's
// FindAndDeleteProtectedNodeInBackground). If the last attempt was abandoned
// while in flight, it first waits for that attempt to end, so that a node it
// creates late is found too.
func (c *Client) findAndDeleteInBackground(parent, prefix string, abandoned <-chan struct{}) {
	c.inBackground("find and delete protected node", c.ns.unfix(parent), func(z *zk.Conn) error {
		if abandoned != nil {
			select {
			case <-abandoned:
			case <-c.bgCtx.Done():
				return c.bgCtx.Err()
			}
		}
		found, err := findProtected(z, parent, prefix)
		if err != nil || found == "" {
			return err
		}
		if err := z.Delete(found, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	})
}

// retryable reports whether err is worth trying again under the client's policy.
func (c *Client) retryable(err error) bool { return retry.Retryable(c.policy, err) }
