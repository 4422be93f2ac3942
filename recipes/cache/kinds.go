package cache

import (
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/framework"
)

// The kinds of event (framework.Event) a cache tells its client's event
// hook, where an operator wants them: Path is the cache's, and the event's
// Detail a HookEvent. Both are logged at INFO.
var (
	// WentStale: the cache may miss changes from now on, and says so (its
	// watch lapsed, the connection dropped, or a read failed); Err says
	// why.
	WentStale = framework.NewEventKind("cache-stale", zapcore.InfoLevel)
	// WentCurrent: the cache has read its tree, at first or again after
	// WentStale, and follows its changes; Wait is the time since it
	// started, or since it went stale.
	WentCurrent = framework.NewEventKind("cache-current", zapcore.InfoLevel)
)

// HookEvent is what a cache's events add (framework.Event.Detail).
type HookEvent struct{}

// EachField shows the recipe, "cache", and the time waited of a
// WentCurrent.
func (HookEvent) EachField(e framework.Event, f func(key string, value any)) {
	f("recipe", "cache")
	if e.Kind == WentCurrent {
		f("wait", e.Wait)
	}
}
