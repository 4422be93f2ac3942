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

// causeOf is the value of error.type for err, why an acquisition failed or
// a grant or a term ended: one of the fixed set the package doc lists.
func causeOf(err error) string {
	var se *framework.StateError
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
