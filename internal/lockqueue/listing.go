// Package lockqueue reads a Curator lock's tree from ZooKeeper and lays
// out its queue as every participant computes it: who holds, who waits
// behind whom, and what in the tree disturbs the order. It is what `zklock
// ls` prints, and what the demo shows while its workers queue. The tree
// format itself (names, order, hold rules) is internal/locktree's: this
// package only applies it to what it reads.
package lockqueue

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
)

// Recipes (layouts) List recognises.
const (
	RecipeMutex     = "mutex"
	RecipeLatch     = "leader-latch"
	RecipeReadWrite = "read-write"
	RecipeSemaphore = "semaphore"
	RecipeNone      = "none"   // no lock node among the children, or no children
	RecipeParent    = "parent" // no lock, but locks below it (see ListParent)
)

// Roles of a child in its queue.
const (
	RoleHolder    = "holder"    // holds the lock or a lease
	RoleWaiting   = "waiting"   // queued behind a holder
	RoleAcquiring = "acquiring" // a semaphore lease being counted; held or waiting depends on the lease limit
	RoleBlocking  = "blocking"  // a foreign child that lock nodes queue behind forever
	RoleForeign   = "foreign"   // a foreign child that blocks no one now
)

// Kinds of a child.
const (
	KindMutex        = "mutex"
	KindLatch        = "latch"
	KindRead         = "read"
	KindWrite        = "write"
	KindLease        = "lease"
	KindInternalLock = "internal lock"
	KindForeign      = "foreign"
)

// Listing is what List reports about one lock path (`zklock ls` prints it).
type Listing struct {
	// Path is the lock path, as given (without the namespace).
	Path string `json:"path"`
	// Exists is false when there is no node at Path: nobody has queued
	// since its container parent was reaped (or the path is wrong).
	Exists bool `json:"exists"`
	// Recipe is the layout found: mutex, leader-latch, read-write,
	// semaphore or none; parent for ListParent's listing.
	Recipe string `json:"recipe"`
	// Children counts Path's own children (a semaphore's locks and leases
	// nodes among them).
	Children int `json:"children"`
	// MaxLeases is the semaphore limit given with --max-leases, 0 if unknown.
	MaxLeases int `json:"max_leases,omitempty"`
	// Participants are the children, holders first, then waiters, in the
	// order every participant computes; empty, never nil.
	Participants []Participant `json:"participants"`
	// Warnings are the children (or the layout) that disturb the order.
	Warnings []Warning `json:"warnings,omitempty"`
	// Locks are, for a parent of locks (ListParent), the locks below
	// Path, each with its queue.
	Locks []*Listing `json:"locks,omitempty"`
	// MoreLocks is true when ListParent stopped looking before it had
	// seen everything below Path: there may be more locks than Locks.
	MoreLocks bool `json:"more_locks,omitempty"`
	// Listed are the nodes whose children the listing read, in the order
	// it read them: every level where a lock node, a lock path or a
	// semaphore's queue could appear and change what the listing says
	// (below a parent of locks, as deep as ListParent looks). A watch on
	// their children (and on Path's creation) misses no change of it.
	Listed []string `json:"-"`
}

// Participant is one child of a lock path (or of a semaphore's locks and
// leases nodes).
type Participant struct {
	// Position is the 1-based place in its queue as every participant sorts it.
	Position int `json:"position"`
	// Queue is "leases" or "locks" for a semaphore, empty otherwise.
	Queue string `json:"queue,omitempty"`
	// Role is holder, waiting, acquiring, blocking or foreign.
	Role string `json:"role"`
	// Kind is mutex, latch, read, write, lease, internal lock or foreign.
	Kind string `json:"kind"`
	// Node is the child's name.
	Node string `json:"node"`
	// Path is the child's full path (without the namespace): what revoke takes.
	Path string `json:"path"`
	// Session is the ephemeralOwner in hex, "" for a node that is not ephemeral.
	Session string `json:"session"`
	// Data is the node's data: as text when it is printable UTF-8, else
	// "0x" and hex. Curator writes the holder's IP address; a revocable
	// lock's node is empty.
	Data string `json:"data"`
	// Created is the node's ctime (the server's clock).
	Created time.Time `json:"created"`
	// AgeMillis is the time since Created, by the local clock.
	AgeMillis int64 `json:"age_ms"`
	// Token is the node's czxid: the fencing token a holder of it sees.
	Token int64 `json:"token"`
	// Notes say more about the node (a downgrade read node, a revocation request).
	Notes []string `json:"notes,omitempty"`

	owner int64
}

// Warning is a child (or the whole path) that disturbs the queue.
type Warning struct {
	// Node is the child's path, empty for a warning about the whole lock path.
	Node string `json:"node,omitempty"`
	// Message says what is wrong and what it does to the queue.
	Message string `json:"message"`
}

// Options say how List reads a lock path.
type Options struct {
	// Recipe forces a layout (RecipeMutex, RecipeReadWrite or
	// RecipeSemaphore); empty detects it from the children.
	Recipe string
	// MaxLeases is the semaphore's lease limit, 0 if unknown; with it a
	// lease being counted shows as held or waiting.
	MaxLeases int
}

// List reads the lock at path and computes its queue as every
// participant does. A path with no node has no participants: lock paths are
// containers, which the server removes once they are empty.
func List(ctx context.Context, client *framework.Client, path string, o Options) (*Listing, error) {
	ok, _, err := client.Exists(ctx, path)
	if err != nil {
		return nil, err
	}
	l := &Listing{Path: path, Exists: ok, Recipe: o.Recipe, MaxLeases: o.MaxLeases, Participants: []Participant{}}
	if !ok {
		l.Recipe = RecipeNone
		return l, nil
	}
	names, err := children(ctx, client, path, &l.Listed)
	if err != nil {
		return nil, err
	}
	l.Children = len(names)
	if l.Recipe == "" {
		if l.Recipe, err = recipeAt(ctx, client, path, names, &l.Listed); err != nil {
			return nil, err
		}
	}
	switch l.Recipe {
	case RecipeSemaphore:
		err = l.semaphore(ctx, client, names)
	case RecipeReadWrite:
		err = l.readWrite(ctx, client, names)
	case RecipeLatch:
		err = l.mutex(ctx, client, path, names, "", KindLatch)
	case RecipeMutex:
		err = l.mutex(ctx, client, path, names, "", KindMutex)
	}
	if err != nil {
		return nil, err
	}
	if o.MaxLeases > 0 && l.Recipe != RecipeSemaphore {
		l.warnf("", "--max-leases applies to semaphores; %s is a %s", path, l.Recipe)
	}
	return l, nil
}

// children lists path, and notes it in *listed (unless listed is nil) if
// it is there; a path that is gone has no children.
func children(ctx context.Context, client *framework.Client, path string, listed *[]string) ([]string, error) {
	names, _, err := client.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err == nil && listed != nil {
		*listed = append(*listed, path)
	}
	return names, err
}

// recipeAt returns the layout of path, whose children are names: a
// semaphore only if its locks or leases child holds the semaphore's nodes
// (a namespace root's empty "locks" container is no semaphore), else as
// detect says. The locks and leases nodes it lists are noted in *listed
// (children).
func recipeAt(ctx context.Context, client *framework.Client, path string, names []string, listed *[]string) (string, error) {
	semaphore := false
	for _, q := range names {
		if semaphore || (q != locktree.SemaphoreLocks && q != locktree.SemaphoreLeases) {
			continue
		}
		kids, err := children(ctx, client, framework.JoinPath(path, q), listed)
		if err != nil {
			return "", err
		}
		for _, k := range kids {
			if (q == locktree.SemaphoreLeases && locktree.IsLease(k)) || (q == locktree.SemaphoreLocks && locktree.IsLock(k)) {
				semaphore = true
			}
		}
	}
	return detect(names, semaphore), nil
}

// detect returns the layout of a lock path with the children names;
// semaphore says that its locks or leases child holds the semaphore's
// nodes. Mutex nodes win over read-write and latch nodes, read-write nodes
// over latch nodes; with no lock node at all it is RecipeNone.
func detect(names []string, semaphore bool) string {
	if semaphore {
		return RecipeSemaphore
	}
	var rw, mutex, latch bool
	for _, n := range names {
		switch {
		case locktree.IsRead(n) || locktree.IsWrite(n):
			rw = true
		case locktree.IsLock(n):
			mutex = true
		case locktree.IsLatch(n):
			latch = true
		}
	}
	switch {
	case mutex:
		return RecipeMutex
	case rw:
		return RecipeReadWrite
	case latch:
		return RecipeLatch
	}
	return RecipeNone
}

// NodeKind returns the kind of a child named name, by the lock-name marker
// it carries: KindRead, KindWrite, KindLease, KindMutex (also a semaphore's
// internal lock node), KindLatch, or KindForeign.
func NodeKind(name string) string {
	switch {
	case locktree.IsRead(name):
		return KindRead
	case locktree.IsWrite(name):
		return KindWrite
	case locktree.IsLease(name):
		return KindLease
	case locktree.IsLock(name):
		return KindMutex
	case locktree.IsLatch(name):
		return KindLatch
	}
	return KindForeign
}

// HasLock reports whether List found a lock at l.Path: a child (or, for a
// semaphore, a lease or internal lock node) that carries a lock-name
// marker, not only foreign children.
func (l *Listing) HasLock() bool {
	for _, p := range l.Participants {
		if p.Kind != KindForeign {
			return true
		}
	}
	return false
}

// stat reads the children's data and stats; children that are gone by then
// are left out.
func stat(ctx context.Context, client *framework.Client, parent string, names []string, queue string) ([]Participant, error) {
	var ps []Participant
	for _, n := range names {
		p := framework.JoinPath(parent, n)
		data, st, err := client.GetData(ctx, p)
		if errors.Is(err, zk.ErrNoNode) {
			continue // released while we looked
		}
		if err != nil {
			return nil, err
		}
		part := Participant{Queue: queue, Node: n, Path: p, Data: ShowData(data), Token: st.Czxid, owner: st.EphemeralOwner}
		if st.EphemeralOwner != 0 {
			part.Session = fmt.Sprintf("0x%x", st.EphemeralOwner)
		}
		part.Created = time.UnixMilli(st.Ctime)
		part.AgeMillis = max(0, time.Since(part.Created).Milliseconds())
		if string(data) == locktree.RevokeMessage {
			part.Notes = append(part.Notes, "revocation requested (__REVOKE__)")
		}
		ps = append(ps, part)
	}
	return ps, nil
}

// ShowData renders node data for people: printable text as is, else "0x"
// and hex.
func ShowData(b []byte) string {
	if !utf8.Valid(b) {
		return "0x" + hex.EncodeToString(b)
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) {
			return "0x" + hex.EncodeToString(b)
		}
	}
	return string(b)
}

// sortParticipants puts ps in the lock's order (locktree.Sort by key) and
// numbers them.
func sortParticipants(ps []Participant, key func(name string) string) {
	byName := make(map[string]Participant, len(ps))
	for _, p := range ps {
		byName[p.Node] = p
	}
	for i, n := range locktree.Sort(nodeNames(ps), key) {
		ps[i] = byName[n]
		ps[i].Position = i + 1
	}
}

// nodeNames returns the node names of ps, in their order.
func nodeNames(ps []Participant) []string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Node
	}
	return names
}
