//go:build linux

package zktest

import (
	"syscall"
	"time"
)

// kernelSleeps: the proxy holds a packet the last moments of its delay
// with sleepInKernel (see Proxy.sleepUntil).
const kernelSleeps = true

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK.
const prSetTimerSlack = 29

// sleepInKernel sleeps for d in the kernel (nanosleep), with the calling
// thread's timer slack at its least: the default, 50 µs, is a fifth of a
// datacenter's one-way latency. The thread is blocked meanwhile; Go runs
// other goroutines on other threads.
func sleepInKernel(d time.Duration) {
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	ts := syscall.NsecToTimespec(int64(d))
	_ = syscall.Nanosleep(&ts, nil)
}
