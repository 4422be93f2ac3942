package acquire

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/errs"
)

// The sentinels the engine's errors wrap. The recipes export them under the
// same names (recipes.ErrNotHeld, ...), where their meaning for users is
// documented.
var (
	// ErrNotHeld is the error of what was released, or never held.
	ErrNotHeld = errors.New("gocurator: not held by this handle")
	// ErrLocked is the error of a try that found the lock held.
	ErrLocked = errors.New("gocurator: held by another participant")
	// ErrLockLost is the error of a grant that can no longer be trusted.
	ErrLockLost = errors.New("gocurator: lock lost")
)

// ErrVanished is the cause when our own node is no longer there (or belongs
// to a dead session), as after a session expiry. Curator signals it with
// NoNodeException("Sequential path not found"); so does it unwrap to
// zk.ErrNoNode. A driver's Check returns it when our name is not among the
// children.
var ErrVanished error = &vanishedError{}

type vanishedError struct{}

func (*vanishedError) Error() string { return "gocurator: our lock node is gone (session lost?)" }
func (*vanishedError) Unwrap() error { return zk.ErrNoNode }

// vanished reports whether err says our node vanished.
func vanished(err error) bool { return errors.Is(err, ErrVanished) }

// ErrReleased is an ended grant's cause once it was given up (and its Err
// then): the owner no longer holds it, which ErrNotHeld says.
var ErrReleased = errs.Errorf("%w: released", ErrNotHeld)

// AsLost returns cause as the loss of a lock: cause itself if it wraps
// ErrLockLost already, else an error wrapping both.
func AsLost(cause error) error {
	if errors.Is(cause, ErrLockLost) {
		return cause
	}
	return errs.Errorf("%w: %w", ErrLockLost, cause)
}
