//go:build linux

package compat_test

import "syscall"

// sysProcAttr puts a peer JVM in its own process group (we stop it by its
// pid, never by group or name) and has the kernel kill it if the test
// binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
