//go:build !unix

package main

import (
	"os"
	"os/exec"
)

// configureChild does nothing where there are no process groups.
func configureChild(*exec.Cmd) {}

// signalGroup signals the command itself (on Windows only a kill is possible).
func signalGroup(cmd *exec.Cmd, sig os.Signal) {
	if cmd.Process == nil {
		return
	}
	if err := cmd.Process.Signal(sig); err != nil {
		_ = cmd.Process.Kill()
	}
}
