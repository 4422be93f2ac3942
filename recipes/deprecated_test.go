//lint:file-ignore SA1019 the test checks the names kept one release, deprecated

package recipes_test

import (
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// The names the recipes' events had in the framework, kept one release,
// deprecated, still work: each of the framework's former kinds is the
// recipes' kind of the same name (a hook that switches on them hears the
// same events), and an event a recipe tells fills the framework's former
// Recipe and Position fields as its LockEvent says. recipes.ErrBadArgument
// is framework.ErrInvalidArgument.
func TestFormerNamesStillWork(t *testing.T) {
	for _, c := range []struct{ former, now framework.EventKind }{
		{framework.AcquireStarted, recipes.AcquireStarted},
		{framework.Acquired, recipes.Acquired},
		{framework.AcquireFailed, recipes.AcquireFailed},
		{framework.Released, recipes.Released},
		{framework.Lost, recipes.Lost},
		{framework.RevocationRequested, recipes.RevocationRequested},
		{framework.LeadershipGained, recipes.LeadershipGained},
		{framework.LeadershipLost, recipes.LeadershipLost},
	} {
		if c.former != c.now {
			t.Errorf("framework.%s is not recipes.%s", c.former, c.now)
		}
	}
	if recipes.ErrBadArgument != framework.ErrInvalidArgument {
		t.Error("recipes.ErrBadArgument is not framework.ErrInvalidArgument")
	}

	ctx, base := testutil.Begin(t, server.Addr())
	log := newEventLog()
	h := mustMutex(t, newClient(t, "", framework.WithEventHook(log)), base).NewHandle()
	testutil.Must(t, h.Acquire(ctx))
	testutil.Must(t, h.Release(ctx))
	for _, e := range log.next(t, 3) {
		d, ok := recipes.LockEventOf(e)
		if !ok || e.Recipe != d.Recipe || e.Recipe != "mutex" || e.Position != d.Position {
			t.Errorf("%s: Recipe %q, Position %d; its LockEvent %+v", e, e.Recipe, e.Position, d)
		}
	}
}
