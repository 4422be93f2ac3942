//go:build linux

package zktest

import "syscall"

// sysProcAttr runs the server in its own process group (we stop it by pid)
// and has the kernel SIGKILL it when its parent dies, so that a test binary
// killed by a timeout leaves no JVM behind. Linux ties that signal to the OS thread that started the process, not to
// the process (golang/go#27505): a goroutine that ends while holding
// runtime.LockOSThread takes its thread down, and with it any server that
// thread started. Tests that lock OS threads must unlock them before their
// goroutine ends.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
