package barriers

import (
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/framework"
)

// BarrierPassed is the kind of event (framework.Event) a member tells its
// client's event hook each time it passes a barrier: Path is the barrier's,
// Wait the time it waited, and the event's Detail a BarrierEvent. It is
// logged at DEBUG.
var BarrierPassed = framework.NewEventKind("barrier-passed", zapcore.DebugLevel)

// BarrierEvent is what the package's events add (framework.Event.Detail).
type BarrierEvent struct {
	// Recipe is the kind of barrier: "barrier" or "double-barrier".
	Recipe string
	// Step is what was passed: "wait" (a DistributedBarrier was removed),
	// "enter" or "leave" (every member of a DistributedDoubleBarrier had
	// entered, or left).
	Step string
}

// EachField shows the recipe, the step and the time waited.
func (d BarrierEvent) EachField(e framework.Event, f func(key string, value any)) {
	f("recipe", d.Recipe)
	f("step", d.Step)
	f("wait", e.Wait)
}
