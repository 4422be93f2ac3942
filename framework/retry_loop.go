package framework

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/zkconn"
	"github.com/gocurator/curator/retry"
)

// call runs one operation in Curator's retry loop and returns its value:
// before each attempt it waits (up to the connection timeout) for a
// connection and makes sure auth and the namespace are in place on it; the
// attempt, attempt(conn, arg), runs on that connection; a retryable failure
// is retried as the policy allows. Errors come back as *OpError.
func call[T any](ctx context.Context, c *Client, op, path, arg string, attempt func(z *zkconn.Conn, arg string) (T, error)) (T, error) {
	v, err := retryLoop[T](ctx, c, op, path, arg, attemptFunc[T](attempt), nil)
	return v, opError(op, path, err)
}

// retryLoop is call without the OpError. If abandoned is not nil and ctx
// cuts an attempt short while it is in flight, *abandoned is set to a channel
// closed when that attempt has ended.
//
// The first attempt runs outside the retry machinery (retry.Do takes over,
// with retry.FirstAttempt, only after a retryable failure), so that a call
// that succeeds at once builds none of it.
func retryLoop[T any](ctx context.Context, c *Client, op, path, arg string, attempt attempter[T], abandoned *<-chan struct{}) (T, error) {
	var out T
	switch {
	case ctx == nil:
		return out, invalidArgument("nil context")
	case !c.usable():
		return out, errUnusable
	case c.IsClosed():
		return out, ErrClosed
	case ctx.Err() != nil:
		return out, retry.Do(ctx, nil, noAttempt) // Do's error for an ended context
	}
	start := time.Now()
	out, err := attemptOnce(ctx, c, arg, attempt, abandoned)
	if err == nil {
		return out, nil
	}
	if !c.retryable(err) && !errors.Is(err, zk.ErrNoServer) {
		return out, c.unanswered(err, start) // the common failure (NoNode, NodeExists...) builds no retry machinery
	}
	err = retry.Do(ctx, c.policy, func(ctx context.Context) error {
		v, err := attemptOnce(ctx, c, arg, attempt, abandoned)
		out = v
		return err
	}, retry.FirstAttempt(start, err), retry.OnRetry(func(err error, n int, wait time.Duration) {
		c.Emit(Event{Kind: Retrying, Op: op, Path: path, Retry: n, Wait: wait, Err: err})
	}))
	return out, c.unanswered(err, start)
}

// unanswered is the error of a call begun at start that ended with err: a
// *NoServerError naming each server's last dial when no server answered
// (a connection loss for want of one, or the context ended while the call
// waited for one), else err.
func (c *Client) unanswered(err error, start time.Time) error {
	var nc noConnection
	switch {
	case errors.As(err, &nc):
		return c.noServer(nc.err, start)
	case errors.Is(err, zk.ErrNoServer):
		return c.noServer(err, start)
	}
	return err
}

// noConnection is the error of an attempt whose context ended while it
// waited for a connection: the context's error, which unanswered makes a
// *NoServerError. A server that took the connection and never answered the
// handshake is so told, not as a bare timeout.
type noConnection struct{ err error }

func (e noConnection) Error() string { return e.err.Error() }
func (e noConnection) Unwrap() error { return e.err }

// noAttempt is the attempt of a call whose context has ended: never made.
func noAttempt(context.Context) error { return nil }

// attemptOnce is one attempt of retryLoop: wait for a connection, then run
// attempt on it as long as ctx allows. The value is the attempt's, even on
// an error, unless ctx cut the attempt short.
func attemptOnce[T any](ctx context.Context, c *Client, arg string, attempt attempter[T], abandoned *<-chan struct{}) (T, error) {
	z, err := c.prepare(ctx)
	if err != nil {
		var zero T
		return zero, err
	}
	v, pending, err := interruptible(ctx, c, z.Conn, arg, attempt)
	if pending != nil {
		if abandoned != nil {
			*abandoned = pending
		}
		return v, err
	}
	return v, connectionLoss(err)
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

// interruptible runs attempt(z, arg) and returns its result, or ctx's error
// as soon as ctx ends. go-zookeeper's calls take no context, so when ctx can
// end the call runs on one of the client's runners (runner.go) while the
// caller waits for it or for ctx; a call ctx cuts short finishes on its
// runner (within go-zookeeper's own timeouts, or at Close), and pending is
// then closed when it has. The result of an abandoned call is dropped: the
// caller never reads what the runner writes after it has gone. A context
// that cannot end (Done is nil) runs the call on the caller's goroutine.
func interruptible[T any](ctx context.Context, c *Client, z *zkconn.Conn, arg string, attempt attempter[T]) (v T, pending <-chan struct{}, err error) {
	if ctx.Done() == nil {
		v, err = attempt.attempt(z, arg)
		return v, nil, err
	}
	if err := ctx.Err(); err != nil {
		return v, nil, err
	}
	j := &callJob[T]{a: attempt, z: z, arg: arg}
	r := c.runners.start(j)
	if r == nil {
		// The client is closed, and so is z: the call fails at once.
		v, err = attempt.attempt(z, arg)
		return v, nil, err
	}
	if ok, pending := c.runners.finish(ctx, r, j); !ok {
		return v, pending, ctx.Err()
	}
	return j.v, nil, j.err
}

// waitConnected waits up to the connection timeout for a connection, as
// Curator does before each attempt. A client still not connected then fails
// the attempt with connection loss (zk.ErrNoServer), which the retry policy
// may retry; so does one that every server has refused since the wait
// began (a dial of each has failed, other than by a timeout, as
// Unreachable tells): it is not kept waiting for the whole timeout.
//
// A wait that ctx ends returns its error as a noConnection.
func (c *Client) waitConnected(ctx context.Context) error {
	err := c.awaitConnected(ctx, c.cfg.connectionTimeout)
	if err != nil && err == ctx.Err() {
		return noConnection{err}
	}
	return err
}

// awaitConnected waits until the client is connected, and returns nil, or
// closed (ErrClosed), or ctx ends (ctx.Err()), or, if limit is not 0, no
// server answers (zk.ErrNoServer): limit has passed, or every server has
// refused since the wait began (zkconn.Dials.RefusedSince). A client
// connected already costs no timer.
func (c *Client) awaitConnected(ctx context.Context, limit time.Duration) error {
	var timeout <-chan time.Time
	var z *conn     // the connection whose dials the wait follows
	var from uint64 // its dials ended when the wait began (or it became current)
	for {
		closed, connected, changed := c.sm.watch()
		switch {
		case closed:
			return ErrClosed
		case connected:
			return nil
		}
		var dialled <-chan struct{}
		if limit > 0 {
			if timeout == nil {
				t := time.NewTimer(limit)
				defer t.Stop()
				timeout = t.C
			}
			cur := c.zk()
			d := cur.Dials()
			switch {
			case cur != z:
				z, from = cur, d.Count
			case d.RefusedSince(from):
				return zk.ErrNoServer
			}
			dialled = d.Next
		}
		select {
		case <-changed:
		case <-dialled:
		case <-timeout:
			return zk.ErrNoServer
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
