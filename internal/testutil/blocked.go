package testutil

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// WaitBlocked waits until a goroutine is parked in frame (a function as
// stacks name it, e.g. "recipes.(*LeaderSelector).Close"): the goroutine
// waits (on a channel, a select, a lock) and frame is its innermost
// function outside the runtime and sync packages. It polls the stacks of
// all goroutines (runtime.Stack), at most Timeout, and fails the test past
// that bound. It returns false, at once, if done is closed first (the
// goroutine ended without blocking there); done may be nil.
//
// It is for asserting that a call is really pending, not merely started: a
// goroutine that has not reached its wait yet is not reported.
func WaitBlocked(t testing.TB, frame string, done <-chan struct{}) bool {
	t.Helper()
	deadline := time.NewTimer(Timeout)
	defer deadline.Stop()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !Blocked(frame) {
		select {
		case <-done:
			return false
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("no goroutine blocked in %s within %v", frame, Timeout)
		}
	}
	return true
}

// Blocked reports whether a goroutine is parked in frame now (see
// WaitBlocked).
func Blocked(frame string) bool { return Parked(frame) > 0 }

// Parked returns how many goroutines are parked in frame now (see
// WaitBlocked): of every goroutine of the process, so a test counts its
// own only while no other test's outlive it (CheckLeaks).
func Parked(frame string) int {
	n := 0
	for _, g := range strings.Split(allStacks(), "\n\n") {
		if parkedIn(g, frame) {
			n++
		}
	}
	return n
}

// parkedIn reports whether the goroutine whose stack is g waits, with frame
// its innermost function outside the runtime and sync packages.
func parkedIn(g, frame string) bool {
	header, frames, _ := strings.Cut(g, "\n")
	_, status, ok := strings.Cut(header, " [")
	if !ok || strings.HasPrefix(status, "running") || strings.HasPrefix(status, "runnable") ||
		strings.HasPrefix(status, "syscall") {
		return false
	}
	for _, line := range strings.Split(frames, "\n") {
		if line == "" || strings.HasPrefix(line, "\t") {
			continue // a frame's file and line
		}
		if strings.HasPrefix(line, "runtime.") || strings.HasPrefix(line, "sync.") || strings.HasPrefix(line, "internal/") {
			continue
		}
		return strings.Contains(line, frame+"(")
	}
	return false
}

// allStacks returns runtime.Stack of every goroutine, whole.
func allStacks() string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return string(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}
