// Package retry holds gocurator's retry policies and Do, the loop that
// applies them. gocurator is a Go port of Apache Curator's ZooKeeper
// recipes, and these are Curator's retry policies.
//
// # Contract
//
// An operation is tried once. If it fails with an error that is retryable
// (see [Retryable]), the [Policy] is asked, through [Policy.AllowRetry],
// whether to try again and how long to wait first. retryCount counts the
// retries already made (0 after the first failure) and elapsed is the time
// since the first attempt began, exactly as in Curator's
// RetryPolicy.allowRetry(int retryCount, long elapsedTimeMs, RetrySleeper).
// The difference is that a Go policy does not sleep itself: it returns the
// wait and [Do] performs it, so that the wait can be cut short by a context.
//
// # On cenkalti/backoff
//
// [Do] is backoff's retry loop (backoff.RetryNotify, stopped by the context
// through backoff.WithContext, its notify as [OnRetry]) driven by Curator's
// policies: [AsBackOff] makes any [Policy] a backoff.BackOff, which users
// may hand to backoff's own functions too. Do adds what Curator's loop
// does and backoff's does not: only retryable errors are retried (see
// below), a context that has ended before the first attempt makes none,
// and the first attempt runs with nothing built around it, so that a call
// that succeeds at once allocates nothing.
//
// Which errors are retryable follows Curator 5.4
// (RetryLoop.shouldRetry): only connection loss, operation timeout, session
// moved and session expired. Every other error, including ZooKeeper's
// NoNode, NodeExists or BadVersion, goes straight back to the caller. See
// [IsRetryable] for how these codes appear in github.com/go-zookeeper/zk.
// A policy may override the rule by implementing [Classifier], as
// [SessionFailed] (Curator's SessionFailedRetryPolicy) does.
//
// # Curator correspondence
//
//	Curator (org.apache.curator.retry)  gocurator
//	ExponentialBackoffRetry             NewExponentialBackoff
//	BoundedExponentialBackoffRetry      NewBoundedExponentialBackoff
//	RetryNTimes                         NewNTimes
//	RetryOneTime                        NewOneTime
//	RetryUntilElapsed                   NewUntilElapsed
//	RetryForever                        NewForever
//	SessionFailedRetryPolicy            NewSessionFailed
//	RetryLoop.callWithRetry             Do
//	RetryLoop.isRetryException          IsRetryable
//	(a policy as a backoff.BackOff)     AsBackOff
//
// Curator rejects bad constructor arguments with exceptions; this package
// never panics and instead clamps them to the nearest valid value, as each
// constructor documents. Every policy is safe for concurrent use, and the
// methods of every policy also work (by refusing to retry, except
// [Forever]) on a zero value.
package retry
