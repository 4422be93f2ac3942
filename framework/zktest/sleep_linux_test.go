//go:build linux

package zktest

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A kernel sleep leaves its thread's timer slack as it found it: the
// thread goes back to Go's scheduler, and to the goroutine that runs on it
// next, unchanged.
func TestKernelSleepRestoresTimerSlack(t *testing.T) {
	runtime.LockOSThread() // the thread whose slack is read is the sleep's
	defer runtime.UnlockOSThread()
	slack := func() uintptr {
		s, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0)
		if errno != 0 {
			t.Fatalf("PR_GET_TIMERSLACK: %v", errno)
		}
		return s
	}
	set := func(ns uintptr) {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, ns, 0); errno != 0 {
			t.Fatalf("PR_SET_TIMERSLACK: %v", errno)
		}
	}
	defer set(slack())
	const mine = 123457 // ns: neither the default nor the sleep's own
	set(mine)
	sleepInKernelUntil(time.Now().Add(100 * time.Microsecond))
	if got := slack(); got != mine {
		t.Fatalf("the thread's timer slack is %d ns after a kernel sleep, was %d ns", got, mine)
	}
}
