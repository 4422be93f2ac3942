//go:build unix

package curatorpeer

import "syscall"

// Pause stops the process (SIGSTOP to its pid), as a long garbage
// collection or a frozen virtual machine would: it runs no instruction,
// its timers included, until Resume. The server goes on without it.
func (p *Peer) Pause() error { return syscall.Kill(p.Pid(), syscall.SIGSTOP) }

// Resume lets a paused process run again (SIGCONT).
func (p *Peer) Resume() error { return syscall.Kill(p.Pid(), syscall.SIGCONT) }
