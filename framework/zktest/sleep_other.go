//go:build !linux

package zktest

import "time"

// kernelSleeps: no precise sleep here; the proxy holds packets with Go's
// timers alone (see Proxy.sleepUntil).
const kernelSleeps = false

func sleepInKernelUntil(t time.Time) { time.Sleep(time.Until(t)) }
