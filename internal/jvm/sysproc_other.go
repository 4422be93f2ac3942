//go:build !linux

package jvm

import "syscall"

// sysProcAttr is the platform's default: there is no parent-death signal
// outside Linux, so a JVM may outlive a process that is killed.
func sysProcAttr() *syscall.SysProcAttr { return nil }
