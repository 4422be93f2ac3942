package testutil

import (
	"sync"
	"testing"
	"time"
)

// Recv returns the next value from ch (the zero value once ch is closed),
// waiting at most Timeout; when the bound passes it fails the test, saying
// what it waited for. It is the bounded form of a bare <-ch.
func Recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(Timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing within %v", what, Timeout)
	}
	var zero T
	return zero
}

// Wait waits for wg at most Timeout, and fails the test, saying what it
// waited for, when the bound passes. It is the bounded form of wg.Wait().
func Wait(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Recv(t, done, what)
}

// Until polls cond until it holds, at most Timeout; when the bound passes it
// fails the test, saying what it waited for and, if cond's last answer said
// why, that. It is for state that nothing signals (a count kept by the
// library); whatever has a channel, a watch or a WaitGroup waits on that.
func Until(t testing.TB, what string, cond func() (ok bool, why string)) {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, why := cond()
		if ok {
			return
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("%s: not within %v (%s)", what, Timeout, why)
		}
	}
}
