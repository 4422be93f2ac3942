package recipes

import (
	"errors"

	"github.com/go-zookeeper/zk"
)

var (
	// ErrNotHeld is returned when a handle releases what it does not hold
	// (Curator's IllegalMonitorStateException "You do not own the lock").
	ErrNotHeld = errors.New("gocurator: not held by this handle")
	// ErrLocked is returned by TryAcquire when the lock is held elsewhere.
	ErrLocked = errors.New("gocurator: held by another participant")
	// ErrLockLost is the cause of the context given to a function run under
	// a lock (WithLock) when the lock could no longer be trusted.
	ErrLockLost = errors.New("gocurator: lock lost (connection SUSPENDED or session LOST)")
	// ErrUpgrade is returned when the holder of a read lock asks for the
	// write lock of the same read-write lock: Curator would deadlock.
	ErrUpgrade = errors.New("gocurator: a read lock cannot be upgraded to the write lock")
	// ErrBadArgument marks a bad argument to a recipe: a zero quantity, a
	// multi-lock with no locks or the same path twice, ...
	ErrBadArgument = errors.New("gocurator: invalid argument")
)

// errNodeVanished is the cause when our own lock node is no longer there (or
// belongs to a dead session), as after a session expiry. Curator signals it
// with NoNodeException("Sequential path not found"); so does it unwrap to
// zk.ErrNoNode.
var errNodeVanished = &vanishedError{}

type vanishedError struct{}

func (*vanishedError) Error() string { return "gocurator: our lock node is gone (session lost?)" }
func (*vanishedError) Unwrap() error { return zk.ErrNoNode }
