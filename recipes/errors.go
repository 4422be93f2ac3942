package recipes

import (
	"errors"

	life "github.com/gocurator/curator/internal/lifecycle"
	"github.com/gocurator/curator/internal/recipeargs"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

var (
	// ErrNotHeld is returned when a handle releases what it does not hold
	// (Curator's IllegalMonitorStateException "You do not own the lock").
	ErrNotHeld = acquire.ErrNotHeld
	// ErrLocked is returned by TryAcquire when the lock is held elsewhere.
	ErrLocked = acquire.ErrLocked
	// ErrLockLost means that an acquisition can no longer be trusted. The
	// connection went SUSPENDED or the session LOST (by the client's error
	// policy), the client closed, or the node was found gone. It is wrapped
	// by the owner's Err, by every later Acquire and Release of it, and by
	// the cause of the context WithLock gives its function.
	ErrLockLost = acquire.ErrLockLost
	// ErrUpgrade is returned when the holder of a read lock asks for the
	// write lock of the same read-write lock: Curator would deadlock.
	ErrUpgrade = errors.New("gocurator: a read lock cannot be upgraded to the write lock")
	// ErrInvalidState is returned by a call that its value's state does not
	// allow (Curator's IllegalStateException). Such are starting a
	// SharedCount twice or after Close, and setting one that is not started.
	// The sibling packages (recipes/nodes, recipes/barriers) return it too.
	ErrInvalidState = life.ErrInvalidState
	// ErrBadArgument is framework.ErrInvalidArgument, the module's one
	// sentinel for a bad argument (a nil context, a zero quantity, a
	// request that can never be granted, a multi-lock with no locks or the
	// same path twice, and more), under the name the recipes gave it.
	//
	// Deprecated: use framework.ErrInvalidArgument, which errors.Is
	// matches in every error ErrBadArgument does. ErrBadArgument is kept
	// for one release.
	ErrBadArgument = framework.ErrInvalidArgument
)

// errZero is the error of a call on a nil or zero value of what, an
// exported type whose values come from a constructor.
func errZero(what string) error { return recipeargs.Zero(what) }
