package acquire

// Driver is the recipe-specific part of the lock algorithm (Curator's
// LockInternalsDriver): how children sort, and whether our node holds the
// lock or which node to wait on. The recipes' drivers, and the safety
// argument of each rule, are in recipes/driver.go.
type Driver interface {
	Sort(children []string) []string
	// Order names the order Sort puts children in: waiters whose drivers
	// have the same order may share a sorted listing (lister).
	Order() string
	// Check returns whether ourName holds the lock among the sorted
	// children, or else the name of the child to wait on. An error that
	// unwraps to ErrVanished means ourName is not among them.
	Check(sorted []string, ourName string) (held bool, watch string, err error)
}

// HandoffDriver is a Driver that can say, of the listing in which ourName
// waits on watch, whether the deletion of watch alone makes ourName the
// holder (HandsOff), so that the waiter holds the moment that node is
// deleted, without listing again (the round trip Curator pays at every
// hand-off); and which node further ahead is worth listing again for
// before watch goes (Lookahead; "" for none). Why each rule is safe is
// argued beside the drivers (recipes/driver.go); the engine adds one
// condition of its own to a hand-off: our node's owner is the current
// session, with no error state since its trust was taken (an ephemeral
// node of a live session goes only by an explicit delete).
type HandoffDriver interface {
	HandsOff(sorted []string, ourName, watch string) bool
	Lookahead(sorted []string, ourName, watch string) string
}

// CountingDriver is a Driver that decides on the children as a whole (the
// semaphore's lease count) rather than on one node ahead of ours: its
// waiter watches the base's children, and also wakes when Changed's
// channel closes (its own limit changed). When Check says neither held nor
// a node to watch, the waiter waits for one of those.
type CountingDriver interface {
	Driver
	Changed() <-chan struct{}
}
