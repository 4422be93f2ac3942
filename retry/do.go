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
	onRetry   func(err error, retryCount int, wait time.Duration)
	retryable func(err error) bool
}

// OnRetry returns a [DoOption] that makes [Do] call hook before each wait,
// with the error that caused the retry, the retryCount the policy was asked
// with (0 before the first retry) and the wait the policy chose. The hook
// runs on Do's goroutine; a nil hook is ignored.
func OnRetry(hook func(err error, retryCount int, wait time.Duration)) DoOption {
	return func(o *doOptions) { o.onRetry = hook }
}

func newDoOptions(opts []DoOption) *doOptions {
	o := &doOptions{}
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
	return o
}

// retry reports whether err is to be retried under p.
func (o *doOptions) retry(p Policy, err error) bool {
	if o.retryable != nil {
		return o.retryable(err)
	}
	return Retryable(p, err)
}

// RetryIf returns a [DoOption] that makes [Do] retry the errors for which
// retryable returns true, instead of those [Retryable] names: a loop of its
// own over the policy's waits, for a cause of its own (a lock recipe
// retries its vanished node so). A nil retryable is ignored.
func RetryIf(retryable func(err error) bool) DoOption {
	return func(o *doOptions) { o.retryable = retryable }
}

// Do calls op until it returns nil, returns an error that is not retryable for p,
// or p refuses another retry; the waits between attempts use ctx, so cancelling ctx
// stops a wait at once. It is the counterpart of Curator's RetryLoop.callWithRetry.
//
// When p gives up or the error is not retryable (see [Retryable], or
// [RetryIf]), Do returns op's last error as is (not re-wrapped). When ctx
// ends (before an attempt or during a wait), Do returns an error for which
// errors.Is(err, ctx.Err()) is true and, if op had failed before,
// errors.Is(err, lastErr) is true too (and errors.Is(err,
// context.Cause(ctx)) when the cause differs). In particular, if ctx is
// already done when Do is called, op is not called at all. Do checks ctx
// before every attempt, so op is never started after ctx has ended; ctx is
// also handed to op, which should honour it.
//
// Whether an error is retried is decided by [Retryable](p, err) alone; in
// particular a *backoff.PermanentError returned by op has no special meaning.
//
// Do never panics on misuse: a nil ctx is treated as context.Background(),
// a nil p never retries, a nil op makes Do return [ErrNilOperation], and
// nil opts are ignored. A negative wait from p is treated as 0.
//
// Do runs op on the caller's goroutine and starts no goroutines. The waits
// are backoff's: p as a backoff.BackOff, which backoff.WithContext stops
// when ctx ends. An op that succeeds at once costs Do no allocation.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error, opts ...DoOption) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if op == nil {
		return ErrNilOperation
	}
	start := time.Now()
	if ctx.Err() != nil {
		return ctxDoneError(ctx, nil)
	}
	err := op(ctx)
	if err == nil {
		return nil
	}
	return DoAfter(ctx, p, start, err, op, opts...)
}

// DoAfter is [Do] after its first attempt: that attempt, begun at start,
// returned first (not nil), and DoAfter goes on from there exactly as Do
// would (the policy is asked with the same counts and elapsed time), and
// returns what Do would. A caller that makes the first attempt itself pays
// for the retry machinery (its options, which often capture variables and
// so allocate) only when that attempt fails:
//
//	start := time.Now()
//	if err := op(ctx); err != nil {
//		return retry.DoAfter(ctx, p, start, err, op, retry.OnRetry(hook))
//	}
//
// The caller must have checked ctx before its attempt, as Do does
// (ContextError gives Do's error for an ended ctx). A nil
// ctx, p or op is treated as by Do; a nil first makes DoAfter return nil.
func DoAfter(ctx context.Context, p Policy, start time.Time, first error, op func(ctx context.Context) error, opts ...DoOption) error {
	if first == nil {
		return nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if op == nil {
		return ErrNilOperation
	}
	var (
		o       = newDoOptions(opts)
		waits   backoff.BackOff // made at the first retry
		retries *policyBackOff
		lastErr error
		err     = first
	)
	for {
		if !o.retry(p, err) {
			return err
		}
		lastErr = err
		if waits == nil {
			retries = &policyBackOff{p: p, start: start}
			waits = backoff.WithContext(retries, ctx)
		}
		wait := waits.NextBackOff()
		if wait == backoff.Stop {
			if ctx.Err() != nil {
				return ctxDoneError(ctx, err)
			}
			return err
		}
		if o.onRetry != nil {
			o.onRetry(err, retries.retries-1, wait)
		}
		if Sleep(ctx, wait) != nil {
			return ctxDoneError(ctx, err)
		}
		if ctx.Err() != nil {
			return ctxDoneError(ctx, lastErr)
		}
		if err = op(ctx); err == nil {
			return nil
		}
	}
}

// Sleep waits for d, or until ctx ends; then it returns ctx.Err(). A d of
// zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ContextError returns the error Do returns, without an attempt, when ctx
// has ended before it (nil while ctx lives): for a caller of DoAfter, which
// makes its first attempt itself, to check ctx as Do does.
func ContextError(ctx context.Context) error {
	if ctx == nil || ctx.Err() == nil {
		return nil
	}
	return ctxDoneError(ctx, nil)
}

// ctxDoneError builds the error Do returns when ctx has ended.
func ctxDoneError(ctx context.Context, lastErr error) error {
	ctxErr := ctx.Err()
	cause := context.Cause(ctx)
	switch {
	case lastErr == nil && (cause == nil || cause == ctxErr):
		return errs.Errorf("%w", ctxErr)
	case lastErr == nil:
		return errs.Errorf("%w: %w", ctxErr, cause)
	case cause == nil || cause == ctxErr:
		return errs.Errorf("%w while retrying; last error: %w", ctxErr, lastErr)
	default:
		return errs.Errorf("%w: %w while retrying; last error: %w", ctxErr, cause, lastErr)
	}
}

// policyBackOff is a Policy as a backoff.BackOff, for one call of Do: each
// NextBackOff asks the policy about the next retry. It has no cap of its
// own: only the policy (and ctx, through backoff.WithContext) end the
// retries.
type policyBackOff struct {
	p       Policy
	start   time.Time // when Do made its first attempt
	retries int       // retries allowed so far
}

// Reset does nothing: a policyBackOff lives for one call of Do.
func (b *policyBackOff) Reset() {}

func (b *policyBackOff) NextBackOff() time.Duration {
	if b.p == nil {
		return backoff.Stop
	}
	wait, ok := b.p.AllowRetry(b.retries, time.Since(b.start))
	if !ok {
		return backoff.Stop
	}
	b.retries++
	if wait < 0 { // backoff.Stop is -1: never let a negative wait mean Stop
		wait = 0
	}
	return wait
}
