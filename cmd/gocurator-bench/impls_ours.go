package main

import (
	"context"

	"github.com/gocurator/curator/recipes"
)

// gocurator's read-write lock and semaphore, as owners.

func (s oursSession) ReadWrite(path string) (func() owner, func() owner, error) {
	rw, err := recipes.NewInterProcessReadWriteLock(s.c, path)
	if err != nil {
		return nil, nil, err
	}
	return func() owner { return oursHandle{rw.NewHandle().ReadLock()} },
		func() owner { return oursHandle{rw.NewHandle().WriteLock()} }, nil
}

func (s oursSession) Semaphore(path string, leases int) (func() owner, error) {
	sem, err := recipes.NewInterProcessSemaphoreV2(s.c, path, leases)
	if err != nil {
		return nil, err
	}
	return func() owner { return &oursLease{sem: sem} }, nil
}

// oursLease holds at most one lease of a semaphore at a time.
type oursLease struct {
	sem   *recipes.InterProcessSemaphoreV2
	lease *recipes.Lease
}

func (o *oursLease) Acquire(ctx context.Context) error {
	l, err := o.sem.Acquire(ctx)
	if err != nil {
		return err
	}
	o.lease = l
	return nil
}

func (o *oursLease) Release(ctx context.Context) error {
	l := o.lease
	o.lease = nil
	return l.Close(ctx)
}

// Token is the held lease node's sequence number (see oursHandle.Token).
func (o *oursLease) Token() int64 {
	if o.lease == nil {
		return 0
	}
	return rawSeq(o.lease.Path())
}
