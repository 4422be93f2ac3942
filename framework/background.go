package framework

import (
	"errors"
	"sync"
	"time"

	"github.com/gocurator/curator/internal/zkconn"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/retry"
)

// inBackground runs fn in the retry loop on a goroutine of the client's,
// again and again, until it succeeds, fails for a reason that retrying
// cannot fix, or the client closes. It is how guaranteed deletes and the
// clean-up of failed protected creates outlive the call that started them.
// The channel it returns is closed once the work is over, whichever way.
func (c *Client) inBackground(what, path string, fn func(z *zkconn.Conn) error) (over <-chan struct{}) {
	done := make(chan struct{})
	c.bgMu.Lock()
	if c.bgClosed {
		c.bgMu.Unlock()
		close(done)
		return done
	}
	c.bg.Add(1)
	c.bgMu.Unlock()
	go func() {
		defer c.bg.Done()
		defer close(done)
		for {
			_, err := retryLoop[struct{}](c.bgCtx, c, what, path, "", attemptFunc[struct{}](func(z *zkconn.Conn, _ string) (struct{}, error) { return struct{}{}, fn(z) }), nil)
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
	return done
}

// deleteInBackground deletes the server path p until it is gone.
func (c *Client) deleteInBackground(p string) {
	_ = c.inBackground("guaranteed delete", c.ns.unfix(p), func(z *zkconn.Conn) error {
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
func (c *Client) findAndDeleteInBackground(parent, prefix string, abandoned <-chan struct{}) (over <-chan struct{}) {
	return c.inBackground("find and delete protected node", c.ns.unfix(parent), func(z *zkconn.Conn) error {
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

// DeleteLater deletes the node at path in the background once t has come (at
// once if it has). The delete is guaranteed: as a Delete made Guaranteed, it
// is tried again until the node is gone or the client closes. It does not
// wait. cancel takes the delete back if it has not begun, and reports whether
// it did. A lock recipe uses it for the node of a grant lost at SUSPENDED: t
// is then StateError.ExpiryBound, so that the node goes no sooner than the
// servers themselves could have let it go, and the holder told of the loss
// keeps that margin to stop.
func (c *Client) DeleteLater(path string, t time.Time) (cancel func() bool) {
	if !c.usable() || ValidatePath(path) != nil {
		return func() bool { return false }
	}
	full := c.ns.fix(path)
	return c.later.add(t, func() {
		_ = c.inBackground("delete", path, func(z *zkconn.Conn) error {
			if err := z.Delete(full, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			return nil
		})
	})
}

// laterDeletes are the DeleteLater calls whose time has not come: timers,
// which start no goroutine until they fire, stopped at Close.
type laterDeletes struct {
	mu      sync.Mutex
	stopped bool
	waiting map[*laterDelete]struct{}
}

// laterDelete is one DeleteLater call: fn, when its timer fires.
type laterDelete struct {
	timer *time.Timer
	fn    func()
}

// add runs fn at t, unless the client closes first; cancel takes it back.
func (l *laterDeletes) add(t time.Time, fn func()) (cancel func() bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		return func() bool { return false }
	}
	if l.waiting == nil {
		l.waiting = map[*laterDelete]struct{}{}
	}
	d := &laterDelete{fn: fn}
	// The timer's function takes d under l.mu, which this holds until
	// d.timer is set: it cannot see d before.
	d.timer = time.AfterFunc(time.Until(t), func() {
		if l.take(d) {
			d.fn()
		}
	})
	l.waiting[d] = struct{}{}
	return func() bool {
		if !l.take(d) {
			return false // its timer's function took it: the delete runs
		}
		d.timer.Stop() // it may have fired: its function then finds nothing to take
		return true
	}
}

// take removes d, and reports whether it was there: whoever takes it
// decides what becomes of its delete.
func (l *laterDeletes) take(d *laterDelete) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.waiting[d]; !ok {
		return false
	}
	delete(l.waiting, d)
	return true
}

// stop takes every delete back (the client closes; its session goes with
// its nodes).
func (l *laterDeletes) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	for d := range l.waiting {
		d.timer.Stop()
	}
	l.waiting = nil
}
