package atomic

import (
	"context"
	"encoding/binary"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/recipeargs"
	"github.com/gocurator/curator/retry"
)

// DistributedAtomicLong is an int64 in one ZooKeeper node, changed
// atomically: Curator's DistributedAtomicLong, on a DistributedAtomicValue.
// The node holds the value as 8 bytes, big-endian (Java's ByteBuffer.putLong),
// so that Go and Java processes count on one node; a node that is not
// there, or empty, is 0. Additions wrap around, as Java's long does.
//
// As a DistributedAtomicValue's, a change may apply twice when its reply is
// lost, never not at all once it succeeded. A value is safe for concurrent
// use.
type DistributedAtomicLong struct {
	value *DistributedAtomicValue
}

// NewDistributedAtomicLong returns the atomic long at path, whose
// optimistic tries run under policy; its errors are
// NewDistributedAtomicValue's.
func NewDistributedAtomicLong(client *framework.Client, path string, policy retry.Policy, opts ...Option) (*DistributedAtomicLong, error) {
	v, err := NewDistributedAtomicValue(client, path, policy, opts...)
	if err != nil {
		return nil, err
	}
	return &DistributedAtomicLong{value: v}, nil
}

func (l *DistributedAtomicLong) usable() bool { return l != nil && l.value.usable() }

// check refuses a zero long (and a nil ctx, as the value's methods do).
func (l *DistributedAtomicLong) check() error {
	if !l.usable() {
		return recipeargs.Zero("DistributedAtomicLong")
	}
	return nil
}

// Path returns the long's node path ("" for a nil or zero long).
func (l *DistributedAtomicLong) Path() string {
	if !l.usable() {
		return ""
	}
	return l.value.path
}

// Get reads the value (Curator's get); 0 if the node is not there.
func (l *DistributedAtomicLong) Get(ctx context.Context) (AtomicValue[int64], error) {
	if err := l.check(); err != nil {
		return AtomicValue[int64]{}, err
	}
	return l.long(l.value.Get(ctx))
}

// ForceSet sets the value whatever it is, with no atomicity (Curator's
// forceSet).
func (l *DistributedAtomicLong) ForceSet(ctx context.Context, value int64) error {
	if err := l.check(); err != nil {
		return err
	}
	return l.value.ForceSet(ctx, encodeLong(value))
}

// CompareAndSet sets the value to newValue if it is expected now, once,
// with no retry (Curator's compareAndSet): Succeeded false if it was not,
// or the node is not there.
func (l *DistributedAtomicLong) CompareAndSet(ctx context.Context, expected, newValue int64) (AtomicValue[int64], error) {
	if err := l.check(); err != nil {
		return AtomicValue[int64]{}, err
	}
	return l.long(l.value.CompareAndSet(ctx, encodeLong(expected), encodeLong(newValue)))
}

// TrySet sets the value to newValue (Curator's trySet); see
// DistributedAtomicValue.TrySet.
func (l *DistributedAtomicLong) TrySet(ctx context.Context, newValue int64) (AtomicValue[int64], error) {
	if err := l.check(); err != nil {
		return AtomicValue[int64]{}, err
	}
	return l.long(l.value.TrySet(ctx, encodeLong(newValue)))
}

// Initialize makes the node with value if it is not there, and reports
// whether it did (Curator's initialize).
func (l *DistributedAtomicLong) Initialize(ctx context.Context, value int64) (bool, error) {
	if err := l.check(); err != nil {
		return false, err
	}
	return l.value.Initialize(ctx, encodeLong(value))
}

// Increment adds 1 (Curator's increment).
func (l *DistributedAtomicLong) Increment(ctx context.Context) (AtomicValue[int64], error) {
	return l.Add(ctx, 1)
}

// Decrement subtracts 1 (Curator's decrement).
func (l *DistributedAtomicLong) Decrement(ctx context.Context) (AtomicValue[int64], error) {
	return l.Add(ctx, -1)
}

// Subtract subtracts delta (Curator's subtract).
func (l *DistributedAtomicLong) Subtract(ctx context.Context, delta int64) (AtomicValue[int64], error) {
	return l.Add(ctx, -delta)
}

// Add adds delta (Curator's add): optimistically, as the retry policy
// allows, then under the promoted lock if there is one. Succeeded false
// means it gave up (no error): the value is not changed. A node whose data
// is not a long is an error wrapping ErrCorruptValue.
func (l *DistributedAtomicLong) Add(ctx context.Context, delta int64) (AtomicValue[int64], error) {
	if err := l.check(); err != nil {
		return AtomicValue[int64]{}, err
	}
	if err := l.value.check(ctx); err != nil {
		return AtomicValue[int64]{}, err
	}
	return l.long(l.value.trySet(ctx, func(previous []byte) ([]byte, error) {
		n, err := l.decode(previous)
		if err != nil {
			return nil, err
		}
		return encodeLong(n + delta), nil
	}))
}

// long is r of the long's bytes as longs.
func (l *DistributedAtomicLong) long(r AtomicValue[[]byte], err error) (AtomicValue[int64], error) {
	out := AtomicValue[int64]{Succeeded: r.Succeeded, Stats: r.Stats}
	if err != nil {
		return out, err
	}
	if out.PreValue, err = l.decode(r.PreValue); err != nil {
		return out, err
	}
	if out.PostValue, err = l.decode(r.PostValue); err != nil {
		return out, err
	}
	return out, nil
}

// decode is Curator's bytesToValue: nil or empty is 0; otherwise the first
// 8 bytes, big-endian; fewer is corrupt.
func (l *DistributedAtomicLong) decode(data []byte) (int64, error) {
	switch {
	case len(data) == 0:
		return 0, nil
	case len(data) < 8:
		return 0, corrupt(l.value.path, data)
	}
	return int64(binary.BigEndian.Uint64(data)), nil
}

// encodeLong is Curator's valueToBytes: 8 bytes, big-endian.
func encodeLong(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }
