package nodes

import (
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/framework"
)

// NodeCreated is the kind of event (framework.Event) a persistent node
// tells its client's event hook each time it creates its node, at its
// start or again after it was found gone (deleted, or its session ended):
// Path is its base path, Node the node made, Session its session, and the
// event's Detail a NodeEvent. It is logged at INFO.
var NodeCreated = framework.NewEventKind("node-created", zapcore.InfoLevel)

// NodeEvent is what the package's events add (framework.Event.Detail).
type NodeEvent struct {
	// Recipe is the kind of node: "persistent-node" or
	// "persistent-ttl-node".
	Recipe string
}

// EachField shows the recipe.
func (d NodeEvent) EachField(_ framework.Event, f func(key string, value any)) {
	f("recipe", d.Recipe)
}
