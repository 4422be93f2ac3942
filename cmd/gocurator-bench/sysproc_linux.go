package main

import "syscall"

// sysProcAttr puts a child JVM in a process group of its own and has the
// kernel kill it if this process dies first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the process group a child of ours leads (its pid).
func killGroup(pid int) error { return syscall.Kill(-pid, syscall.SIGKILL) }
