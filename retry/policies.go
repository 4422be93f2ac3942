package retry

import (
	"errors"
	"math"
	"time"

	"github.com/go-zookeeper/zk"
)

// NTimes is a policy that retries up to n times, sleeping the same time
// before each retry. It is Curator's RetryNTimes. It is safe for concurrent
// use; the zero value never retries.
type NTimes struct {
	n     int
	sleep time.Duration
}

// NewNTimes returns a policy of up to n retries with a fixed sleep before
// each: Curator's RetryNTimes(n, sleepMsBetweenRetries). A negative n becomes
// 0 (never retry) and a negative sleep becomes 0.
func NewNTimes(n int, sleep time.Duration) *NTimes {
	return &NTimes{n: max(n, 0), sleep: max(sleep, 0)}
}

// NewOneTime returns a policy of one retry after sleep: NewNTimes(1, sleep),
// Curator's RetryOneTime(sleepMsBetweenRetry).
func NewOneTime(sleep time.Duration) *NTimes {
	return NewNTimes(1, sleep)
}

// AllowRetry implements [Policy]: it allows the retry while retryCount is
// below n, with the fixed sleep.
func (p *NTimes) AllowRetry(retryCount int, _ time.Duration) (time.Duration, bool) {
	if p == nil || retryCount >= p.n {
		return 0, false
	}
	return p.sleep, true
}

// UntilElapsed is a policy that retries, with a fixed sleep, while less than
// a maximum time has elapsed since the first attempt began. It is Curator's
// RetryUntilElapsed. It is safe for concurrent use; the zero value never
// retries.
//
// Unlike Curator, which sleeps before checking the elapsed time and so also
// sleeps when it finally refuses, UntilElapsed refuses without any wait.
type UntilElapsed struct {
	maxElapsed time.Duration
	sleep      time.Duration
}

// NewUntilElapsed returns a policy that retries, each time after sleep, while
// elapsed < maxElapsed. It is Curator's RetryUntilElapsed(maxElapsedTimeMs,
// sleepMsBetweenRetries). A negative maxElapsed becomes 0 (never retry) and a
// negative sleep becomes 0.
func NewUntilElapsed(maxElapsed, sleep time.Duration) *UntilElapsed {
	return &UntilElapsed{maxElapsed: max(maxElapsed, 0), sleep: max(sleep, 0)}
}

// AllowRetry implements [Policy]: it allows the retry while elapsed is
// below the maximum (and, as in Curator, retryCount below math.MaxInt32).
func (p *UntilElapsed) AllowRetry(retryCount int, elapsed time.Duration) (time.Duration, bool) {
	if p == nil || elapsed >= p.maxElapsed || retryCount >= math.MaxInt32 {
		return 0, false
	}
	return p.sleep, true
}

// defaultForeverInterval replaces a non-positive interval of [Forever].
const defaultForeverInterval = time.Millisecond

// Forever is a policy that always retries, sleeping a fixed interval first.
// It is Curator's RetryForever. It is safe for concurrent use. Its zero value
// retries forever with a 1ms interval.
type Forever struct {
	interval time.Duration
}

// NewForever returns a policy that always retries, after interval:
// Curator's RetryForever(retryIntervalMs). Curator requires a positive
// interval; here an interval ≤ 0 is replaced by 1ms,
// the smallest interval Curator accepts, so the retries never spin
// without pause.
func NewForever(interval time.Duration) *Forever {
	if interval <= 0 {
		interval = defaultForeverInterval
	}
	return &Forever{interval: interval}
}

// AllowRetry implements [Policy]: it always allows the retry, with the
// fixed interval. (A nil *Forever refuses.)
func (p *Forever) AllowRetry(int, time.Duration) (time.Duration, bool) {
	if p == nil {
		return 0, false
	}
	if p.interval <= 0 {
		return defaultForeverInterval, true
	}
	return p.interval, true
}

// SessionFailed is a policy that retries like its delegate but never retries
// session expiry. It is Curator's SessionFailedRetryPolicy: with session
// expiry (zk.ErrSessionExpired) not retried, callers can rebuild their state
// in a new session. It implements [Classifier]. It is safe for concurrent use
// if the delegate is; the zero value never retries.
type SessionFailed struct {
	delegate Policy
}

// NewSessionFailed returns a policy that retries like delegate except for
// session expiry: Curator's SessionFailedRetryPolicy(delegate). A nil
// delegate is treated as a policy that never retries.
func NewSessionFailed(delegate Policy) *SessionFailed {
	return &SessionFailed{delegate: delegate}
}

// AllowRetry implements [Policy] by asking the delegate.
func (p *SessionFailed) AllowRetry(retryCount int, elapsed time.Duration) (time.Duration, bool) {
	if p == nil || p.delegate == nil {
		return 0, false
	}
	return p.delegate.AllowRetry(retryCount, elapsed)
}

// Retryable reports whether err may be retried: as for the delegate, but
// never for session expiry. An error that is or wraps zk.ErrSessionExpired is
// not retryable; any other is retryable if it is for the delegate (see
// [Retryable]). It implements [Classifier]. With a nil delegate nothing is
// retryable.
func (p *SessionFailed) Retryable(err error) bool {
	if p == nil || p.delegate == nil || errors.Is(err, zk.ErrSessionExpired) {
		return false
	}
	return Retryable(p.delegate, err)
}
