package recipes_test

import (
	"context"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// requestKey is a context key of this test's own.
type requestKey struct{}

// An acquisition's events carry the values of the context its acquire was
// called with (a trace span, in a real program), but not its cancellation:
// its start, its grant and the release that ends it; a failed acquire's
// too. A revocation request names the recipe of the lock it concerns (the
// mutex's, or the read-write lock's half).
func TestEventsCarryTheAcquiresContextAndRecipe(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	log := newEventLog()
	c := newClient(t, "", framework.WithEventHook(log))
	actx, cancel := context.WithCancel(context.WithValue(ctx, requestKey{}, "req-1"))
	defer cancel()

	h := mustMutex(t, c, base+"/mutex").NewHandle()
	if err := h.Acquire(actx); err != nil {
		t.Fatal(err)
	}
	cancel() // the grant outlives the acquire's context
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	holder := mustMutex(t, newClient(t, ""), base+"/mutex").NewHandle()
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.ErrorIs(t, h.TryAcquire(context.WithValue(ctx, requestKey{}, "req-2")), recipes.ErrLocked)
	es := log.next(t, 5)
	if kinds(es) != "acquire-started mutex, acquired mutex, released mutex, acquire-started mutex, acquire-failed mutex" {
		t.Fatalf("events: %s", kinds(es))
	}
	for i, e := range es {
		want := "req-1"
		if i >= 3 {
			want = "req-2"
		}
		if e.Context == nil || e.Context.Value(requestKey{}) != want {
			t.Errorf("%s: Context %v, want one with the acquire's value %q", e, e.Context, want)
		} else if e.Context.Done() != nil {
			t.Errorf("%s: Context can be cancelled: it should carry only the acquire's values", e)
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}

	for _, lock := range []struct {
		recipe string
		handle func() *recipes.Handle
	}{
		{"mutex", func() *recipes.Handle { return mustMutex(t, c, base+"/revocable").NewHandle() }},
		{"read", func() *recipes.Handle { return mustRW(t, c, base+"/revocable-rw").NewHandle().ReadLock() }},
	} {
		h := lock.handle()
		revoked := make(chan struct{})
		h.MakeRevocable(func() { close(revoked) })
		if err := h.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		// Revoked at once, whether the revocation watch is set yet or not:
		// the watcher's first read hears a request made before it.
		if err := recipes.Revoke(ctx, c, h.LockPath()); err != nil {
			t.Fatal(err)
		}
		testutil.Recv(t, revoked, "the revocation listener")
		for {
			e := testutil.Recv(t, log.heard, "the revocation request")
			if e.Kind != recipes.RevocationRequested {
				continue
			}
			if recipeOf(e) != lock.recipe || e.Node != h.LockPath() {
				t.Errorf("%s: recipe %q, node %s; want %q, %s", e, recipeOf(e), e.Node, lock.recipe, h.LockPath())
			}
			break
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
