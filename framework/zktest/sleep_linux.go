//go:build linux

package zktest

import (
	"runtime"
	"syscall"
	"time"
)

// kernelSleeps: the proxy holds a packet the last moments of its delay
// with sleepInKernelUntil (see Proxy.sleepUntil).
const kernelSleeps = true

// prctl's PR_SET_TIMERSLACK and PR_GET_TIMERSLACK.
const (
	prSetTimerSlack = 29
	prGetTimerSlack = 30
)

// sleepInKernelUntil sleeps until t in the kernel (nanosleep), with the
// thread's timer slack at its least: the default, 50 µs, is a fifth of a
// datacenter's one-way latency. The goroutine is locked to its thread
// meanwhile, and the thread's slack is set back before it is unlocked:
// the thread goes back to Go's scheduler as it was, for whatever goroutine
// runs on it next. The thread is blocked meanwhile; Go runs other
// goroutines on other threads.
func sleepInKernelUntil(t time.Time) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if slack, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prGetTimerSlack, 0, 0); errno == 0 && slack != 1 {
		if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0); errno == 0 {
			defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, slack, 0)
		}
	}
	for d := time.Until(t); d > 0; d = time.Until(t) {
		ts := syscall.NsecToTimespec(int64(d))
		_ = syscall.Nanosleep(&ts, nil)
	}
}
