// Package testutil holds helpers that gocurator's own tests share: a
// connection-state recorder that waits without sleeping, goroutine-leak
// checks and per-test ZooKeeper paths. It is not for users: the importable
// test server is framework/zktest.
package testutil

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gocurator/curator/state"
)

// Timeout bounds every wait in the tests, so that a broken feature fails a
// test instead of hanging it.
const Timeout = 60 * time.Second

// Context returns a context that ends after Timeout or when the test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	t.Cleanup(cancel)
	return ctx
}

// CheckLeaks makes the test fail if, once all its cleanups have run, a
// goroutine that was not running when CheckLeaks was called is still running.
// Call it first in a test, so that its check runs last.
func CheckLeaks(t testing.TB) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// Root is the node under which every test has its own path. CleanupTree
// makes it a persistent node: as the empty container that the first lock
// below it would make, the server would reap it between tests, and a client
// creating parents at that moment (Java Curator's mkdirs, for one) fails
// with NoNode.
const Root = "/gocurator-test"

// Path returns a ZooKeeper path unique to the test: /gocurator-test/<name>.
func Path(t testing.TB, suffix ...string) string {
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	p := Root + "/" + name
	for _, s := range suffix {
		p += "/" + s
	}
	return p
}

// StateRecorder is a state.Listener that keeps every state it hears, in
// order, and lets a test wait for the next one.
type StateRecorder struct {
	mu      sync.Mutex
	states  []state.ConnectionState
	changed chan struct{}
	next    int
}

// NewStateRecorder returns an empty recorder.
func NewStateRecorder() *StateRecorder {
	return &StateRecorder{changed: make(chan struct{})}
}

// StateChanged records s.
func (r *StateRecorder) StateChanged(s state.ConnectionState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, s)
	close(r.changed)
	r.changed = make(chan struct{})
}

// States returns what was heard so far.
func (r *StateRecorder) States() []state.ConnectionState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]state.ConnectionState(nil), r.states...)
}

// WaitFor waits until a state s is heard after the ones earlier WaitFor
// calls consumed, and consumes everything up to it. It fails the test when
// ctx ends first.
func (r *StateRecorder) WaitFor(ctx context.Context, t testing.TB, s state.ConnectionState) {
	t.Helper()
	for {
		r.mu.Lock()
		for i := r.next; i < len(r.states); i++ {
			if r.states[i] == s {
				r.next = i + 1
				r.mu.Unlock()
				return
			}
		}
		ch := r.changed
		r.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %v: %v; heard %v", s, ctx.Err(), r.States())
		}
	}
}

// Equal reports whether the recorded states are exactly want, and if not, how they differ.
func (r *StateRecorder) Equal(want ...state.ConnectionState) error {
	got := r.States()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		return fmt.Errorf("states %v, want %v", got, want)
	}
	return nil
}

// BadPath is a path ZooKeeper refuses, and the problem an error about it names.
type BadPath struct {
	Path, Problem string
}

// BadPaths returns paths that ZooKeeper (and framework.ValidatePath)
// refuses, made from base, a valid path: empty, relative, with a trailing
// slash, a double slash, a "." or ".." segment, a NUL or a control character.
func BadPaths(base string) []BadPath {
	return []BadPath{
		{"", "must not be empty"},
		{"rel", "must start with /"},
		{strings.TrimPrefix(base, "/") + "/x", "must start with /"},
		{base + "/", "must not end with /"},
		{base + "//x", "empty segment"},
		{base + "/./x", "relative segment ."},
		{base + "/x/..", "relative segment .."},
		{base + "/x\x00y", "NUL character"},
		{base + "/x\x01y", "invalid character"},
	}
}

// Must fails t at once if err is not nil: for a step whose failure leaves
// nothing more to check.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ErrorIs fails the test unless err wraps target, its text holds every one
// of want, and each of its lines (errors.Join puts one error a line) says
// "gocurator: " once at most.
func ErrorIs(t testing.TB, err, target error, want ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("error %v does not wrap %v", err, target)
		return
	}
	OnePrefix(t, err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

// OnePrefix fails the test if a line of err's text says "gocurator: " more
// than once: each layer of the module adds only what it knows.
func OnePrefix(t testing.TB, err error) {
	t.Helper()
	for _, line := range strings.Split(err.Error(), "\n") {
		if n := strings.Count(line, "gocurator: "); n > 1 {
			t.Errorf("error says \"gocurator: \" %d times: %s", n, line)
		}
	}
}
