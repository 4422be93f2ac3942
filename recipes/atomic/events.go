package atomic

import "github.com/gocurator/curator/framework"

// RetryEvent is the Detail of the framework.Retrying events an atomic value
// tells its client's event hook, one at each retry of a try that met
// another's change (Op "optimistic-set" or "promoted-set", Err the
// conflict): a hook tells them from the client's own retries so.
type RetryEvent struct{}

// EachField shows the recipe, "atomic".
func (RetryEvent) EachField(_ framework.Event, f func(key string, value any)) {
	f("recipe", recipeAtomic)
}
