package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
)

// safetyCtx bounds a test that would otherwise hang; it is never expected to fire.
func safetyCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// recv returns the next value from ch, failing the test, with what it
// waited for, if none comes within a minute: the bounded form of <-ch.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-safetyCtx(t).Done():
		t.Fatalf("%s: nothing within a minute", what)
	}
	var zero T
	return zero
}

// script returns an op that returns errs in turn, then nil, and counts its calls.
func script(calls *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*calls++
		if *calls <= len(errs) {
			return errs[*calls-1]
		}
		return nil
	}
}

type retryEvent struct {
	err        error
	retryCount int
	wait       time.Duration
}

func TestDoSuccessFirstTime(t *testing.T) {
	calls := 0
	hooked := 0
	err := Do(safetyCtx(t), NewNTimes(3, 0), script(&calls), OnRetry(func(error, int, time.Duration) { hooked++ }))
	if err != nil || calls != 1 || hooked != 0 {
		t.Fatalf("err=%v calls=%d hooked=%d, want nil, 1, 0", err, calls, hooked)
	}
}

// The common case, an operation that succeeds at once, costs Do no
// allocations: it runs on every ZooKeeper call.
func TestDoSuccessAllocatesNothing(t *testing.T) {
	ctx, p := safetyCtx(t), NewNTimes(3, 0)
	op := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(100, func() { _ = Do(ctx, p, op) }); n != 0 {
		t.Fatalf("Do allocated %.0f times on a first-time success", n)
	}
}

func TestDoSuccessAfterRetries(t *testing.T) {
	calls := 0
	var events []retryEvent
	e1 := fmt.Errorf("get: %w", zk.ErrConnectionClosed)
	e2 := zk.ErrSessionMoved
	err := Do(safetyCtx(t), NewNTimes(3, time.Microsecond), script(&calls, e1, e2),
		OnRetry(func(err error, rc int, wait time.Duration) { events = append(events, retryEvent{err, rc, wait}) }))
	if err != nil || calls != 3 {
		t.Fatalf("err=%v calls=%d, want nil, 3", err, calls)
	}
	want := []retryEvent{{e1, 0, time.Microsecond}, {e2, 1, time.Microsecond}}
	if len(events) != len(want) {
		t.Fatalf("hook events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Errorf("hook event %d = %v, want %v", i, events[i], want[i])
		}
	}
}

func TestDoNonRetryableReturnedAsIs(t *testing.T) {
	for _, e := range []error{
		zk.ErrNoNode,
		fmt.Errorf("create /lock: %w", zk.ErrNodeExists),
		errors.New("plain"),
		context.Canceled, // op's own error, ctx still live: not retryable, returned as is
	} {
		calls := 0
		err := Do(safetyCtx(t), NewForever(time.Hour), script(&calls, e, e))
		if err != e || calls != 1 {
			t.Errorf("%v: err=%v (identical: %v) calls=%d, want the op's error as is after 1 call", e, err, err == e, calls)
		}
	}
}

func TestDoClassifiesOnlyByRetryable(t *testing.T) {
	// A *backoff.PermanentError coming from op means nothing special to Do:
	// this one wraps connection loss, so it is retried, and returned as is.
	e := backoff.Permanent(zk.ErrConnectionClosed)
	calls := 0
	if err := Do(safetyCtx(t), NewOneTime(0), script(&calls, e, e)); err != e || calls != 2 {
		t.Errorf("err=%v calls=%d, want %v as is after 2 calls", err, calls, e)
	}
}

func TestDoSessionFailedStopsOnExpiry(t *testing.T) {
	calls := 0
	e := fmt.Errorf("lock: %w", zk.ErrSessionExpired)
	p := NewSessionFailed(NewNTimes(5, 0))
	if err := Do(safetyCtx(t), p, script(&calls, zk.ErrConnectionClosed, e, nil)); err != e || calls != 2 {
		t.Fatalf("err=%v calls=%d, want %v after 2 calls", err, calls, e)
	}
	// Without SessionFailed, session expiry is retried.
	calls = 0
	if err := Do(safetyCtx(t), NewNTimes(5, 0), script(&calls, zk.ErrConnectionClosed, e)); err != nil || calls != 3 {
		t.Fatalf("err=%v calls=%d, want nil after 3 calls", err, calls)
	}
}

func TestDoPolicyRefuses(t *testing.T) {
	tests := []struct {
		name      string
		p         Policy
		wantCalls int
	}{
		{"NTimes(2)", NewNTimes(2, 0), 3},
		{"OneTime", NewOneTime(0), 2},
		{"NTimes(0)", NewNTimes(0, time.Hour), 1},
		{"Exponential(2)", NewExponentialBackoff(time.Microsecond, 2), 3},
		{"UntilElapsed(0)", NewUntilElapsed(0, time.Hour), 1},
		{"nil policy", nil, 1},
		{"nil delegate", NewSessionFailed(nil), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := make([]error, 10)
			for i := range errs {
				errs[i] = fmt.Errorf("attempt %d: %w", i, zk.ErrConnectionClosed)
			}
			calls := 0
			err := Do(safetyCtx(t), tt.p, script(&calls, errs...))
			if calls != tt.wantCalls {
				t.Errorf("calls=%d, want %d", calls, tt.wantCalls)
			}
			if err != errs[tt.wantCalls-1] {
				t.Errorf("err=%v, want the last op error %v as is", err, errs[tt.wantCalls-1])
			}
		})
	}
}

// recordPolicy records what Do asks and allows every retry with a fixed wait.
type recordPolicy struct {
	wait   time.Duration
	counts []int
	elaps  []time.Duration
}

func (p *recordPolicy) AllowRetry(rc int, elapsed time.Duration) (time.Duration, bool) {
	p.counts = append(p.counts, rc)
	p.elaps = append(p.elaps, elapsed)
	return p.wait, true
}

func TestDoAsksPolicyWithCountsAndElapsed(t *testing.T) {
	p := &recordPolicy{wait: -5} // negative wait: treated as 0, not as backoff.Stop
	calls := 0
	e := zk.ErrNoServer
	if err := Do(safetyCtx(t), p, script(&calls, e, e, e, e)); err != nil || calls != 5 {
		t.Fatalf("err=%v calls=%d, want nil after 5 calls", err, calls)
	}
	for i, rc := range p.counts {
		if rc != i {
			t.Errorf("ask %d: retryCount=%d, want %d", i, rc, i)
		}
		if p.elaps[i] < 0 || (i > 0 && p.elaps[i] < p.elaps[i-1]) {
			t.Errorf("elapsed not monotonic: %v", p.elaps)
		}
	}
	if len(p.counts) != 4 {
		t.Errorf("policy asked %d times, want 4", len(p.counts))
	}
}

func TestDoCancelDuringWait(t *testing.T) {
	ctx, cancel := context.WithCancel(safetyCtx(t))
	defer cancel()
	calls := 0
	last := fmt.Errorf("get: %w", zk.ErrConnectionClosed)
	hooked := 0
	err := Do(ctx, NewForever(time.Hour), script(&calls, last, last),
		OnRetry(func(err error, rc int, wait time.Duration) {
			hooked++
			if err != last || rc != 0 || wait != time.Hour {
				t.Errorf("hook(%v, %d, %v)", err, rc, wait)
			}
			cancel() // the hour-long wait that follows must end at once
		}))
	if calls != 1 || hooked != 1 {
		t.Errorf("calls=%d hooked=%d, want 1, 1", calls, hooked)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, last) || !errors.Is(err, zk.ErrConnectionClosed) {
		t.Errorf("err=%v: want errors.Is for context.Canceled and the last op error", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err=%v: the safety deadline fired", err)
	}
}

func TestDoCancelFromAnotherGoroutine(t *testing.T) {
	ctx, cancel := context.WithCancel(safetyCtx(t))
	defer cancel()
	waiting := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Do(ctx, NewNTimes(3, time.Hour), func(context.Context) error { return zk.ErrSessionMoved },
			OnRetry(func(error, int, time.Duration) { close(waiting) }))
	}()
	recv(t, waiting, "the first retry wait")
	cancel()
	err := recv(t, done, "Do after the cancel")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, zk.ErrSessionMoved) {
		t.Errorf("err=%v: want context.Canceled and zk.ErrSessionMoved", err)
	}
}

func TestDoCancelDuringOp(t *testing.T) {
	// ctx ends while op runs and op reports a retryable error: Do must not
	// start another attempt or wait.
	ctx, cancel := context.WithCancel(safetyCtx(t))
	defer cancel()
	calls := 0
	err := Do(ctx, NewForever(time.Hour), func(context.Context) error {
		calls++
		cancel()
		return zk.ErrConnectionClosed
	})
	if calls != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, zk.ErrConnectionClosed) {
		t.Errorf("calls=%d err=%v", calls, err)
	}
}

func TestDoAlreadyCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	err := Do(ctx, NewForever(time.Millisecond), script(&calls))
	if calls != 0 {
		t.Errorf("op called %d times with a cancelled ctx", calls)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err=%v, want context.Canceled", err)
	}
}

func TestDoDeadlineAndCause(t *testing.T) {
	cause := errors.New("shutting down")
	ctx, cancel := context.WithCancelCause(safetyCtx(t))
	calls := 0
	err := Do(ctx, NewForever(time.Hour), script(&calls, zk.ErrNoServer, zk.ErrNoServer),
		OnRetry(func(error, int, time.Duration) { cancel(cause) }))
	if !errors.Is(err, context.Canceled) || !errors.Is(err, cause) || !errors.Is(err, zk.ErrNoServer) || calls != 1 {
		t.Errorf("err=%v after %d calls: want context.Canceled, cause and zk.ErrNoServer after 1 call", err, calls)
	}

	dctx, dcancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer dcancel()
	if err := Do(dctx, NewForever(time.Hour), script(&calls)); !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("expired deadline: err=%v, calls %d; want no call made", err, calls-1)
	}
}

func TestDoMisuse(t *testing.T) {
	if err := Do(safetyCtx(t), NewNTimes(1, 0), nil); !errors.Is(err, ErrNilOperation) {
		t.Errorf("nil op: err=%v", err)
	}
	calls := 0
	//lint:ignore SA1012 a nil context is the bad input under test
	if err := Do(nil, NewNTimes(1, 0), script(&calls, zk.ErrConnectionClosed), nil, OnRetry(nil)); err != nil || calls != 2 {
		t.Errorf("nil ctx/opts: err=%v calls=%d", err, calls)
	}
	var nilN *NTimes
	calls = 0
	if err := Do(safetyCtx(t), nilN, script(&calls, zk.ErrConnectionClosed)); err != zk.ErrConnectionClosed || calls != 1 {
		t.Errorf("typed nil policy: err=%v calls=%d", err, calls)
	}
}

func TestDoRetryIfChoosesTheErrors(t *testing.T) {
	mine := errors.New("my node vanished")
	calls := 0
	var heard []error
	err := Do(safetyCtx(t), NewNTimes(3, 0), script(&calls, mine, mine),
		RetryIf(func(err error) bool { return errors.Is(err, mine) }),
		OnRetry(func(err error, _ int, _ time.Duration) { heard = append(heard, err) }))
	if err != nil || calls != 3 || len(heard) != 2 {
		t.Fatalf("err=%v calls=%d heard=%v, want nil after 3 calls and 2 retries", err, calls, heard)
	}
	// Connection loss is not mine: returned as is, at once.
	calls = 0
	if err := Do(safetyCtx(t), NewNTimes(3, 0), script(&calls, zk.ErrConnectionClosed),
		RetryIf(func(err error) bool { return errors.Is(err, mine) })); err != zk.ErrConnectionClosed || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
}

func TestSleep(t *testing.T) {
	if err := Sleep(safetyCtx(t), 0); err != nil {
		t.Fatal(err)
	}
	if err := Sleep(safetyCtx(t), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep with a cancelled ctx = %v", err)
	}
}

// Do after a FirstAttempt goes on from a first attempt made by its caller
// exactly as Do would: the same attempts, the same questions to the policy
// (its elapsed time counted from the first attempt's start), the same
// result.
func TestFirstAttemptContinuesAsDo(t *testing.T) {
	e := zk.ErrNoServer
	for _, tc := range []struct {
		name string
		errs []error
		p    func() Policy
	}{
		{"succeeds on a retry", []error{e, e}, func() Policy { return NewNTimes(3, 0) }},
		{"policy gives up", []error{e, e, e, e}, func() Policy { return NewNTimes(2, 0) }},
		{"not retryable", []error{zk.ErrNoNode}, func() Policy { return NewNTimes(3, 0) }},
		{"not retryable after a retry", []error{e, zk.ErrNoNode}, func() Policy { return NewNTimes(3, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doCalls, afterCalls := 0, 1 // the caller made the first attempt of the second run
			var doHooks, afterHooks []retryEvent
			hook := func(events *[]retryEvent) DoOption {
				return OnRetry(func(err error, rc int, wait time.Duration) { *events = append(*events, retryEvent{err, rc, wait}) })
			}
			doErr := Do(safetyCtx(t), tc.p(), script(&doCalls, tc.errs...), hook(&doHooks))
			op := script(&afterCalls, tc.errs...)
			afterErr := Do(safetyCtx(t), tc.p(), op, FirstAttempt(time.Now(), tc.errs[0]), hook(&afterHooks))
			if doErr != afterErr || doCalls != afterCalls || fmt.Sprint(doHooks) != fmt.Sprint(afterHooks) {
				t.Fatalf("Do: %v after %d calls, retries %v; after a FirstAttempt: %v after %d calls, retries %v",
					doErr, doCalls, doHooks, afterErr, afterCalls, afterHooks)
			}
		})
	}
	p := &recordPolicy{}
	start := time.Now().Add(-time.Hour)
	calls := 1
	if err := Do(safetyCtx(t), p, script(&calls, e), FirstAttempt(start, e)); err != nil || len(p.elaps) != 1 || p.elaps[0] < time.Hour {
		t.Fatalf("err %v, policy asked with elapsed %v: want it counted from start, an hour ago", err, p.elaps)
	}
	calls = 1
	if err := Do(safetyCtx(t), p, script(&calls), FirstAttempt(start, nil)); err != nil || calls != 1 {
		t.Fatalf("Do after a first attempt that succeeded = %v after %d more calls, want nil and none", err, calls-1)
	}
}

// Do of an ended context makes no attempt and returns an error wrapping
// the context's error and its cause.
func TestDoOfAnEndedContext(t *testing.T) {
	cause := errors.New("shutting down")
	ended, cancel := context.WithCancelCause(safetyCtx(t))
	cancel(cause)
	calls := 0
	err := Do(ended, NewNTimes(3, 0), script(&calls))
	if calls != 0 || !errors.Is(err, context.Canceled) || !errors.Is(err, cause) {
		t.Fatalf("Do = %v after %d calls; want no call, and an error wrapping context.Canceled and the cause", err, calls)
	}
}

// AsBackOff is a policy as a backoff.BackOff: backoff's own loop, driven by
// Curator's policy, retries as the policy allows and stops when it refuses.
func TestAsBackOff(t *testing.T) {
	calls := 0
	err := backoff.Retry(func() error { calls++; return zk.ErrNoServer }, AsBackOff(NewNTimes(3, 0)))
	if calls != 4 || !errors.Is(err, zk.ErrNoServer) {
		t.Fatalf("backoff.Retry with NTimes(3) as a BackOff: %v after %d calls, want 4 calls", err, calls)
	}
	if b := AsBackOff(nil); b.NextBackOff() != backoff.Stop {
		t.Fatal("a nil policy's BackOff does not stop")
	}
}
