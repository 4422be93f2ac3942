//go:build linux

package zktest

import "syscall"

// sysProcAttr puts the JVM in its own process group (so a ^C aimed at the
// test binary's group is not what stops it; we stop it by pid) and asks the
// kernel to SIGKILL it if the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
