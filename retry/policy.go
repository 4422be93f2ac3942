package retry

import (
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// Policy decides whether a failed operation is tried again and how long to
// wait first. It corresponds to Curator's RetryPolicy. Implementations must
// be safe for concurrent use.
type Policy interface {
	// AllowRetry says whether to try again after a retryable failure, and how
	// long to wait first. retryCount counts the retries already made (0 for
	// the first failure); elapsed is the time since the first attempt began.
	AllowRetry(retryCount int, elapsed time.Duration) (wait time.Duration, ok bool)
}

// Classifier is a policy's own rule for which errors are retryable.
// [SessionFailed] has one. It corresponds to Curator's
// RetryPolicy.allowRetry(Throwable).
type Classifier interface {
	// Retryable reports whether err may be retried under this policy.
	Retryable(err error) bool
}

// errOperationTimeoutText is how go-zookeeper v1.0.4 reports a reply with
// ZooKeeper's OPERATIONTIMEOUT code (-7): the package has no sentinel for it,
// and ErrCode.toError turns any code missing from its table into
// fmt.Errorf("unknown error: %v", code), a plain error that wraps nothing.
// Matching that exact text on an error of the chain is the only way to
// recognise it. (ZooKeeper servers do not normally send -7; the Java client
// raises it locally, so in practice this rarely matches.)
var errOperationTimeoutText = fmt.Sprintf("unknown error: %v", zk.ErrCode(-7))

// IsRetryable reports whether err is one of the errors Curator retries:
// connection loss, operation timeout, session moved or session expired. These
// are the codes of Curator 5.4's RetryLoop.isRetryException: CONNECTIONLOSS
// (-4), OPERATIONTIMEOUT (-7), SESSIONMOVED (-118) and SESSIONEXPIRED (-112).
// It looks through wrapped errors with errors.Is, so errors wrapped with %w
// (including errors.Join and multi-%w) are recognised.
//
// In github.com/go-zookeeper/zk v1.0.4 these codes surface as:
//   - connection loss: zk.ErrConnectionClosed (a request was in flight when
//     the connection dropped) and zk.ErrNoServer (no server could be reached
//     in a full pass over the server list);
//   - session expired: zk.ErrSessionExpired;
//   - session moved: zk.ErrSessionMoved;
//   - operation timeout: no sentinel exists; go-zookeeper reports the code
//     as a plain error with the text "unknown error: -7", which IsRetryable
//     recognises by that exact text on any error in the chain.
//
// A nil err is not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	switch {
	case errors.Is(err, zk.ErrConnectionClosed),
		errors.Is(err, zk.ErrNoServer),
		errors.Is(err, zk.ErrSessionExpired),
		errors.Is(err, zk.ErrSessionMoved):
		return true
	}
	return chainHas(err, func(e error) bool { return e.Error() == errOperationTimeoutText })
}

// chainHas reports whether match holds for err or any error it wraps,
// following both Unwrap() error and Unwrap() []error.
func chainHas(err error, match func(error) bool) bool {
	for err != nil {
		if match(err) {
			return true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if chainHas(e, match) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// Retryable reports whether err may be retried under p. It asks p's
// [Classifier] if p implements one, and otherwise applies [IsRetryable].
// A nil p uses [IsRetryable]; a nil err is never retryable.
func Retryable(p Policy, err error) bool {
	if err == nil {
		return false
	}
	if c, ok := p.(Classifier); ok {
		return c.Retryable(err)
	}
	return IsRetryable(err)
}
