package recipes

// What the tests of the public API (package recipes_test) may see beyond
// it: one count, which no public call shows.

// CountListeners returns how many listeners c has: a semaphore built on c
// and dropped must not leave its own behind (collect_test.go).
func CountListeners(c *SharedCount) int { return len(c.listeners.Snapshot()) }
