package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

// errUnsupported marks a scenario an implementation cannot run.
var errUnsupported = errors.New("not supported")

// owner is one participant of a lock (a goroutine's handle on it).
type owner interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	// Token is a number of the holder's node that increases in queue order,
	// read without a round trip (the node's sequence number), or 0 if the
	// implementation has none. Scenario 6 checks FIFO with it inside the
	// timed hand-offs, so it must cost nothing.
	Token() int64
}

// session is one ZooKeeper session of an implementation.
type session interface {
	// Mutex returns a maker of owners of the mutex at path.
	Mutex(path string) (func() owner, error)
	// ReadWrite returns makers of readers and writers of the read-write
	// lock at path.
	ReadWrite(path string) (reader, writer func() owner, err error)
	// Semaphore returns a maker of lease holders of the semaphore at path.
	Semaphore(path string, leases int) (func() owner, error)
	Close()
}

// goImpl is a Go implementation under test.
type goImpl struct {
	key     string // used in lock paths and profiles
	connect func(ctx context.Context, servers string) (session, error)
}

const (
	nameOurs    = "gocurator"
	nameCurator = "Curator 5.4 (Java)"
	nameFloor   = "floor (raw go-zk)"
	nameZKLock  = "go-zk zk.Lock"
)

var (
	implFloor  = goImpl{key: "floor", connect: connectFloor}
	implOurs   = goImpl{key: "gocurator", connect: connectOurs}
	implZKLock = goImpl{key: "zklock", connect: connectZKLock}
)

func (g goImpl) name() string {
	switch g.key {
	case "floor":
		return nameFloor
	case "gocurator":
		return nameOurs
	default:
		return nameZKLock
	}
}

// ---- floor: the least any ZooKeeper lock must do, on raw go-zookeeper ----

type floorSession struct{ c *rawConn }

func connectFloor(ctx context.Context, servers string) (session, error) {
	c, err := connectRaw(ctx, servers)
	if err != nil {
		return nil, err
	}
	return floorSession{c}, nil
}

func (s floorSession) Close() { s.c.close() }

func (s floorSession) Mutex(path string) (func() owner, error) {
	return func() owner { return &rawLock{conn: s.c.Conn, base: path, prefix: "lock-", kind: rawExclusive} }, nil
}

func (s floorSession) ReadWrite(path string) (func() owner, func() owner, error) {
	return func() owner { return &rawLock{conn: s.c.Conn, base: path, prefix: "read-", kind: rawReader} },
		func() owner { return &rawLock{conn: s.c.Conn, base: path, prefix: "write-", kind: rawExclusive} }, nil
}

func (s floorSession) Semaphore(path string, leases int) (func() owner, error) {
	return func() owner {
		return &rawLock{conn: s.c.Conn, base: path, prefix: "lease-", kind: rawLeases, leases: leases}
	}, nil
}

type rawKind int

const (
	rawExclusive rawKind = iota // a mutex or a writer: hold at index 0, watch the predecessor
	rawReader                   // hold when no writer precedes; watch the nearest preceding writer
	rawLeases                   // hold at index < leases; watch the node leases places ahead
)

// rawLock is the textbook ZooKeeper lock recipe with nothing added: an
// ephemeral sequential node, a child list, a data watch on the one node to
// wait for, and a delete. Uncontended, it is create + get children + delete:
// the floor of every ZooKeeper lock. No protection, no container parents,
// no session checks, no fencing beyond the sequence number.
type rawLock struct {
	conn   *zk.Conn
	base   string
	prefix string
	kind   rawKind
	leases int
	node   string
	seq    int64
}

func rawSeq(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

func (l *rawLock) Acquire(ctx context.Context) error {
	path, err := l.conn.Create(l.base+"/"+l.prefix, nil, zk.FlagEphemeralSequential, openACL)
	if errors.Is(err, zk.ErrNoNode) {
		if err := ensurePath(l.conn, l.base); err != nil {
			return err
		}
		path, err = l.conn.Create(l.base+"/"+l.prefix, nil, zk.FlagEphemeralSequential, openACL)
	}
	if err != nil {
		return err
	}
	name := path[len(l.base)+1:]
	for {
		kids, _, err := l.conn.Children(l.base)
		if err != nil {
			_ = l.conn.Delete(path, -1)
			return err
		}
		slices.SortFunc(kids, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
		i := slices.Index(kids, name)
		if i < 0 {
			return fmt.Errorf("%s: our node vanished", path)
		}
		watch := ""
		switch l.kind {
		case rawExclusive:
			if i > 0 {
				watch = kids[i-1]
			}
		case rawReader:
			for j := i - 1; j >= 0; j-- {
				if strings.HasPrefix(kids[j], "write-") {
					watch = kids[j]
					break
				}
			}
		case rawLeases:
			if i >= l.leases {
				watch = kids[i-l.leases]
			}
		}
		if watch == "" {
			l.node, l.seq = path, rawSeq(name)
			return nil
		}
		_, _, ch, err := l.conn.GetW(l.base + "/" + watch)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			_ = l.conn.Delete(path, -1)
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			_ = l.conn.Delete(path, -1)
			return ctx.Err()
		}
	}
}

func (l *rawLock) Release(context.Context) error {
	err := l.conn.Delete(l.node, -1)
	l.node = ""
	return err
}

func (l *rawLock) Token() int64 { return l.seq }

// ---- gocurator ----

type oursSession struct{ c *framework.Client }

func connectOurs(ctx context.Context, servers string) (session, error) {
	c, err := framework.New(servers, retry.NewExponentialBackoff(100*time.Millisecond, 5),
		framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, err
	}
	if err := c.BlockUntilConnected(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return oursSession{c}, nil
}

func (s oursSession) Close() { s.c.Close() }

func (s oursSession) Mutex(path string) (func() owner, error) {
	m, err := recipes.NewInterProcessMutex(s.c, path)
	if err != nil {
		return nil, err
	}
	return func() owner { return oursHandle{m.NewHandle()} }, nil
}

type oursHandle struct{ *recipes.Handle }

// Token is the sequence number in the held node's name, as the floor's:
// gocurator's FencingToken (the czxid) costs a round trip on first use,
// which Curator and the floor do not pay, so the measured loops never ask
// for it.
func (h oursHandle) Token() int64 {
	if p := h.LockPath(); p != "" {
		return rawSeq(p)
	}
	return 0
}

// ---- go-zookeeper's own zk.Lock ----

type zkLockSession struct{ c *rawConn }

func connectZKLock(ctx context.Context, servers string) (session, error) {
	c, err := connectRaw(ctx, servers)
	if err != nil {
		return nil, err
	}
	return zkLockSession{c}, nil
}

func (s zkLockSession) Close() { s.c.close() }

func (s zkLockSession) Mutex(path string) (func() owner, error) {
	return func() owner { return zkLockOwner{zk.NewLock(s.c.Conn, path, openACL)} }, nil
}

func (s zkLockSession) ReadWrite(string) (func() owner, func() owner, error) {
	return nil, nil, fmt.Errorf("%w: go-zookeeper has no read-write lock", errUnsupported)
}

func (s zkLockSession) Semaphore(string, int) (func() owner, error) {
	return nil, fmt.Errorf("%w: go-zookeeper has no semaphore", errUnsupported)
}

type zkLockOwner struct{ l *zk.Lock }

func (o zkLockOwner) Acquire(context.Context) error { return o.l.Lock() }
func (o zkLockOwner) Release(context.Context) error { return o.l.Unlock() }
func (o zkLockOwner) Token() int64                  { return 0 }
