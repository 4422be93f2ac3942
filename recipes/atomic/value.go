package atomic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/recipeargs"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// recipeAtomic is the recipe kind of the package's events (RetryEvent),
// and the steps its Retrying events name (Op).
const (
	recipeAtomic   = "atomic"
	stepOptimistic = "optimistic-set"
	stepPromoted   = "promoted-set"
)

// releaseTimeout bounds how long an operation waits for its promoted lock's
// release; the release goes on in the background after that.
const releaseTimeout = 5 * time.Second

// AtomicValue is what an operation of an atomic value did: Curator's
// AtomicValue. Always look at Succeeded: an operation that gave up (its
// retry policies said so, or the promoted lock's timeout passed) returns no
// error, but Succeeded false, and the value was not changed.
type AtomicValue[T any] struct {
	// Succeeded says whether the operation changed the value (for Get:
	// read it).
	Succeeded bool
	// PreValue is the value before the operation (the one its last try
	// read; nil, or 0, if the node was not there).
	PreValue T
	// PostValue is the value after it, if it succeeded.
	PostValue T
	// Stats says how the operation went.
	Stats AtomicStats
}

// AtomicStats is how an operation of an atomic value went: Curator's
// AtomicStats.
type AtomicStats struct {
	// OptimisticTries and PromotedLockTries count the compare-and-sets
	// tried, without and under the promoted lock.
	OptimisticTries, PromotedLockTries int
	// OptimisticTime and PromotedTime are the time spent in each mode
	// (the promoted lock's wait included).
	OptimisticTime, PromotedTime time.Duration
}

// PromotedToLock is the promotion of an atomic value's operation to a lock
// when its optimistic tries did not succeed: Curator's PromotedToLock.
// The lock is an InterProcessMutex at Path (recipes'; a Java
// DistributedAtomicValue promoted at the same path takes the same lock).
type PromotedToLock struct {
	// Path is the lock's path (required).
	Path string
	// Timeout bounds the wait for the lock (Curator's timeout(time,
	// unit)); past it the operation gives up, not succeeded, without an
	// error. 0: no bound of its own, the context's only.
	Timeout time.Duration
	// RetryPolicy decides the tries under the lock after the first
	// (Curator's retryPolicy); nil: none (Curator's RetryNTimes(0, 0)).
	RetryPolicy retry.Policy
}

// Option changes how an atomic value is made.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	promoted *PromotedToLock
}

// WithPromotedToLock makes an atomic value try an operation under a lock
// once its optimistic tries did not succeed (Curator's constructor with a
// PromotedToLock).
func WithPromotedToLock(p PromotedToLock) Option {
	return optionFunc(func(c *config) { c.promoted = &p })
}

// ErrCorruptValue marks the data of a DistributedAtomicLong's node that is
// not a long: neither empty nor at least 8 bytes (Curator's "Corrupted
// data" RuntimeException).
var ErrCorruptValue = errors.New("gocurator: corrupted atomic value")

// DistributedAtomicValue is a byte slice in one ZooKeeper node, changed
// atomically: Curator's DistributedAtomicValue. Each change reads the node
// and writes it back at the version read (a compare-and-set), tried again
// as its retry policy allows; with WithPromotedToLock, if that does not
// succeed, the change is tried again under an InterProcessMutex, with the
// promotion's own retry policy. The node is persistent, with container
// parents.
//
// A change whose reply is lost to a connection loss is retried by the
// client, and its compare-and-set then fails (the version moved: by the
// very change): the operation tries again, on the value it changed itself,
// and so may apply twice, as Curator's does. No change is lost: a
// succeeded operation is applied (at least once), and one that returns an
// error may have been. A value is safe for concurrent use.
type DistributedAtomicValue struct {
	client   *framework.Client
	path     string
	policy   retry.Policy
	promoted *PromotedToLock
	mutex    *recipes.InterProcessMutex
}

// NewDistributedAtomicValue returns the atomic value at path, whose
// optimistic tries run under policy. A nil client or a closed one, a bad
// path (the root, or under /zookeeper, included), a nil policy, or a
// promotion without a valid lock path, is an error wrapping
// framework.ErrInvalidArgument (framework.ErrClosed for a closed client; a
// bad path also unwraps to zk.ErrInvalidPath).
func NewDistributedAtomicValue(client *framework.Client, path string, policy retry.Policy, opts ...Option) (*DistributedAtomicValue, error) {
	if err := recipeargs.Check(client, path); err != nil {
		return nil, err
	}
	if policy == nil {
		return nil, errs.Errorf("%w: nil retry policy", framework.ErrInvalidArgument)
	}
	var cfg config
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	v := &DistributedAtomicValue{client: client, path: path, policy: policy, promoted: cfg.promoted}
	if p := cfg.promoted; p != nil {
		if p.Timeout < 0 {
			return nil, errs.Errorf("%w: promoted lock timeout %v", framework.ErrInvalidArgument, p.Timeout)
		}
		m, err := recipes.NewInterProcessMutex(client, p.Path)
		if err != nil {
			return nil, errs.Errorf("promoted lock: %w", err)
		}
		v.mutex = m
	}
	return v, nil
}

func (v *DistributedAtomicValue) usable() bool { return v != nil && v.client != nil }

func (v *DistributedAtomicValue) what() string { return "atomic value " + v.path }

// Path returns the value's node path ("" for a nil or zero value).
func (v *DistributedAtomicValue) Path() string {
	if !v.usable() {
		return ""
	}
	return v.path
}

// check refuses a zero value and a nil ctx.
func (v *DistributedAtomicValue) check(ctx context.Context) error {
	if !v.usable() {
		return recipeargs.Zero("DistributedAtomicValue")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return errs.Errorf("%s: %w", v.what(), err)
	}
	return nil
}

// Get reads the value (Curator's get): PreValue and PostValue are it, nil
// if the node is not there; Succeeded is true.
func (v *DistributedAtomicValue) Get(ctx context.Context) (AtomicValue[[]byte], error) {
	var r AtomicValue[[]byte]
	if err := v.check(ctx); err != nil {
		return r, err
	}
	data, _, err := v.read(ctx)
	if err != nil {
		return r, err
	}
	r.PreValue, r.PostValue, r.Succeeded = data, data, true
	return r, nil
}

// read returns the node's data and Stat, or nil for both if it is not
// there (Curator's getCurrentValue).
func (v *DistributedAtomicValue) read(ctx context.Context) ([]byte, *zk.Stat, error) {
	data, stat, err := v.client.GetData(ctx, v.path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return nil, nil, nil
	case err != nil:
		return nil, nil, errs.Errorf("%s: %w", v.what(), err)
	}
	if data == nil {
		data = []byte{}
	}
	return data, stat, nil
}

// ForceSet sets the value whatever it is, with no atomicity (Curator's
// forceSet); nil is empty data.
func (v *DistributedAtomicValue) ForceSet(ctx context.Context, value []byte) error {
	if err := v.check(ctx); err != nil {
		return err
	}
	value = nonNil(value)
	_, err := v.client.SetData(ctx, v.path, value, -1)
	if errors.Is(err, zk.ErrNoNode) {
		_, err = v.client.Create(ctx, v.path, value, framework.CreatingParentContainersIfNeeded())
		if errors.Is(err, zk.ErrNodeExists) {
			_, err = v.client.SetData(ctx, v.path, value, -1)
		}
	}
	if err != nil {
		return errs.Errorf("%s: force set: %w", v.what(), err)
	}
	return nil
}

// CompareAndSet sets the value to newValue if it is expected now, once,
// with no retry (Curator's compareAndSet): Succeeded false if it was not
// (or changed meanwhile), or the node is not there.
func (v *DistributedAtomicValue) CompareAndSet(ctx context.Context, expected, newValue []byte) (AtomicValue[[]byte], error) {
	var r AtomicValue[[]byte]
	if err := v.check(ctx); err != nil {
		return r, err
	}
	pre, stat, err := v.read(ctx)
	if err != nil {
		return r, err
	}
	r.PreValue = pre
	if stat == nil || !bytes.Equal(expected, pre) {
		return r, nil
	}
	newValue = nonNil(newValue)
	_, err = v.client.SetData(ctx, v.path, newValue, stat.Version)
	switch {
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return r, nil
	case err != nil:
		return r, errs.Errorf("%s: compare and set: %w", v.what(), err)
	}
	r.Succeeded, r.PostValue = true, bytes.Clone(newValue)
	return r, nil
}

// TrySet sets the value to newValue (Curator's trySet): optimistically,
// as the retry policy allows, then under the promoted lock if there is one.
// Succeeded false means it gave up (no error): the value is not changed.
func (v *DistributedAtomicValue) TrySet(ctx context.Context, newValue []byte) (AtomicValue[[]byte], error) {
	if err := v.check(ctx); err != nil {
		return AtomicValue[[]byte]{}, err
	}
	newValue = nonNil(newValue)
	return v.trySet(ctx, func([]byte) ([]byte, error) { return newValue, nil })
}

// Initialize makes the node with value if it is not there, and reports
// whether it did (Curator's initialize): an atomic value's node is first
// absent, as NULL in a database.
func (v *DistributedAtomicValue) Initialize(ctx context.Context, value []byte) (bool, error) {
	if err := v.check(ctx); err != nil {
		return false, err
	}
	_, err := v.client.Create(ctx, v.path, nonNil(value), framework.CreatingParentContainersIfNeeded())
	switch {
	case errors.Is(err, zk.ErrNodeExists):
		return false, nil
	case err != nil:
		return false, errs.Errorf("%s: initialize: %w", v.what(), err)
	}
	return true, nil
}

// makeValue makes the new value from the one read (nil: none).
type makeValue func(previous []byte) ([]byte, error)

// trySet is Curator's trySet(MakeValue): optimistic tries, then, if they
// did not succeed, tries under the promoted lock.
func (v *DistributedAtomicValue) trySet(ctx context.Context, mk makeValue) (AtomicValue[[]byte], error) {
	var r AtomicValue[[]byte]
	err := v.optimistic(ctx, &r, mk)
	if err == nil && !r.Succeeded && v.mutex != nil {
		err = v.withLock(ctx, &r, mk)
	}
	return r, err
}

// optimistic tries the compare-and-set as the retry policy allows
// (Curator's tryOptimistic).
func (v *DistributedAtomicValue) optimistic(ctx context.Context, r *AtomicValue[[]byte], mk makeValue) error {
	start := time.Now()
	defer func() { r.Stats.OptimisticTime = time.Since(start) }()
	return v.tries(ctx, r, mk, v.policy, stepOptimistic, start, &r.Stats.OptimisticTries)
}

// withLock takes the promoted lock and tries the compare-and-set under it
// as the promotion's retry policy allows (Curator's tryWithMutex). Past the
// promotion's timeout it gives up, not succeeded.
func (v *DistributedAtomicValue) withLock(ctx context.Context, r *AtomicValue[[]byte], mk makeValue) error {
	start := time.Now()
	defer func() { r.Stats.PromotedTime = time.Since(start) }()
	lctx := ctx
	if v.promoted.Timeout > 0 {
		var cancel context.CancelFunc
		lctx, cancel = context.WithTimeout(ctx, v.promoted.Timeout)
		defer cancel()
	}
	h := v.mutex.NewHandle()
	if err := h.Acquire(lctx); err != nil {
		if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
			return nil // the promotion's timeout: Curator's acquire false
		}
		return errs.Errorf("%s: promoted lock: %w", v.what(), err)
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
		defer cancel()
		if err := h.Release(rctx); err != nil {
			v.client.Logger().Info("atomic value: the promoted lock's release", zap.String("path", v.promoted.Path), zap.Error(err))
		}
	}()
	policy := v.promoted.RetryPolicy
	if policy == nil {
		policy = retry.NewNTimes(0, 0)
	}
	return v.tries(ctx, r, mk, policy, stepPromoted, start, &r.Stats.PromotedLockTries)
}

// tries runs tryOnce until it succeeds or policy says no more (each try
// counted in *count), and tells each retry to the client's event hook.
func (v *DistributedAtomicValue) tries(ctx context.Context, r *AtomicValue[[]byte], mk makeValue, policy retry.Policy,
	step string, start time.Time, count *int) error {
	for n := 0; ; n++ {
		*count++
		conflict, err := v.tryOnce(ctx, r, mk)
		if err != nil || conflict == nil {
			r.Succeeded = err == nil
			return err
		}
		wait, ok := policy.AllowRetry(n, time.Since(start))
		if !ok {
			return nil
		}
		v.client.Emit(framework.Event{Kind: framework.Retrying, Op: step, Path: v.path, Retry: n + 1, Wait: wait, Err: conflict, Detail: RetryEvent{}})
		if err := retry.Sleep(ctx, wait); err != nil {
			return errs.Errorf("%s: %w", v.what(), err)
		}
	}
}

// tryOnce reads the value and writes the one make makes from it, at the
// version read, or creates the node if it is not there (Curator's
// tryOnce). It returns the conflict that kept it from succeeding (the
// value changed, or the node came or went meanwhile), nil if it
// succeeded, or an error.
func (v *DistributedAtomicValue) tryOnce(ctx context.Context, r *AtomicValue[[]byte], mk makeValue) (conflict, err error) {
	pre, stat, err := v.read(ctx)
	if err != nil {
		return nil, err
	}
	r.PreValue = pre
	value, err := mk(pre)
	if err != nil {
		return nil, err
	}
	value = nonNil(value)
	if stat == nil {
		_, err = v.client.Create(ctx, v.path, value, framework.CreatingParentContainersIfNeeded())
	} else {
		_, err = v.client.SetData(ctx, v.path, value, stat.Version)
	}
	switch {
	case err == nil:
		r.PostValue = bytes.Clone(value)
		return nil, nil
	case errors.Is(err, zk.ErrNodeExists), errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNoNode):
		return err, nil
	}
	return nil, errs.Errorf("%s: %w", v.what(), err)
}

// corrupt is the error of data that is no value of its kind.
func corrupt(path string, data []byte) error {
	hex := make([]string, len(data))
	for i, b := range data {
		hex[i] = fmt.Sprintf("0x%x", b)
	}
	return errs.Errorf("%w: data of node %q: [%s]", ErrCorruptValue, path, strings.Join(hex, ", "))
}

// nonNil returns value, or empty data for nil: framework's Create makes a
// node of nil data with the client's default data.
func nonNil(value []byte) []byte {
	if value == nil {
		return []byte{}
	}
	return value
}
