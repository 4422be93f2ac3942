//go:build !unix

package curatorpeer

import "errors"

var errNoPause = errors.New("curatorpeer: pausing a process needs a unix system")

// Pause stops the process; not on this system.
func (p *Peer) Pause() error { return errNoPause }

// Resume lets a paused process run again; not on this system.
func (p *Peer) Resume() error { return errNoPause }
