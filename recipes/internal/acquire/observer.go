package acquire

import "context"

// Observer hears what becomes of acquisitions: recipes/events.go tells
// them as the client's events. The engine calls it, on the acquiring
// goroutine (Acquiring, Acquired, Failed) and on whichever settles a
// grant's end (Ended); it must not block, nor call back into the engine.
type Observer interface {
	// Acquiring is told that an acquire called with ctx begins. It returns
	// what hears the rest of this acquisition: the observer itself (which
	// keeps nothing per acquisition), one of its own, or nil to hear
	// nothing more of it.
	Acquiring(ctx context.Context) Observer
	// Acquired is told the acquisition was granted g, whose node was at
	// position in the queue at its first look (0 when nothing hears events:
	// framework.Client.Observed). g is not held yet.
	Acquired(g *Grant, position int)
	// Failed is told the acquisition failed with err.
	Failed(err error)
	// Ended is told once that g, held, ended: released (cause nil), or lost
	// for cause.
	Ended(g *Grant, cause error)
}
