package framework

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/retry"
)

// call runs one operation in Curator's retry loop and returns its value:
// before each attempt it waits (up to the connection timeout) for a
// connection and makes sure auth and the namespace are in place on it; the
// attempt runs on that connection; a retryable failure is retried as the
// policy allows. Errors come back as *OpError.
func call[T any](ctx context.Context, c *Client, op, path string, attempt func(z *zk.Conn) (T, error)) (T, error) {
	v, err := retryLoop(ctx, c, op, path, attempt, nil)
	return v, opError(op, path, err)
}

// retryLoop is call without the OpError. If abandoned is not nil and ctx
// cuts an attempt short while it is in flight, *abandoned is set to a channel
// closed when that attempt has ended.
func retryLoop[T any](ctx context.Context, c *Client, op, path string, attempt func(z *zk.Conn) (T, error), abandoned *<-chan struct{}) (T, error) {
	var out T
	if ctx == nil {
		return out, invalidArgument("nil context")
	}
	if c.IsClosed() {
		return out, ErrClosed
	}
	err := retry.Do(ctx, c.policy, func(ctx context.Context) error {
		z, err := c.prepare(ctx)
		if err != nil {
			return err
		}
		v, err, pending := interruptible(ctx, func() (T, error) { return attempt(z.Conn) })
		if pending != nil {
			if abandoned != nil {
				*abandoned = pending
			}
			return err
		}
		out = v
		return connectionLoss(err)
	}, retry.OnRetry(func(err error, n int, wait time.Duration) {
		c.log.Debug("retrying", zap.String("op", op), zap.String("path", path),
			zap.Int("retry", n), zap.Duration("wait", wait), zap.Error(err))
	}))
	return out, err
}

// connectionLoss makes the raw network error that go-zookeeper hands a
// request whose write to the server failed (conn.go, sendData) the
// connection loss it is, as ZooKeeper's Java client reports it
// (CONNECTIONLOSS), so that the retry policy retries it as Curator does.
func connectionLoss(err error) error {
	if err == nil {
		return nil // the common case, kept free of errors.As's allocation
	}
	var ne *net.OpError
	if errors.As(err, &ne) && !retry.IsRetryable(err) {
		return errs.Errorf("%w: %w", zk.ErrConnectionClosed, err)
	}
	return err
}

// interruptible runs fn and returns its result, or ctx's error as soon as
// ctx ends. go-zookeeper's calls take no context, so an abandoned call
// finishes on its own goroutine (within go-zookeeper's own timeouts, or at
// Close); pending is then closed when it has. The result of an abandoned
// call is dropped: it travels through a channel, never through variables
// the caller shares, so nothing races with the caller.
func interruptible[T any](ctx context.Context, fn func() (T, error)) (T, error, <-chan struct{}) {
	var zero T
	if ctx.Done() == nil {
		v, err := fn()
		return v, err, nil
	}
	if err := ctx.Err(); err != nil {
		return zero, err, nil
	}
	type result struct {
		v   T
		err error
	}
	results := make(chan result, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		v, err := fn()
		results <- result{v, err}
	}()
	select {
	case r := <-results:
		return r.v, r.err, nil
	case <-ctx.Done():
		return zero, ctx.Err(), done
	}
}

// prepare waits for a connection, then, once per go-zookeeper connection,
// sends the auth infos and creates the namespace node; it returns the
// connection the attempt is to run on.
func (c *Client) prepare(ctx context.Context) (*conn, error) {
	if err := c.waitConnected(ctx); err != nil {
		return nil, err
	}
	z := c.zk()
	if z.ready.Load() {
		return z, nil
	}
	z.readyMu.Lock()
	defer z.readyMu.Unlock()
	if z.ready.Load() {
		return z, nil
	}
	_, err, _ := interruptible(ctx, func() (struct{}, error) {
		for _, a := range c.cfg.auth {
			if err := z.AddAuth(a.scheme, a.auth); err != nil {
				return struct{}{}, opError("auth", a.scheme, err)
			}
		}
		if c.ns != "" {
			if err := c.mkdirs(z.Conn, string(c.ns), true, c.cfg.containers); err != nil {
				return struct{}{}, opError("create namespace", "/"+c.cfg.namespace, err)
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, err
	}
	z.ready.Store(true)
	return z, nil
}

// mkdirs creates every missing node of the server path p (p itself only if
// makeLast), with empty data, as containers or persistent nodes. It looks
// for the deepest existing ancestor first (Curator 5.7.1+), so an existing
// tree costs reads, not failed creates.
func (c *Client) mkdirs(z *zk.Conn, p string, makeLast bool, containers bool) error {
	if !makeLast {
		p, _ = SplitPath(p)
	}
	var missing []string
	for q := p; q != "/"; q, _ = SplitPath(q) {
		ok, _, err := z.Exists(q)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		missing = append(missing, q)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		q := missing[i]
		if c.cfg.beforeParentCreate != nil {
			c.cfg.beforeParentCreate(q)
		}
		acl := c.cfg.aclProvider.ACLForPath(c.ns.unfix(q))
		var err error
		if containers {
			_, err = z.CreateContainer(q, []byte{}, zk.FlagContainer, acl)
		} else {
			_, err = z.Create(q, []byte{}, zk.FlagPersistent, acl)
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
