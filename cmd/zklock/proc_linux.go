//go:build linux

package main

import "syscall"

// setParentDeathSignal makes the kernel send the command SIGTERM when the
// thread that started it ends (zklock died): the lock it ran under is going.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
