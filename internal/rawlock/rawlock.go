// Package rawlock is the textbook ZooKeeper lock on raw go-zookeeper, with
// nothing added: the floor that the recipes' benchmarks and
// cmd/gocurator-bench measure gocurator against, in one implementation.
//
// Uncontended, a mutex of this package is create + get children + delete:
// the least any correct ZooKeeper lock does. Kind Limit drops the listing:
// create + delete, two writes, the least any ZooKeeper lock can do, which
// is a lock only while nobody contends. There is no protection, no
// container parent, no session check and no fencing beyond the sequence
// number.
package rawlock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/errs"
)

// Kind is what a participant waits for.
type Kind int

const (
	// Exclusive holds at index 0 and watches its predecessor: a mutex, a
	// writer, an election's candidate.
	Exclusive Kind = iota
	// Reader holds when no writer ("write-" node) precedes it and watches
	// the nearest writer before it.
	Reader
	// Leases holds at an index below Lock.Leases and watches the node
	// Leases places ahead: Curator's InterProcessSemaphore (v1) algorithm.
	Leases
	// Limit holds as soon as its node exists, with no listing: the
	// uncontended cost's lower limit, not a lock under contention.
	Limit
)

// Lock is one participant of a lock: it holds one ephemeral sequential
// node under Dir while it holds. It is not safe for concurrent use.
type Lock struct {
	Conn   *zk.Conn
	Dir    string // the lock's path, parent of the participants' nodes
	Prefix string // the participant's node name before its sequence number, e.g. "lock-"
	Kind   Kind
	Leases int // for Kind Leases

	node string
}

// Acquire creates the participant's node (and Dir, if missing) and waits
// until it holds, or until ctx ends; on failure it deletes its node.
func (l *Lock) Acquire(ctx context.Context) error {
	path, err := l.Conn.Create(l.Dir+"/"+l.Prefix, nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	if errors.Is(err, zk.ErrNoNode) {
		if err := EnsurePath(l.Conn, l.Dir); err != nil {
			return err
		}
		path, err = l.Conn.Create(l.Dir+"/"+l.Prefix, nil, zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll))
	}
	if err != nil {
		return err
	}
	for l.Kind != Limit {
		watch, err := l.predecessor(path[len(l.Dir)+1:])
		if err == nil && watch == "" {
			break
		}
		var ch <-chan zk.Event
		if err == nil {
			_, _, ch, err = l.Conn.GetW(l.Dir + "/" + watch)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
		}
		if err == nil {
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				err = ctx.Err()
			}
		}
		_ = l.Conn.Delete(path, -1)
		return err
	}
	l.node = path
	return nil
}

// predecessor lists Dir and returns the node that the participant named
// name must wait for, or "" when it holds.
func (l *Lock) predecessor(name string) (string, error) {
	kids, _, err := l.Conn.Children(l.Dir)
	if err != nil {
		return "", err
	}
	slices.SortFunc(kids, func(a, b string) int { return strings.Compare(a[len(a)-10:], b[len(b)-10:]) })
	i := slices.Index(kids, name)
	switch {
	case i < 0:
		return "", errs.Errorf("%s/%s: our node vanished", l.Dir, name)
	case l.Kind == Exclusive && i > 0:
		return kids[i-1], nil
	case l.Kind == Leases && i >= l.Leases:
		return kids[i-l.Leases], nil
	case l.Kind == Reader:
		for j := i - 1; j >= 0; j-- {
			if strings.HasPrefix(kids[j], "write-") {
				return kids[j], nil
			}
		}
	}
	return "", nil
}

// Release deletes the held node.
func (l *Lock) Release() error {
	err := l.Conn.Delete(l.node, -1)
	l.node = ""
	return err
}

// Node is the path of the held node, "" when not holding.
func (l *Lock) Node() string { return l.node }

// Seq is the sequence number at the end of a sequential node's name or
// path, -1 if it has none.
func Seq(name string) int64 {
	if len(name) < 10 {
		return -1
	}
	n, err := strconv.ParseInt(name[len(name)-10:], 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// EnsurePath creates path and its ancestors as persistent nodes.
func EnsurePath(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			_, err := conn.Create(path[:i], nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll))
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return errs.Errorf("create %s: %w", path[:i], err)
			}
		}
	}
	return nil
}
