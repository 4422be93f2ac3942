package recipes

import (
	"bytes"
	"context"
	"errors"
	"sync"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/retry"
)

// VersionedValue is a shared value as it was read from its node, with the
// node's Stat that says which change it is: Curator's VersionedValue.
// SharedValue.VersionedValue returns one; TrySetValue takes it back.
type VersionedValue struct {
	// Zxid is the node's Mzxid: the change that wrote the value. It orders
	// the values read (-1: not read yet).
	Zxid int64
	// Version is the node's data version (Stat.Version), which TrySetValue
	// sets at (-1: not read yet; it also overflows to -1 after 2³¹−1
	// changes, ZOOKEEPER-4743).
	Version int32
	// Value is the value.
	Value []byte
}

// SharedValue is a byte slice shared through one ZooKeeper node, which
// every participant watches: Curator's SharedValue. The node is PERSISTENT
// (container parents) and holds the value as it is, so Go and Java
// participants share one value. Values read are ordered by the change that
// wrote them (the node's mzxid, as Curator since 5.7), so a late read never
// replaces a newer value, whatever the version's overflow.
//
// Start it before use and Close it when done; Close stops its watching.
// Start and Close follow the package's one lifecycle rule: starting twice,
// or after Close, fails with ErrInvalidState (a Start that failed may be
// called again); Close is idempotent and never waits for a listener. A zero
// SharedValue fails every call with framework.ErrInvalidArgument.
type SharedValue struct {
	client    *framework.Client
	path      string
	seed      []byte
	life      lifecycle
	listeners listeners.Registry[func([]byte)]

	mu       sync.Mutex
	current  VersionedValue
	gen      uint64 // changes of current
	notified uint64 // gen the listeners last heard
	starting bool   // a Start is under way
}

// NewSharedValue returns the value at path, with seed (nil is empty) as its
// value until it is read, and as the value of the node Start creates if
// there is none. A nil client is an error wrapping framework.ErrInvalidArgument; a closed
// one wraps framework.ErrClosed; a bad path (the root included) is an error
// that unwraps to zk.ErrInvalidPath.
func NewSharedValue(client *framework.Client, path string, seed []byte) (*SharedValue, error) {
	if err := checkArgs(client, path); err != nil {
		return nil, err
	}
	seed = bytes.Clone(nonNilData(seed))
	return &SharedValue{client: client, path: path, seed: seed,
		current: VersionedValue{Zxid: -1, Version: -1, Value: seed}}, nil
}

// nonNilData returns data, or empty data for nil: framework's Create makes
// a node of nil data with the client's default data.
func nonNilData(data []byte) []byte {
	if data == nil {
		return []byte{}
	}
	return data
}

// usable reports whether v was made by NewSharedValue.
func (v *SharedValue) usable() bool { return v != nil && v.client != nil }

// Path returns the value's node path ("" for a nil or zero value).
func (v *SharedValue) Path() string {
	if !v.usable() {
		return ""
	}
	return v.path
}

func (v *SharedValue) what() string { return "shared value " + v.path }

// Start creates the node with the seed if it is missing, reads it, and
// starts watching it (Curator's start). Listeners hear the changes it sees
// from then on (not the value Start reads: Value has it). Starting twice,
// or after Close, is an error wrapping ErrInvalidState. If Start fails, it
// may be called again.
func (v *SharedValue) Start(ctx context.Context) error {
	if !v.usable() {
		return errZero("SharedValue")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("%s: %w", v.what(), err)
	}
	v.mu.Lock()
	if v.starting || v.life.current() != latent {
		v.mu.Unlock()
		return errs.Errorf("%s: %w: started twice or after Close", v.what(), ErrInvalidState)
	}
	v.starting = true
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.starting = false
		v.mu.Unlock()
	}()
	_, err := v.client.Create(ctx, v.path, v.seed, framework.CreatingParentContainersIfNeeded())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return errs.Errorf("%s: %w", v.what(), err)
	}
	w, err := v.read(ctx)
	if err != nil {
		return err
	}
	v.mu.Lock()
	v.notified = v.gen // what Start read is no change to tell
	v.mu.Unlock()
	// Closed meanwhile: the lifecycle refuses, and the watch set is left
	// to fire with the node's next change.
	return v.life.start(v.what(), func(ctx context.Context) func() { v.watch(ctx, w); return nil })
}

// read reads the node with a watch and takes its value if it is newer
// (Curator's readValue).
func (v *SharedValue) read(ctx context.Context) (<-chan zk.Event, error) {
	data, stat, w, err := v.client.GetDataW(ctx, v.path)
	if err != nil {
		return nil, errs.Errorf("%s: %w", v.what(), err)
	}
	v.update(stat.Mzxid, stat.Version, data)
	return w, nil
}

// watch re-reads the node at each event on it (re-arming the watch) and
// tells the listeners of each new value, until ctx ends or the client
// closes; a node deleted is waited for.
func (v *SharedValue) watch(ctx context.Context, w <-chan zk.Event) {
	for {
		select {
		case <-w:
		case <-ctx.Done():
			return
		}
		for w = nil; w == nil; {
			dw, err := v.read(ctx)
			switch {
			case err == nil:
				v.notify()
				w = dw
				continue
			case ctx.Err() != nil || errors.Is(err, framework.ErrClosed):
				return
			case errors.Is(err, zk.ErrNoNode):
				// Deleted: wait for it to come back. This watch is meant to stay.
				var ok bool
				var ew <-chan zk.Event
				if ok, _, ew, err = v.client.ExistsW(ctx, v.path); err == nil {
					if !ok {
						w = ew
					}
					continue
				}
			}
			v.client.Logger().Info("shared value: reading failed; trying again", zap.String("path", v.path), zap.Error(err))
			if retry.Sleep(ctx, sharedCountRetryWait) != nil {
				return
			}
		}
	}
}

// update takes a value written by the change zxid if it is newer than ours
// (Curator's updateValue).
func (v *SharedValue) update(zxid int64, version int32, data []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if zxid <= v.current.Zxid {
		return
	}
	v.current = VersionedValue{Zxid: zxid, Version: version, Value: bytes.Clone(nonNilData(data))}
	v.gen++
}

// notify calls the listeners with the value if it changed since they last
// heard. Only the goroutine that reads the node calls it, so listeners hear
// the changes in order.
func (v *SharedValue) notify() {
	v.mu.Lock()
	if v.gen == v.notified || v.life.current() == closed {
		v.mu.Unlock()
		return
	}
	v.notified = v.gen
	value := v.current.Value
	v.mu.Unlock()
	for _, l := range v.listeners.Snapshot() {
		ran, err := v.life.call(func() { l(bytes.Clone(value)) })
		if !ran {
			return // closed: listeners hear nothing more
		}
		if err != nil {
			v.client.Logger().Error("shared value listener", zap.String("path", v.path), zap.Error(err))
		}
	}
}

// Value returns a copy of the current value (the seed until the node has
// been read; nil for a nil or zero value).
func (v *SharedValue) Value() []byte {
	return v.VersionedValue().Value
}

// VersionedValue returns the current value with the change and version it
// was read at (Zxid and Version -1 before the node has been read), for
// TrySetValue.
func (v *SharedValue) VersionedValue() VersionedValue {
	if !v.usable() {
		return VersionedValue{Zxid: -1, Version: -1}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	c := v.current
	c.Value = bytes.Clone(c.Value)
	return c
}

// SetValue sets the value, whatever it is now (Curator's setValue); nil is
// empty. The value must be started (else the error wraps ErrInvalidState).
// Value returns it, or a later one, from then on; the listeners hear of it
// from the watch, as in Curator.
func (v *SharedValue) SetValue(ctx context.Context, value []byte) error {
	if err := v.checkSet(ctx); err != nil {
		return err
	}
	return v.write(ctx, value, -1)
}

// TrySetValue sets the value only if it has not changed since previous (one
// that VersionedValue returned) was read, and reports whether it did
// (Curator's trySetValue). If it did not, Value returns the newer value. A
// previous that is no longer the current value fails without a request; one
// of Version -1 (overflowed, ZOOKEEPER-4743) is an error wrapping
// framework.ErrInvalidArgument, as Curator's
// IllegalTrySetVersionException: it cannot be compared. The value must be
// started (else the error wraps ErrInvalidState).
func (v *SharedValue) TrySetValue(ctx context.Context, previous VersionedValue, newValue []byte) (bool, error) {
	if err := v.checkSet(ctx); err != nil {
		return false, err
	}
	v.mu.Lock()
	current := v.current
	v.mu.Unlock()
	if previous.Zxid != current.Zxid || !bytes.Equal(previous.Value, current.Value) {
		return false, nil
	}
	if previous.Version == -1 {
		return false, errs.Errorf("%s: %w: version -1 (overflowed, ZOOKEEPER-4743) cannot be compared; set the value blindly (SetValue), or upgrade the servers",
			v.what(), framework.ErrInvalidArgument)
	}
	err := v.write(ctx, newValue, previous.Version)
	if !errors.Is(err, zk.ErrBadVersion) {
		return err == nil, err
	}
	data, stat, err := v.client.GetData(ctx, v.path) // the newer value, for Value
	if err != nil {
		return false, errs.Errorf("%s: %w", v.what(), err)
	}
	v.update(stat.Mzxid, stat.Version, data)
	return false, nil
}

// checkSet refuses a set of a zero value, with a nil ctx, or of a value
// not started.
func (v *SharedValue) checkSet(ctx context.Context) error {
	if !v.usable() {
		return errZero("SharedValue")
	}
	if err := checkContext(ctx); err != nil {
		return errs.Errorf("set %s: %w", v.what(), err)
	}
	if v.life.current() != started {
		return errs.Errorf("%s: %w: not started, or closed", v.what(), ErrInvalidState)
	}
	return nil
}

// write writes value at version (-1: any) and takes it as the current
// value.
func (v *SharedValue) write(ctx context.Context, value []byte, version int32) error {
	value = nonNilData(value)
	stat, err := v.client.SetData(ctx, v.path, value, version)
	if err != nil {
		return errs.Errorf("set %s: %w", v.what(), err)
	}
	v.update(stat.Mzxid, stat.Version, value)
	return nil
}

// AddListener registers fn to be called with a copy of the new value at
// each change the value sees from now on (Curator's SharedValueListener's
// valueHasChanged; connection states come from the client's listeners).
// fn is called on the value's own goroutine, in the order of the changes,
// never once Close has begun; listeners are called in the order they were
// added. It returns a function that removes fn. A nil fn is ignored (remove
// then does nothing); a listener that panics is logged, and the others are
// still called.
func (v *SharedValue) AddListener(fn func(value []byte)) (remove func()) {
	if !v.usable() || fn == nil {
		return func() {}
	}
	return v.listeners.Add(fn)
}

// Close stops watching the node; listeners hear nothing more. It waits for
// the watching goroutine to end, unless a listener call is under way (it
// may be the caller: a listener may close its value). The node stays.
// Close is idempotent.
func (v *SharedValue) Close() error {
	if !v.usable() {
		return errZero("SharedValue")
	}
	v.life.close(closedError{v.what()}, nil)
	return nil
}
