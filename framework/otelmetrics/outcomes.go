package otelmetrics

import (
	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
)

// The outcomes of an acquire: the value of gocurator.outcome on the wait
// histogram and on the acquire's span.
const (
	outcomeAcquired = "acquired"    // granted
	outcomeTimeout  = causeTimeout  // its context's deadline passed first
	outcomeCanceled = causeCanceled // its context was canceled first
	outcomeLocked   = causeLocked   // a try found the lock held elsewhere
	outcomeFailed   = "failed"      // anything else: a connection lost, the client closed, ...
)

// The outcomes of a hold: the value of gocurator.outcome on the hold
// histogram and on the hold's span.
const (
	outcomeReleased = "released" // its owner released it
	outcomeLost     = "lost"     // it could no longer be trusted
)

// outcomeOf is how the acquire that e ended (an Acquired or AcquireFailed
// event) came out: one of the outcomes above. A failure's outcome agrees
// with its error.type (causeOf): timeout, canceled and locked are those
// causes, every other cause is failed.
func outcomeOf(e framework.Event) string {
	if e.Kind == recipes.Acquired {
		return outcomeAcquired
	}
	switch cause := causeOf(e.Err); cause {
	case causeTimeout, causeCanceled, causeLocked:
		return cause
	}
	return outcomeFailed
}
