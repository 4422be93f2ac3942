//go:build unix

package main

import (
	"os"
	"os/exec"
	"syscall"
)

// configureChild puts the command in a process group of its own, so that
// signals reach all of it (a shell and its children) and only through
// zklock, and (on Linux) sends it SIGTERM if zklock dies first.
func configureChild(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends sig to the command's process group.
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		_ = cmd.Process.Signal(sig)
		return
	}
	if err := syscall.Kill(-cmd.Process.Pid, s); err != nil {
		_ = cmd.Process.Signal(sig) // the group may be gone but not the leader
	}
}
