package recipes

import (
	"context"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// What the owner types share. Every owner (Handle and so the read-write
// halves, Lease and so the semaphore mutex, the multi-lock, a latch's and a
// selector's terms) keeps its current (or last) grant and derives Done,
// Err, IsHeld and FencingToken from it alone: the ownership contract is the
// engine's (acquire.Grant), written there once.

// closedChan is the Done channel of an owner that holds nothing.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// doneOf returns the Done channel of an owner whose current grant is g:
// g's, or a closed channel when there is none.
func doneOf(g *acquire.Grant) <-chan struct{} {
	if g == nil {
		return closedChan
	}
	return g.Done()
}

// ownerErr returns the Err of an owner of what (its path) whose current
// grant is g: g's Err, or an error wrapping notHeld when there is none.
func ownerErr(g *acquire.Grant, what string, notHeld error) error {
	if g == nil {
		return errs.Errorf("%s: %w", what, notHeld)
	}
	return g.Err()
}

// contextOf is what the package's owners have beyond Owner: the context
// of their current acquisition (nil when they hold nothing), which WithLock
// and the multi-lock follow with context.AfterFunc instead of a goroutine.
type contextOf interface {
	grantContext() context.Context
}
