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
type DoOption interface{ applyDo(doOptions) doOptions }

type doOptions struct {
	onRetry   func(err error, retryCount int, wait time.Duration)
	retryable func(err error) bool
	resume    bool // the caller made the first attempt: begun at start, it failed with first
	start     time.Time
	first     error
}

type onRetryOption func(err error, retryCount int, wait time.Duration)

func (f onRetryOption) applyDo(o doOptions) doOptions { o.onRetry = f; return o }

type retryIfOption func(err error) bool

func (f retryIfOption) applyDo(o doOptions) doOptions { o.retryable = f; return o }

type firstAttemptOption struct {
	start time.Time
	err   error
}

func (f firstAttemptOption) applyDo(o doOptions) doOptions {
	o.resume, o.start, o.first = true, f.start, f.err
	return o
}

// OnRetry returns a [DoOption] that makes [Do] call hook before each wait.
// The hook gets the error that caused the retry, the retryCount the policy
// was asked with (0 before the first retry) and the wait the policy chose.
// The hook runs on Do's goroutine; a nil hook is ignored.
func OnRetry(hook func(err error, retryCount int, wait time.Duration)) DoOption {
	return onRetryOption(hook)
}

// RetryIf returns a [DoOption] that makes [Do] retry the errors for which
// retryable returns true, instead of those [Retryable] names. It makes a loop
// of its own over the policy's waits, for a cause of its own (a lock recipe
// retries its vanished node so). A nil retryable is ignored.
func RetryIf(retryable func(err error) bool) DoOption { return retryIfOption(retryable) }

// FirstAttempt returns a [DoOption] for a caller that made the first attempt
// itself. The attempt began at start and failed with err (not nil); [Do] then
// goes on from there exactly as if it had made that attempt (the policy is
// asked with the same counts and elapsed time). A caller whose first attempt
// usually succeeds so builds no retry machinery (its options, which often
// capture variables and so allocate) unless it fails:
//
//	start := time.Now()
//	if err := op(ctx); err != nil {
//		return retry.Do(ctx, p, op, retry.FirstAttempt(start, err), retry.OnRetry(hook))
//	}
//
// The caller must have checked ctx before its attempt, as Do does. A nil
// err makes Do return nil at once.
func FirstAttempt(start time.Time, err error) DoOption { return firstAttemptOption{start, err} }

func newDoOptions(opts []DoOption) doOptions {
	var o doOptions
	for _, opt := range opts {
		if opt != nil {
			o = opt.applyDo(o)
		}
	}
	return o
}

// retry reports whether err is to be retried under p.
func (o doOptions) retry(p Policy, err error) bool {
	if o.retryable != nil {
		return o.retryable(err)
	}
	return Retryable(p, err)
}

// Do calls op until it returns nil, returns an error that is not retryable
// for p, or p refuses another retry. The waits between attempts use ctx, so
// cancelling ctx stops a wait at once. It is the counterpart of Curator's
// RetryLoop.callWithRetry.
//
// When p gives up or the error is not retryable (see [Retryable], or
// [RetryIf]), Do returns op's last error as is (not re-wrapped). When ctx
// ends (before an attempt or during a wait), Do returns an error for which
// errors.Is(err, ctx.Err()) is true and, if op had failed before,
// errors.Is(err, lastErr) is true too (and errors.Is(err,
// context.Cause(ctx)) when the cause differs). In particular, if ctx is
// already done when Do is called, op is not called at all: a caller may
// call Do for its error of an ended context. Do checks ctx before every
// attempt, so op is never started after ctx has ended; ctx is also handed
// to op, which should honour it.
//
// Whether an error is retried is decided by [Retryable](p, err) (or by
// [RetryIf]'s function) alone; in particular a *backoff.PermanentError
// returned by op has no special meaning.
//
// Do never panics on misuse: a nil ctx is treated as context.Background(),
// a nil p never retries, a nil op makes Do return [ErrNilOperation], and
// nil opts are ignored. A negative wait from p is treated as 0.
//
// The first attempt runs on the caller's goroutine with nothing built
// around it: an op that succeeds at once costs Do no allocation. After a
// retryable failure Do hands the loop to backoff's (backoff.RetryNotify),
// with p as a backoff.BackOff ([AsBackOff]) stopped by ctx
// (backoff.WithContext), and OnRetry as its notify.
func Do(ctx context.Context, p Policy, op func(ctx context.Context) error, opts ...DoOption) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if op == nil {
		return ErrNilOperation
	}
	o := newDoOptions(opts)
	start, err := o.start, o.first
	if !o.resume {
		if ctx.Err() != nil {
			return ctxDoneError(ctx, nil)
		}
		start = time.Now()
		err = op(ctx)
	}
	if err == nil || !o.retry(p, err) {
		return err
	}
	return retrying(ctx, p, op, o, start, err)
}

// retrying is Do after a first attempt, begun at start, failed with first,
// a retryable error: backoff's loop, whose first call of the operation
// gives that attempt's error back.
func retrying(ctx context.Context, p Policy, op func(ctx context.Context) error, o doOptions, start time.Time, first error) error {
	waits := &policyBackOff{p: p, start: start, resumed: true}
	lastErr, replayed := first, false
	err := backoff.RetryNotify(func() error {
		if !replayed {
			replayed = true
			return opFailed{first} // the attempt already made
		}
		if ctx.Err() != nil {
			return backoff.Permanent(ctxDoneError(ctx, lastErr))
		}
		err := op(ctx)
		if err == nil {
			return nil
		}
		lastErr = err
		if !o.retry(p, err) {
			return backoff.Permanent(opFailed{err})
		}
		return opFailed{err}
	}, backoff.WithContext(waits, ctx), func(err error, wait time.Duration) {
		if o.onRetry != nil {
			o.onRetry(err.(opFailed).err, waits.retries-1, wait)
		}
	})
	switch e := err.(type) {
	case opFailed:
		return e.err
	case nil:
		return nil
	}
	if err == ctx.Err() {
		return ctxDoneError(ctx, lastErr) // backoff's bare ctx.Err(): say what failed too
	}
	return err
}

// opFailed carries op's error through backoff's loop, which must not look
// into it: a *backoff.PermanentError of op's means nothing special to Do.
type opFailed struct{ err error }

func (e opFailed) Error() string { return e.err.Error() }

// Sleep waits for d, or until ctx ends. It returns nil once d has passed,
// and ctx.Err() if ctx ended first; a d of zero or less does not wait and
// returns ctx.Err().
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

// AsBackOff returns p as a backoff.BackOff: Curator's policy in
// cenkalti/backoff's terms. Each NextBackOff asks p about the next retry,
// with the retries allowed so far and the time since the BackOff was made
// (or last Reset), and returns its wait, or backoff.Stop when p refuses.
// It keeps that count: make one per retry loop. It has no cap of its own
// (unlike backoff.ExponentialBackOff's 15 minutes of MaxElapsedTime): only
// the policy ends the retries. A nil p never retries.
func AsBackOff(p Policy) backoff.BackOff { return &policyBackOff{p: p, start: time.Now()} }

// policyBackOff is a Policy as a backoff.BackOff.
type policyBackOff struct {
	p       Policy
	start   time.Time // when the first attempt began
	retries int       // retries allowed so far
	resumed bool      // Do's: start is the caller's first attempt, which Reset keeps
}

// Reset starts counting again (backoff's loop calls it as it begins: Do's
// own keeps the count of the attempt made before).
func (b *policyBackOff) Reset() {
	if !b.resumed {
		b.start, b.retries = time.Now(), 0
	}
}

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
