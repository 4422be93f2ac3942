package retry

import (
	"context"
	"errors"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/gocurator/curator/internal/errs"
)

// ErrNilOperation is returned by [Do] when it is given a nil operation.
var ErrNilOperation = errors.New("gocurator: retry: nil operation")

// DoOption configures a call of [Do].
type DoOption func(*doOptions)

type doOptions struct {
	onRetry func(err error, retryCount int, wait time.Duration)
}

// OnRetry returns a [DoOption] that makes [Do] call hook before each wait,
// with the error that caused the retry, the retryCount the policy was asked
// with (0 before the first retry) and the wait the policy chose. The hook
// runs on Do's goroutine; a nil hook is ignored.
func OnRetry(hook func(err error, retryCount int, wait time.Duration)) DoOption {
	return func(o *doOptions) { o.onRetry = hook }
}

// Do calls op until it returns nil, returns an error that is not retryable for p,
// or p refuses another retry; the waits between attempts use ctx, so cancelling ctx
// stops a wait at once. It is the counterpart of Curator's RetryLoop.callWithRetry.
//
// When p gives up or the error is not retryable (see [Retryable]), Do returns
// op's last error as is (not re-wrapped). When ctx ends (before an attempt
// or during a wait), Do returns an error for which errors.Is(err, ctx.Err())
// is true and, if op had failed before, errors.Is(err, lastErr) is true too
// (and errors.Is(err, context.Cause(ctx)) when the cause differs). In
// particular, if ctx is already done when Do is called, op is not called at
// all. Do checks ctx before every attempt, so op is never started after ctx
// has ended; ctx is also handed to op, which should honour it.
//
// Whether an error is retried is decided by [Retryable](p, err) alone; in
// particular a *backoff.PermanentError returned by op has no special meaning.
//
// Do never panics on misuse: a nil ctx is treated as context.Background(),
// a nil p never retries, a nil op makes Do return [ErrNilOperation], and
// nil opts are ignored. A negative wait from p is treated as 0.
//
// Do runs op on the caller's goroutine and starts no goroutines.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error, opts ...DoOption) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if op == nil {
		return ErrNilOperation
	}
	if ctx.Err() != nil {
		return ctxDoneError(ctx, nil)
	}

	// The first attempt runs without backoff's machinery: most calls
	// succeed at once, and then cost no allocations of their own.
	start := time.Now()
	err := op(ctx)
	if err == nil {
		return nil
	}
	if !Retryable(p, err) {
		return err
	}
	return retries(ctx, p, op, opts, start, err)
}

// retries is Do after a first attempt that failed with a retryable error.
func retries(ctx context.Context, p Policy, op func(ctx context.Context) error, opts []DoOption, start time.Time, lastErr error) error {
	var o doOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	var (
		permanent bool // op failed with an error that is not retryable
		ctxEnded  bool // ctx was found done before an attempt
		first     = true
	)
	b := &policyBackOff{p: p, start: start}
	attempt := func() error {
		if first { // made above; backoff makes its first call at once
			first = false
			return errRetryable
		}
		// backoff's wait selects between the timer and ctx.Done(), which
		// may pick the timer even when ctx has ended: check again.
		if ctx.Err() != nil {
			ctxEnded = true
			return backoff.Permanent(errStopped)
		}
		err := op(ctx)
		if err == nil {
			return nil
		}
		lastErr = err
		if !Retryable(p, err) {
			permanent = true
			return backoff.Permanent(errStopped)
		}
		// Hand backoff an opaque error: if op's error happened to wrap a
		// *backoff.PermanentError, backoff would otherwise stop on it.
		return errRetryable
	}
	notify := func(_ error, wait time.Duration) {
		if o.onRetry != nil {
			o.onRetry(lastErr, b.retries-1, wait)
		}
	}

	// backoff.RetryNotify (v4.3.0) always makes the first attempt without
	// looking at ctx (hence the check above), then asks NextBackOff, which
	// the WithContext wrapper answers with Stop once ctx is done. It
	// returns ctx.Err() when ctx ends during a wait or before NextBackOff,
	// the wrapped error of a PermanentError, or the last error when the
	// BackOff stops. The errors it returns are our markers, so the outcome
	// is decided from the flags instead.
	err := backoff.RetryNotify(attempt, backoff.WithContext(b, ctx), notify)
	switch {
	case err == nil:
		return nil
	case permanent, b.refused:
		return lastErr
	case ctxEnded, ctx.Err() != nil:
		return ctxDoneError(ctx, lastErr)
	default:
		// Not reachable with backoff v4.3.0; be conservative.
		if lastErr != nil {
			return lastErr
		}
		return err
	}
}

var (
	errStopped   = errors.New("retry: stopped")
	errRetryable = errors.New("retry: retryable failure")
)

// ctxDoneError builds the error Do returns when ctx has ended.
func ctxDoneError(ctx context.Context, lastErr error) error {
	ctxErr := ctx.Err()
	cause := context.Cause(ctx)
	switch {
	case lastErr == nil && (cause == nil || cause == ctxErr):
		return errs.Errorf("retry: %w", ctxErr)
	case lastErr == nil:
		return errs.Errorf("retry: %w: %w", ctxErr, cause)
	case cause == nil || cause == ctxErr:
		return errs.Errorf("retry: %w; last error: %w", ctxErr, lastErr)
	default:
		return errs.Errorf("retry: %w: %w; last error: %w", ctxErr, cause, lastErr)
	}
}

// policyBackOff adapts a Policy to backoff.BackOff for one call of Do. It
// has no cap of its own: only the Policy (and ctx) end the retries.
type policyBackOff struct {
	p       Policy
	start   time.Time // when Do made its first attempt
	retries int       // retries allowed so far
	refused bool      // the policy refused a retry
}

// Reset is called by backoff right before its first call of the attempt
// (which stands for the one Do made already, at start).
func (b *policyBackOff) Reset() {
	b.retries = 0
	b.refused = false
}

func (b *policyBackOff) NextBackOff() time.Duration {
	if b.p == nil {
		b.refused = true
		return backoff.Stop
	}
	wait, ok := b.p.AllowRetry(b.retries, time.Since(b.start))
	if !ok {
		b.refused = true
		return backoff.Stop
	}
	b.retries++
	if wait < 0 { // backoff.Stop is -1: never let a negative wait mean Stop
		wait = 0
	}
	return wait
}
