// Package acquire is the acquire engine every lock recipe shares: Curator's
// LockInternals, with the recipes' rules as drivers (recipes/driver.go,
// Curator's LockInternalsDriver) and the recipes' events as an observer
// (recipes/events.go). The recipes use it through this small API alone:
//
//   - NewLock: a lock at one base path on one client (a recipe value keeps
//     one per path it queues under); Lock.Acquire, the one acquire sequence
//     of every recipe, the semaphore's guard lock included (Attempt.Guard):
//     tell the observer it begins, create a protected node with its first
//     listing in the same round trip, wait until the driver says it holds,
//     retry a vanished node as the client's retry policy allows, hold.
//   - Grant: what an acquisition holds once it holds (never while it
//     waits): Done, Err, Release, Delete, Token, Path, Session. Its end is
//     settled once, release against loss (end.go); reading it settles
//     nothing.
//   - Lock.Stand: a Candidacy, a leader latch's node standing in the queue
//     across terms (Wait, Withdraw).
//   - Driver, HandoffDriver, CountingDriver: the rules (the recipes
//     implement them); Observer: what hears the acquisitions.
//   - WatchData, WatchChildren: the client's shared watches, which an
//     election's observer (recipes/observe.go) uses as the waiters do.
//
// Inside, one idea a file: lock.go (the sequence), node.go (our node while
// it waits: its create, its trust, its verify), wait.go and plan.go
// (Curator's internalLockLoop: list, plan the watches, wait), grant.go and
// end.go (the grant and its one compare-and-swap), holdings.go (the grants
// a lock value holds, settled when the client's trust ends), candidacy.go,
// lister.go and watches.go (what the waiters of one client share, in
// shared.go's per-client value, which nothing keeps but the lock values),
// revocation.go. internal/locktree owns the tree format the drivers apply.
package acquire
