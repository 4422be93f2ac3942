package main

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/rawlock"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// This file holds the Go implementations under test: gocurator, the floor
// and the limit (internal/rawlock), each as sessions that make owners of
// locks.

// owner is one participant of a lock (a goroutine's handle on it).
type owner interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	// Token is a number of the holder's node that increases in queue order,
	// read without a round trip (the node's sequence number). Scenario 6
	// checks FIFO with it inside the timed hand-offs, so it must cost
	// nothing.
	Token() int64
}

// session is one ZooKeeper session of an implementation; a nil maker is
// a recipe the implementation does not have.
type session struct {
	close     func()
	mutex     func(path string) (func() owner, error)
	readWrite func(path string) (reader, writer func() owner, err error)
	semaphore func(path string, leases int) (func() owner, error)
	join      func(path string) (*candidate, error) // a candidate of the election at path
}

// goImpl is a Go implementation under test.
type goImpl struct {
	name string
	key  string // in lock paths
	// dial opens a session on servers, its connections dialled with dial
	// (nil: net.DialTimeout).
	dial func(ctx context.Context, servers string, dial zk.Dialer) (*session, error)
}

// connect opens a session of im on servers.
func (im goImpl) connect(ctx context.Context, servers string) (*session, error) {
	return im.dial(ctx, servers, nil)
}

var (
	implFloor = goImpl{nameFloor, "floor", connectRaw(rawlock.Exclusive)}
	implLimit = goImpl{nameLimit, "limit", connectRaw(rawlock.Limit)}
	implOurs  = goImpl{nameOurs, "gocurator", connectOurs}
)

// connectRaw connects sessions of internal/rawlock whose mutex is of kind
// mutex: the floor (Exclusive) with its read-write lock, semaphore and
// election, or the limit (Limit), which is a mutex only while nobody
// contends.
func connectRaw(mutex rawlock.Kind) func(context.Context, string, zk.Dialer) (*session, error) {
	return func(ctx context.Context, servers string, dial zk.Dialer) (*session, error) {
		c, err := newRawConn(ctx, servers, dial)
		if err != nil {
			return nil, err
		}
		maker := func(path, prefix string, kind rawlock.Kind, leases int) func() owner {
			return func() owner {
				return &rawOwner{rawlock.Lock{Conn: c.Conn, Dir: path, Prefix: prefix, Kind: kind, Leases: leases}}
			}
		}
		s := &session{close: c.close, mutex: func(path string) (func() owner, error) {
			return maker(path, "lock-", mutex, 0), nil
		}}
		if mutex == rawlock.Exclusive {
			s.readWrite = func(path string) (func() owner, func() owner, error) {
				return maker(path, "read-", rawlock.Reader, 0), maker(path, "write-", rawlock.Exclusive, 0), nil
			}
			s.semaphore = func(path string, leases int) (func() owner, error) {
				return maker(path, "lease-", rawlock.Leases, leases), nil
			}
			s.join = func(path string) (*candidate, error) {
				l := maker(path, "latch-", rawlock.Exclusive, 0)().(*rawOwner)
				return startCandidate(l.Acquire, l.Node, func() {
					if l.Node() != "" {
						_ = l.Lock.Release()
					}
				}), nil
			}
		}
		return s, nil
	}
}

// rawOwner is an internal/rawlock participant as an owner.
type rawOwner struct{ rawlock.Lock }

func (o *rawOwner) Release(context.Context) error { return o.Lock.Release() }
func (o *rawOwner) Token() int64                  { return rawlock.Seq(o.Node()) }

func connectOurs(ctx context.Context, servers string, dial zk.Dialer) (*session, error) {
	opts := []framework.Option{framework.WithSessionTimeout(sessionTimeout)}
	if dial != nil {
		opts = append(opts, framework.WithDialer(dial))
	}
	c, err := framework.New(servers, retry.NewExponentialBackoff(100*time.Millisecond, 5), opts...)
	if err != nil {
		return nil, err
	}
	if err := c.BlockUntilConnected(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return &session{
		close: func() { c.Close() },
		mutex: func(path string) (func() owner, error) {
			m, err := recipes.NewInterProcessMutex(c, path)
			return func() owner { return oursHandle{m.NewHandle()} }, err
		},
		readWrite: func(path string) (func() owner, func() owner, error) {
			rw, err := recipes.NewInterProcessReadWriteLock(c, path)
			return func() owner { return oursHandle{rw.NewHandle().ReadLock()} },
				func() owner { return oursHandle{rw.NewHandle().WriteLock()} }, err
		},
		semaphore: func(path string, leases int) (func() owner, error) {
			sem, err := recipes.NewInterProcessSemaphoreV2(c, path, leases)
			return func() owner { return &oursLease{sem: sem} }, err
		},
		join: func(path string) (*candidate, error) {
			l, err := recipes.NewLeaderLatch(c, path)
			if err == nil {
				err = l.Start()
			}
			if err != nil {
				return nil, err
			}
			return startCandidate(l.Await, l.OurPath, func() { _ = l.Close() }), nil
		},
	}, nil
}

// oursHandle is a gocurator lock handle as an owner.
type oursHandle struct{ *recipes.Handle }

// Token is the sequence number in the held node's name, as the floor's:
// gocurator's FencingToken (the czxid) costs a round trip on first use,
// which Curator and the floor do not pay, so the measured loops never ask
// for it.
func (h oursHandle) Token() int64 { return max(rawlock.Seq(h.LockPath()), 0) }

// oursLease holds at most one lease of a gocurator semaphore at a time.
type oursLease struct {
	sem   *recipes.InterProcessSemaphoreV2
	lease *recipes.Lease
}

func (o *oursLease) Acquire(ctx context.Context) error {
	l, err := o.sem.Acquire(ctx)
	o.lease = l
	return err
}

func (o *oursLease) Release(ctx context.Context) error {
	l := o.lease
	o.lease = nil
	return l.Close(ctx)
}

// Token is the held lease node's sequence number (see oursHandle.Token).
func (o *oursLease) Token() int64 { return max(rawlock.Seq(o.lease.Path()), 0) }

// candidate is one candidate of an election, waiting to lead on a
// goroutine of its own.
type candidate struct {
	led    chan struct{} // closed once it leads
	ledAt  time.Time     // when it learned that it leads; written before led closes
	node   func() string // its node's path, known once it leads
	cancel context.CancelFunc
	ended  chan struct{} // closed when the waiting goroutine has returned
	resign func()
}

// startCandidate starts waiting for await to return nil (leadership);
// resign leaves the election once the waiting has stopped.
func startCandidate(await func(context.Context) error, node func() string, resign func()) *candidate {
	ctx, cancel := context.WithCancel(context.Background())
	c := &candidate{led: make(chan struct{}), node: node, cancel: cancel, ended: make(chan struct{}), resign: resign}
	go func() {
		defer close(c.ended)
		if await(ctx) == nil {
			c.ledAt = time.Now()
			close(c.led)
		}
	}()
	return c
}

// leave stops waiting and leaves the election (a latch's Close, the
// floor's delete; after a session's end, what is left to close).
func (c *candidate) leave() {
	c.cancel()
	<-c.ended
	c.resign()
}
