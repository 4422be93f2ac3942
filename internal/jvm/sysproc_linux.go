package jvm

import "syscall"

// sysProcAttr puts a JVM in a process group of its own (we stop it by its
// pid, never by group or name) and has the kernel SIGKILL it when the
// thread that started it dies, so that a test binary killed by a timeout
// leaves no JVM behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
