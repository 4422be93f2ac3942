// Package listeners is the one listener registry of gocurator (a client's
// connection-state listeners, a leader latch's, a shared count's) and the
// gate through which their goroutine calls them.
//
// A Registry keeps listeners in the order they were added; Snapshot returns
// them in that order, and whoever calls them calls them so. Safe runs one
// listener call and recovers a panic in it, which the caller hears of (to
// log it): a listener's bug does not take the process down. A Queue hands
// values to a function on a goroutine of its own, in order (a client's
// state changes to its listeners, its events to its hook).
//
// A Gate is the door through which a goroutine that Close may wait for
// calls user code (a latch's or a count's listeners, a selector's
// leadership function). Close never waits for user code: it shuts the gate,
// and calls that would begin after that are refused, so Close decides once
// whether it may wait for the goroutine: not while a call is under way
// (that call may be the very one closing it, or wait for it); and if none
// is, none ever will be. The goroutine ends by itself once a call under way
// returns. Curator behaves the same way: closing a CuratorFramework shuts
// its listener executor down without waiting for a listener under way, and
// a closed recipe clears its listeners.
//
// A Queue's goroutine runs user code only, so its Close waits for nothing:
// what was pushed is still delivered, in order, on the queue's goroutine,
// never on the pusher's.
package listeners

import (
	"fmt"
	"reflect"
	"sync"
)

// Registry is an ordered set of listeners of type T. The zero value is
// ready to use; it is safe for concurrent use.
type Registry[T any] struct {
	mu      sync.Mutex
	nextID  uint64
	entries []entry[T]
}

type entry[T any] struct {
	id uint64
	l  T
}

// Add appends l and returns a function that removes it (once; later calls
// do nothing).
func (r *Registry[T]) Add(l T) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	id := r.nextID
	r.entries = append(r.entries, entry[T]{id, l})
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for i, e := range r.entries {
			if e.id == id {
				r.entries = append(r.entries[:i:i], r.entries[i+1:]...)
				return
			}
		}
	}
}

// Snapshot returns the listeners, in the order they were added.
func (r *Registry[T]) Snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.l
	}
	return out
}

// IsNil reports whether l is nil or holds a nil func, pointer, map, chan or
// interface: a listener that would crash when called.
func IsNil(l any) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Func, reflect.Pointer, reflect.Map, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// Safe runs f, and returns the panic f raised, as an error, or nil.
func Safe(f func()) (panicked error) {
	defer func() {
		if p := recover(); p != nil {
			panicked = fmt.Errorf("listener panicked: %v", p)
		}
	}()
	f()
	return nil
}

// Call runs f through g, as Safe does: it reports whether g let f run (see
// Gate.Call), and the panic f raised, as an error, or nil.
func Call(g *Gate, f func()) (ran bool, panicked error) {
	ran = g.Call(func() { panicked = Safe(f) })
	return ran, panicked
}
