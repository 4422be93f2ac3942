package recipes

import (
	"context"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// InterProcessReadWriteLock is a lock across processes held by many readers
// or one writer. It is Curator's InterProcessReadWriteLock, in Curator's
// exact tree, so Go and Java participants queue for the same lock. Each owner
// takes a ReadWriteHandle, whose ReadLock and WriteLock are ordinary handles
// (reentrant per handle, as Curator's are per thread).
//
// Tree: readers create path/_c_<uuid>-__READ__<seq> and writers
// path/_c_<uuid>-__WRIT__<seq>, EPHEMERAL_SEQUENTIAL under container
// parents, numbered by one sequence. The queue is ordered by the text after
// the last __READ__ or __WRIT__ marker. A writer holds the lock when its node
// is first and waits on the node just ahead of it; a reader holds it when no
// writer's node is ahead of it, so readers queued behind a waiting writer
// wait for it (no writer starvation). A reader waits on the nearest writer
// ahead of it, not on the first as Curator's does: the queue and every
// grant are the same, only fewer readers wake when a writer leaves.
//
// Downgrade: the owner holding the write lock may take the read lock. It is
// granted at once, with Curator 5.5's node (CURATOR-621): a non-sequential
// EPHEMERAL path/_c_<uuid>-__READ__<the write node's sequence>, which holds
// the write node's place in the queue, so that a writer queued behind cannot
// get in when the write lock is released while the read lock is still held.
//
// Upgrade: the owner holding the read lock (and not the write lock) who asks
// for the write lock gets an error wrapping ErrUpgrade at once, and no node
// is created. (Curator queues the write node behind the owner's own read
// node: a deadlock, or a timeout.)
type InterProcessReadWriteLock struct {
	read, write *InterProcessMutex
}

// NewInterProcessReadWriteLock returns the read-write lock at path.
// WithLockData sets the data of both halves' nodes, as Curator's
// (client, basePath, lockData) constructor. A bad path (the root included)
// is an error that unwraps to zk.ErrInvalidPath; a nil client wraps
// framework.ErrInvalidArgument, a closed one framework.ErrClosed.
func NewInterProcessReadWriteLock(client *framework.Client, path string, opts ...LockOption) (*InterProcessReadWriteLock, error) {
	write, err := newMutex(client, path, locktree.WriteName, recipeWrite, newWriteDriver(), opts)
	if err != nil {
		return nil, err
	}
	read, err := newMutex(client, path, locktree.ReadName, recipeRead, readDriver{}, opts)
	if err != nil {
		return nil, err
	}
	return &InterProcessReadWriteLock{read: read, write: write}, nil
}

// usable reports whether rw was made by NewInterProcessReadWriteLock.
func (rw *InterProcessReadWriteLock) usable() bool { return rw != nil && rw.write.usable() }

// Path returns the lock's base path ("" for a nil or zero value).
func (rw *InterProcessReadWriteLock) Path() string {
	if !rw.usable() {
		return ""
	}
	return rw.write.li.Base()
}

// NewHandle returns a new owner of the lock, with its read and write halves.
// Use one per goroutine (or per logical owner). A nil or zero lock gives an
// owner whose halves fail every call with framework.ErrInvalidArgument.
func (rw *InterProcessReadWriteLock) NewHandle() *ReadWriteHandle {
	if !rw.usable() {
		return &ReadWriteHandle{read: &Handle{}, write: &Handle{}}
	}
	o := &ReadWriteHandle{}
	o.read = &Handle{m: rw.read, hooks: rwHalf{o, false}}
	o.write = &Handle{m: rw.write, hooks: rwHalf{o, true}}
	return o
}

// ParticipantNodes returns the full paths of every child of the lock path,
// readers, writers and foreign children alike, in queue order.
func (rw *InterProcessReadWriteLock) ParticipantNodes(ctx context.Context) ([]string, error) {
	if !rw.usable() {
		return nil, errZero("InterProcessReadWriteLock")
	}
	return rw.write.ParticipantNodes(ctx)
}

// ReadWriteHandle is one owner of an InterProcessReadWriteLock: what a Java
// thread is to Curator's. Get one from NewHandle (the halves of a zero
// ReadWriteHandle are zero Handles, whose calls fail with framework.ErrInvalidArgument).
// Each half tells the life of its acquisitions as a Handle does (Done, Err,
// IsHeld; see Handle).
//
// "The owner holds the write lock" means: its WriteLock handle has been
// granted and not released as many times as it was acquired (IsHeld), at the
// moment the read lock is asked for. Holds and releases of the two halves
// may come in any order:
//   - write, then read: a downgrade (granted at once, see
//     InterProcessReadWriteLock); releasing the write lock then leaves the
//     read lock held in the write node's place;
//   - write, read, write again: the second write only counts up (reentrancy,
//     not an upgrade);
//   - read, then write (with no write held): ErrUpgrade at once, also after
//     a downgrade whose write lock has been released.
//
// The halves may be used from several goroutines, but each request is judged
// by what the owner holds when it is made: a read asked for while the same
// owner's write is still waiting queues as any reader would (behind that
// write, until it is released), and a write asked for while the owner's
// read is still waiting queues behind it.
type ReadWriteHandle struct {
	read, write *Handle
	// conv orders a downgrade against the release of the write lock: the
	// write node is not deleted while a downgrade read node that takes its
	// place is being created, so the read node never appears after the
	// write node is gone (and a writer behind it may hold).
	conv turn
}

// ReadLock returns the owner's read half. Acquire, TryAcquire, Release,
// Done, Err, FencingToken, LockPath, IsHeld and MakeRevocable work as for
// the mutex. Of a nil or zero ReadWriteHandle it is a zero Handle, whose
// calls fail with framework.ErrInvalidArgument.
func (o *ReadWriteHandle) ReadLock() *Handle {
	if o == nil || o.read == nil {
		return &Handle{}
	}
	return o.read
}

// WriteLock returns the owner's write half. Acquire, TryAcquire, Release,
// Done, Err, FencingToken, LockPath, IsHeld and MakeRevocable work as for
// the mutex; asked for while the owner holds only the read lock, Acquire
// and TryAcquire return an error wrapping ErrUpgrade. Of a nil or zero
// ReadWriteHandle it is a zero Handle, whose calls fail with
// framework.ErrInvalidArgument.
func (o *ReadWriteHandle) WriteLock() *Handle {
	if o == nil || o.write == nil {
		return &Handle{}
	}
	return o.write
}

// rwHalf steers the acquisitions of one half of an owner.
type rwHalf struct {
	o     *ReadWriteHandle
	write bool
}

func (r rwHalf) acquire(ctx context.Context, a acquire.Attempt) (*acquire.Grant, error) {
	o, li := r.o, &r.o.write.m.li
	if r.write {
		if o.read.holding() {
			return nil, ErrUpgrade
		}
		return li.Acquire(ctx, a)
	}
	if err := o.conv.take(ctx); err != nil {
		return nil, err
	}
	w := o.write.current()
	if w == nil {
		o.conv.give()
		return li.Acquire(ctx, a)
	}
	defer o.conv.give()
	// The read lock takes the write lock's place in the queue, and its
	// fencing token: its own node is created after writers that queued
	// behind the write node, whose tokens are lower than its czxid.
	token, err := w.Token(ctx)
	if err != nil {
		return nil, errs.Errorf("the write lock it would downgrade: %w", err)
	}
	a.Path = framework.JoinPath(li.Base(), locktree.ReadName+locktree.ReadWriteSortKey(w.Name()))
	a.Mode = framework.Ephemeral
	a.Driver = readDriver{ownWrite: w.Name()}
	a.Token = token
	a.Still = func() error {
		// The write lock can no longer be trusted: it may be gone, and the
		// read node must not take its place.
		if err := w.Err(); err != nil {
			return errs.Errorf("the write lock it would downgrade: %w", err)
		}
		return nil
	}
	return li.Acquire(ctx, a)
}

// owner is the read-write owner: its two halves may both be in one
// multi-lock (a downgrade).
func (r rwHalf) owner(*Handle) any { return r.o }

// release deletes the node of a grant its owner released. The write node
// waits for a downgrade under way (conv); if ctx ends first, its delete
// goes on in the background once the downgrade is done.
func (r rwHalf) release(ctx context.Context, g *acquire.Grant) error {
	if !r.write {
		return g.Delete(ctx)
	}
	if r.o.conv.take(ctx) == nil {
		defer r.o.conv.give()
		return g.Delete(ctx)
	}
	go func() {
		_ = r.o.conv.take(context.Background())
		defer r.o.conv.give()
		dctx, cancel := acquire.CleanupContext(ctx)
		defer cancel()
		_ = g.Delete(dctx) // guaranteed
	}()
	return errs.Errorf("a downgrade is under way; the delete goes on in the background: %w", ctx.Err())
}

// readDriver is the read half's predicate over the read-write lock's queue
// (locktree.Read): held when no writer's node sorts before ours, or beside
// its own holding write node (a downgrade); otherwise wait on the NEAREST
// writer ahead of us. Every other child, foreign ones included, counts as a
// reader. For a downgrade, ownWrite is the owner's write node: once it is
// gone, the downgrade has lost what it would take the place of.
type readDriver struct {
	ownWrite string
}

func (readDriver) Sort(children []string) []string {
	return locktree.Sort(children, locktree.ReadWriteSortKey)
}

func (readDriver) Order() string { return readWriteOrder }

func (d readDriver) Check(sorted []string, ourName string) (bool, string, error) {
	if d.ownWrite != "" && locktree.IndexOf(sorted, d.ownWrite) < 0 {
		return false, "", errs.Errorf("%w: write lock node %s is gone", ErrLockLost, d.ownWrite)
	}
	held, watch, found := locktree.Read(sorted, ourName)
	if !found {
		return false, "", acquire.ErrVanished
	}
	return held, watch, nil
}

// HandsOff: a reader whose only writer ahead is the one it watches holds
// when that writer's node is deleted (see driver.go): no sequential node
// can appear ahead, and a downgrade node, the only non-sequential one, is a
// reader's.
func (d readDriver) HandsOff(sorted []string, ourName, watch string) bool {
	if d.ownWrite != "" || !locktree.IsWrite(watch) {
		return false
	}
	writers := 0
	for _, c := range sorted {
		if c == ourName {
			return writers == 1
		}
		if locktree.IsWrite(c) {
			writers++
		}
	}
	return false
}

// Lookahead: none for readers. A reader waits on a writer, and the node
// ahead of that writer does not tell it anything the writer's deletion will
// not.
func (readDriver) Lookahead([]string, string, string) string { return "" }
