//go:build !linux

package compat_test

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
