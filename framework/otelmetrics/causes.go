package otelmetrics

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// causeOther is error.type's value for a cause outside the fixed set, as
// OpenTelemetry's conventions name it.
const causeOther = "_OTHER"

// The causes that are also outcomes of an acquire (outcomes.go).
const (
	causeTimeout  = "timeout"
	causeCanceled = "canceled"
	causeLocked   = "locked"
)

// causeNoServer is error.type's value for an acquire that failed because
// no server answered (a *framework.NoServerError): the ensemble down,
// unreachable or not serving, the commonest operational failure.
const causeNoServer = "no_server"

// causeOf is the value of error.type for err, why an acquisition failed or
// a grant or a term ended: one of the fixed set the package doc lists.
func causeOf(err error) string {
	var se *framework.StateError
	var ns *framework.NoServerError
	switch {
	case errors.As(err, &se):
		switch se.State {
		case state.Suspended:
			return "suspended"
		case state.Lost:
			return "lost"
		}
	case errors.Is(err, framework.ErrClosed):
		return "closed"
	case errors.Is(err, zk.ErrNoNode):
		return "node_gone"
	case errors.As(err, &ns) && !errors.Is(err, context.Canceled):
		// Before the deadline: an acquire whose context ended while no
		// server answered failed for want of a server, not of the lock.
		return causeNoServer
	case errors.Is(err, context.DeadlineExceeded):
		return causeTimeout
	case errors.Is(err, recipes.ErrLocked):
		return causeLocked
	case errors.Is(err, context.Canceled):
		return causeCanceled
	case errors.Is(err, recipes.ErrLeadershipInterrupted):
		return "interrupted"
	}
	return causeOther
}
