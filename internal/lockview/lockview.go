// Package lockview reads a Curator lock's tree and computes its queue as
// every participant does: who holds, who waits behind whom, and what in the
// tree disturbs the order. It is what `zklock ls` prints, and what the demo
// shows while its workers queue.
package lockview

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
)

// Curator's names, from the one home of the tree format.
const (
	markerLock  = locktree.MutexName
	markerRead  = locktree.ReadName
	markerWrite = locktree.WriteName
	markerLease = locktree.LeaseName
	markerLatch = locktree.LatchName
	semLocks    = locktree.SemaphoreLocks
	semLeases   = locktree.SemaphoreLeases
)

// Recipes (layouts) List recognises.
const (
	RecipeMutex     = "mutex"
	RecipeLatch     = "leader-latch"
	RecipeReadWrite = "read-write"
	RecipeSemaphore = "semaphore"
	RecipeNone      = "none"   // no children at all
	RecipeParent    = "parent" // no lock, but locks below it (see Find)
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

// goZKProtected matches go-zookeeper's protected prefix: "_c_" + 32 hex
// digits (a GUID without dashes) + "-". Curator's has a 36-character UUID.
var goZKProtected = regexp.MustCompile(`^_c_[0-9a-f]{32}-`)

// Listing is what List reports about one lock path (`zklock ls` prints it).
type Listing struct {
	// Path is the lock path, as given (without the namespace).
	Path string `json:"path"`
	// Exists is false when there is no node at Path: nobody has queued
	// since its container parent was reaped (or the path is wrong).
	Exists bool `json:"exists"`
	// Recipe is the layout found: mutex, read-write, semaphore or none.
	Recipe string `json:"recipe"`
	// MaxLeases is the semaphore limit given with --max-leases, 0 if unknown.
	MaxLeases int `json:"max_leases,omitempty"`
	// Participants are the children, holders first, then waiters, in the
	// order every participant computes.
	Participants []Participant `json:"participants"`
	// Warnings are the children (or the layout) that disturb the order.
	Warnings []Warning `json:"warnings,omitempty"`
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
	// Kind is mutex, read, write, lease, internal lock or foreign.
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

	sortKey string
	owner   int64
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
	l := &Listing{Path: path, Exists: ok, Recipe: o.Recipe, MaxLeases: o.MaxLeases}
	if !ok {
		l.Recipe = RecipeNone
		return l, nil
	}
	names, err := children(ctx, client, path)
	if err != nil {
		return nil, err
	}
	if l.Recipe == "" {
		l.Recipe = detectRecipe(names)
	}
	switch l.Recipe {
	case RecipeSemaphore:
		err = l.semaphore(ctx, client, names)
	case RecipeReadWrite:
		err = l.readWrite(ctx, client, names)
	case RecipeLatch:
		err = l.mutex(ctx, client, path, names, "", KindLatch)
	case RecipeNone:
	default:
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

// children lists path; a path that is gone has no children.
func children(ctx context.Context, client *framework.Client, path string) ([]string, error) {
	names, _, err := client.Children(ctx, path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	return names, err
}

// detectRecipe guesses the layout from a lock path's children.
func detectRecipe(names []string) string {
	if len(names) == 0 {
		return RecipeNone
	}
	var rw, mutex, latch bool
	for _, n := range names {
		switch {
		case n == semLocks || n == semLeases:
			return RecipeSemaphore
		case strings.Contains(n, markerRead) || strings.Contains(n, markerWrite):
			rw = true
		case strings.Contains(n, markerLock):
			mutex = true
		case strings.Contains(n, markerLatch):
			latch = true
		}
	}
	switch {
	case rw && !mutex:
		return RecipeReadWrite
	case latch && !mutex:
		return RecipeLatch
	}
	return RecipeMutex
}

// NodeKind returns the kind of a child named name, by the lock-name marker
// it carries: KindRead, KindWrite, KindMutex (also a semaphore's internal
// lock node), KindLease, or KindForeign.
func NodeKind(name string) string {
	switch {
	case strings.Contains(name, markerRead):
		return KindRead
	case strings.Contains(name, markerWrite):
		return KindWrite
	case strings.Contains(name, markerLease):
		return KindLease
	case strings.Contains(name, markerLock):
		return KindMutex
	case strings.Contains(name, markerLatch):
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

// findBudget bounds the listings one Find makes.
const findBudget = 256

// Find returns the lock paths below path, nearest first and in name order
// within a level: nodes at most depth levels below path that IsLock would
// call locks, at most max of them. It does not look below a lock. more is
// true when it stopped (at max, or after findBudget listings) with nodes
// left to look at.
func Find(ctx context.Context, client *framework.Client, path string, depth, max int) (locks []string, more bool, err error) {
	type node struct {
		path  string
		depth int
	}
	queue := []node{{path, 0}}
	for listed := 0; len(queue) > 0; listed++ {
		if len(locks) >= max || listed >= findBudget {
			return locks, true, nil
		}
		n := queue[0]
		queue = queue[1:]
		names, err := children(ctx, client, n.path)
		if err != nil {
			return nil, false, fmt.Errorf("looking for locks below %s: %w", path, err)
		}
		if n.depth > 0 {
			lock, err := isLock(ctx, client, n.path, names)
			if err != nil {
				return nil, false, fmt.Errorf("looking for locks below %s: %w", path, err)
			}
			if lock {
				locks = append(locks, n.path)
				continue
			}
		}
		if n.depth == depth {
			continue
		}
		sort.Strings(names)
		for _, c := range names {
			queue = append(queue, node{framework.JoinPath(n.path, c), n.depth + 1})
		}
	}
	return locks, false, nil
}

// IsLock reports whether path is a lock path: its children include mutex or
// read-write lock nodes, or it has a semaphore's leases (or locks) child
// holding lease (or lock) nodes.
func IsLock(ctx context.Context, client *framework.Client, path string) (bool, error) {
	names, err := children(ctx, client, path)
	if err != nil {
		return false, err
	}
	return isLock(ctx, client, path, names)
}

// isLock is IsLock for path with the children names.
func isLock(ctx context.Context, client *framework.Client, path string, names []string) (bool, error) {
	var sem []string
	for _, n := range names {
		switch {
		case n == semLeases || n == semLocks:
			sem = append(sem, n)
		case NodeKind(n) == KindMutex || NodeKind(n) == KindRead || NodeKind(n) == KindWrite || NodeKind(n) == KindLatch:
			return true, nil
		}
	}
	for _, q := range sem {
		kids, err := children(ctx, client, framework.JoinPath(path, q))
		if err != nil {
			return false, err
		}
		want := KindMutex
		if q == semLeases {
			want = KindLease
		}
		for _, k := range kids {
			if NodeKind(k) == want {
				return true, nil
			}
		}
	}
	return false, nil
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
		part := Participant{Queue: queue, Node: n, Path: p, Data: showData(data), Token: st.Czxid, owner: st.EphemeralOwner}
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

// showData renders node data for people: printable text as is, else hex.
func showData(b []byte) string {
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

// sortParticipants sorts ps stably by key, as Curator sorts lock children
// (Java String.compareTo on the ASCII names locks use is byte order).
func sortParticipants(ps []Participant, key func(name string) string) {
	for i := range ps {
		ps[i].sortKey = key(ps[i].Node)
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].sortKey < ps[j].sortKey })
	for i := range ps {
		ps[i].Position = i + 1
	}
}

// mutex lists an InterProcessMutex's children (a LeaderSelector's too; or,
// with queue "locks", a semaphore's internal lock; or, with kind KindLatch,
// a LeaderLatch's, whose nodes are named latch-): the first in Curator's
// order holds (leads), the rest wait, each on its predecessor. A node's
// data is its holder's IP address, or for an election, its participant id.
func (l *Listing) mutex(ctx context.Context, client *framework.Client, parent string, names []string, queue, kind string) error {
	ps, err := stat(ctx, client, parent, names, queue)
	if err != nil {
		return err
	}
	marker, recipe := markerLock, RecipeMutex
	if kind == KindLatch {
		marker, recipe = markerLatch, RecipeLatch
	}
	sortParticipants(ps, locktree.KeyFor(marker))
	held := Holders(recipe, nodeNames(ps)) // of the nodes still there, which are those shown
	// locksAfter[i] counts the lock nodes that sort after child i.
	locksAfter := make([]int, len(ps)+1)
	for i := len(ps) - 1; i >= 0; i-- {
		locksAfter[i] = locksAfter[i+1]
		if strings.Contains(ps[i].Node, marker) {
			locksAfter[i]++
		}
	}
	for i := range ps {
		p := &ps[i]
		behind := locksAfter[i+1]
		if !strings.Contains(p.Node, marker) {
			p.Kind = KindForeign
			p.Role = RoleForeign
			if behind > 0 {
				p.Role = RoleBlocking
			}
			l.foreign(p, marker, i == 0, behind, "lock node")
			continue
		}
		p.Kind = kind
		p.Role = RoleWaiting
		if held[p.Node] {
			p.Role = RoleHolder
		} else if locksAfter[0]-locksAfter[i] == 0 {
			p.Notes = append(p.Notes, "first lock node, behind a blocking child: it holds the lock only if it got it before that child appeared")
		}
		if queue == semLocks && held[p.Node] {
			p.Notes = append(p.Notes, "holds the semaphore's internal lock: creating or counting its lease")
		}
		l.checkLockNode(p, marker)
	}
	l.Participants = append(l.Participants, ps...)
	return nil
}

// readWrite lists an InterProcessReadWriteLock's children: a writer holds at
// the head of the queue; a reader holds when no writer is ahead of it; a
// read node that shares a holding writer's sequence (the 5.5+ downgrade)
// holds with it.
func (l *Listing) readWrite(ctx context.Context, client *framework.Client, names []string) error {
	ps, err := stat(ctx, client, l.Path, names, "")
	if err != nil {
		return err
	}
	sortParticipants(ps, locktree.ReadWriteSortKey)
	held := Holders(RecipeReadWrite, nodeNames(ps))
	var mixed bool
	lastWrite, holdingWriter := -1, -1
	for i := range ps {
		p := &ps[i]
		switch {
		case locktree.IsWrite(p.Node):
			p.Kind = KindWrite
			lastWrite = i
			if held[p.Node] {
				holdingWriter = i
			}
		case locktree.IsRead(p.Node):
			p.Kind = KindRead
		default:
			p.Kind = KindForeign
			mixed = mixed || locktree.IsLock(p.Node)
		}
	}
	for i := range ps {
		p := &ps[i]
		switch p.Kind {
		case KindWrite:
			p.Role = RoleWaiting
			if held[p.Node] {
				p.Role = RoleHolder
			}
			l.checkLockNode(p, markerWrite)
		case KindRead:
			p.Role = RoleWaiting
			if held[p.Node] {
				p.Role = RoleHolder
			}
			if holdingWriter >= 0 && p.sortKey == ps[holdingWriter].sortKey {
				p.Notes = append(p.Notes, "downgrade read node: shares the holding write node's sequence (Curator 5.5+)")
				if p.owner != ps[holdingWriter].owner {
					l.warnf(p.Path, "read node with the holding writer's sequence but another session (0x%x): a downgrade read node belongs to the writer's session", p.owner)
				}
			}
			l.checkLockNode(p, markerRead)
		default:
			// Writers queue behind every child; readers ignore foreign ones.
			p.Role = RoleForeign
			if i < lastWrite {
				p.Role = RoleBlocking
			}
			l.foreignRW(p, i < lastWrite)
		}
	}
	if mixed {
		l.warnf("", "%s has both mutex (lock-) and read-write (__READ__/__WRIT__) nodes: each recipe sorts the other's nodes by their whole name, so mutex and read-write holders do not exclude each other", l.Path)
	}
	// Holders first, then waiters, keeping the queue order within each.
	sort.SliceStable(ps, func(i, j int) bool { return rank(ps[i].Role) < rank(ps[j].Role) })
	l.Participants = append(l.Participants, ps...)
	return nil
}

// rank orders roles: holders before everything else.
func rank(role string) int {
	if role == RoleHolder {
		return 0
	}
	return 1
}

// semaphore lists an InterProcessSemaphoreV2 (or SemaphoreMutex): every
// lease under PATH/leases is held, except perhaps the one the holder of the
// internal lock PATH/locks is counting; the rest of PATH/locks waits.
func (l *Listing) semaphore(ctx context.Context, client *framework.Client, names []string) error {
	for _, n := range names {
		if n != semLocks && n != semLeases {
			p := framework.JoinPath(l.Path, n)
			l.warnf(p, "not part of Curator's semaphore layout (only %s and %s belong under a semaphore path): the semaphore ignores it, but it keeps %s from being reaped when empty", semLocks, semLeases, l.Path)
		}
	}
	leasesPath := framework.JoinPath(l.Path, semLeases)
	leaseNames, err := children(ctx, client, leasesPath)
	if err != nil {
		return err
	}
	leases, err := stat(ctx, client, leasesPath, leaseNames, semLeases)
	if err != nil {
		return err
	}
	sortParticipants(leases, locktree.KeyFor(markerLease))
	for i := range leases {
		p := &leases[i]
		p.Role = RoleHolder
		if strings.Contains(p.Node, markerLease) {
			p.Kind = KindLease
			l.checkLockNode(p, markerLease)
			continue
		}
		p.Kind = KindForeign
		l.warnf(p.Path, "not a lease node (no %q marker), yet every contender counts it as a lease: the semaphore has one lease fewer while it is there", markerLease)
	}

	var locks Listing
	locks.Path = l.Path
	lockNames, err := children(ctx, client, framework.JoinPath(l.Path, semLocks))
	if err != nil {
		return err
	}
	if err := locks.mutex(ctx, client, framework.JoinPath(l.Path, semLocks), lockNames, semLocks, KindInternalLock); err != nil {
		return err
	}
	l.Warnings = append(l.Warnings, locks.Warnings...)

	// The lease being counted: the newest lease of the internal lock
	// holder's session, created after its lock node.
	if len(locks.Participants) > 0 && locks.Participants[0].Role == RoleHolder {
		head := locks.Participants[0]
		pending := -1
		for i := range leases {
			if leases[i].owner == head.owner && leases[i].Token > head.Token &&
				(pending < 0 || leases[i].Token > leases[pending].Token) {
				pending = i
			}
		}
		if pending >= 0 {
			p := &leases[pending]
			switch {
			case l.MaxLeases == 0:
				p.Role = RoleAcquiring
				p.Notes = append(p.Notes, "being counted: held if the leases present are within the limit (give --max-leases)")
			case len(leases) <= l.MaxLeases:
				p.Notes = append(p.Notes, "just granted: its holder still holds the internal lock")
			default:
				p.Role = RoleWaiting
				p.Notes = append(p.Notes, fmt.Sprintf("waiting: %d leases present, limit %d", len(leases), l.MaxLeases))
			}
			moved := *p
			leases = append(append(leases[:pending:pending], leases[pending+1:]...), moved)
		}
	}
	if l.MaxLeases > 0 {
		held := 0
		for _, p := range leases {
			if p.Role == RoleHolder {
				held++
			}
		}
		if held > l.MaxLeases {
			l.warnf(framework.JoinPath(l.Path, semLeases), "%d leases are held but --max-leases is %d: participants disagree on the limit (Curator does not store it), or the limit is wrong", held, l.MaxLeases)
		}
	}
	l.Participants = append(append(l.Participants, leases...), locks.Participants...)
	return nil
}

// checkLockNode warns about a lock (or lease) node with the recipe's marker
// that Curator would still not treat as its own: unprotected,
// go-zookeeper-protected, or not ephemeral.
func (l *Listing) checkLockNode(p *Participant, marker string) {
	switch {
	case locktree.IsProtected(p.Node):
	case goZKProtected.MatchString(p.Node):
		l.warnf(p.Path, "go-zookeeper protected name (_c_ + 32 hex digits): it sorts correctly among %s nodes, but Curator's ProtectedUtils does not recognise it as protected (it wants a 36-character UUID), so Curator's protected-create recovery and ProtectedUtils.normalize pass it by", strings.TrimSuffix(marker, "-"))
	default:
		l.warnf(p.Path, "not protected (no _c_<uuid>- prefix): it sorts correctly, but its creator cannot find it again after a lost create reply, and Curator's ProtectedUtils does not recognise it")
	}
	if p.Session == "" {
		l.warnf(p.Path, "not ephemeral: it does not end with a session, so it stays in the queue until someone deletes it")
	}
}

// foreign warns about a child without the marker in a mutex (or internal
// lock) queue.
func (l *Listing) foreign(p *Participant, marker string, first bool, behind int, what string) {
	var msg string
	switch {
	case isKazoo(p.Node):
		msg = fmt.Sprintf("Kazoo-style lock node: it has no %q marker, so Curator and gocurator sort it by its whole name while Kazoo uses its own order; Kazoo and Curator contenders on one path do not exclude each other", marker)
	case strings.Contains(p.Node, markerRead) || strings.Contains(p.Node, markerWrite):
		msg = fmt.Sprintf("read-write lock node among %s nodes: each recipe sorts the other's nodes by their whole name, so the two recipes' holders do not exclude each other", marker)
	default:
		msg = fmt.Sprintf("foreign child: no %q marker, so every participant sorts it by its whole name", marker)
	}
	switch {
	case first && behind > 0:
		msg += fmt.Sprintf("; it sorts first, so no contender gets the lock until it is deleted (%d %ss wait behind it)", behind, what)
	case behind > 0:
		msg += fmt.Sprintf("; %d %ss sort after it and wait for it forever", behind, what)
	default:
		msg += "; it sorts after every lock node and blocks no one now"
	}
	l.warnf(p.Path, "%s", msg)
}

// foreignRW warns about a child that is neither a read nor a write node.
func (l *Listing) foreignRW(p *Participant, blocksWriter bool) {
	var msg string
	switch {
	case isKazoo(p.Node):
		msg = "Kazoo-style lock node: no __READ__/__WRIT__ marker, so Curator and gocurator sort it by its whole name while Kazoo uses its own order; Kazoo and Curator contenders on one path do not exclude each other"
	case strings.Contains(p.Node, markerLock):
		msg = "mutex node in a read-write lock: sorted by its whole name and never seen as a writer"
	default:
		msg = "foreign child: no __READ__/__WRIT__ marker, so every participant sorts it by its whole name"
	}
	if blocksWriter {
		msg += "; a writer sorts after it and waits for it forever (readers ignore it)"
	} else {
		msg += "; no writer sorts after it now, and readers ignore it"
	}
	l.warnf(p.Path, "%s", msg)
}

// isKazoo reports whether name looks like a Kazoo lock node
// (<uuid hex>__lock__<seq> or __rlock__).
func isKazoo(name string) bool {
	return strings.Contains(name, "__lock__") || strings.Contains(name, "__rlock__")
}

// warnf adds a warning once.
func (l *Listing) warnf(node, format string, args ...any) {
	w := Warning{Node: node, Message: fmt.Sprintf(format, args...)}
	for _, old := range l.Warnings {
		if old == w {
			return
		}
	}
	l.Warnings = append(l.Warnings, w)
}

// Summary is a one-line account of the queue.
func (l *Listing) Summary() string {
	count := map[string]int{}
	for _, p := range l.Participants {
		count[p.Role]++
	}
	var what string
	switch l.Recipe {
	case RecipeMutex:
		what = "mutex (InterProcessMutex, or a LeaderSelector: the data is its participant id)"
	case RecipeLatch:
		what = "leader latch (LeaderLatch; the data is each candidate's participant id)"
	case RecipeReadWrite:
		what = "read-write lock (InterProcessReadWriteLock)"
	case RecipeSemaphore:
		what = "semaphore (InterProcessSemaphoreV2 / InterProcessSemaphoreMutex)"
		if l.MaxLeases > 0 {
			what += fmt.Sprintf(", limit %d", l.MaxLeases)
		}
	default:
		if !l.Exists {
			return fmt.Sprintf("%s: no participants (no node there: nobody has queued since the empty lock path was reaped, or the path is wrong)", l.Path)
		}
		return fmt.Sprintf("%s: no participants", l.Path)
	}
	if l.Recipe == RecipeSemaphore {
		lease, lock := map[string]int{}, map[string]int{}
		for _, p := range l.Participants {
			if p.Queue == semLocks {
				lock[p.Role]++
			} else {
				lease[p.Role]++
			}
		}
		s := fmt.Sprintf("%s: %s; %d leases held", l.Path, what, lease[RoleHolder])
		if n := lease[RoleAcquiring]; n > 0 {
			s += fmt.Sprintf(", %d being counted", n)
		}
		if n := lease[RoleWaiting]; n > 0 {
			s += fmt.Sprintf(", %d waiting for a lease", n)
		}
		if n := lease[RoleForeign]; n > 0 {
			s += fmt.Sprintf(", %d foreign", n)
		}
		s += fmt.Sprintf("; internal lock: %d holder, %d waiting", lock[RoleHolder], lock[RoleWaiting])
		if n := lock[RoleBlocking] + lock[RoleForeign]; n > 0 {
			s += fmt.Sprintf(", %d foreign", n)
		}
		return s
	}
	parts := []string{fmt.Sprintf("%d holding", count[RoleHolder])}
	for _, r := range []string{RoleAcquiring, RoleWaiting, RoleBlocking, RoleForeign} {
		if count[r] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[r], r))
		}
	}
	return fmt.Sprintf("%s: %s; %s", l.Path, what, strings.Join(parts, ", "))
}

// WriteText prints l as `zklock ls` does: the summary, then a table,
// holders first, with ages as of now, then the warnings.
func (l *Listing) WriteText(w io.Writer, now time.Time) error {
	fmt.Fprintln(w, l.Summary())
	if len(l.Participants) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POS\tROLE\tKIND\tSESSION\tAGE\tDATA\tNODE")
		for _, p := range l.Participants {
			node := p.Node
			if p.Queue != "" {
				node = p.Queue + "/" + p.Node
			}
			if len(p.Notes) > 0 {
				node += "  (" + strings.Join(p.Notes, "; ") + ")"
			}
			session, data := p.Session, p.Data
			if session == "" {
				session = "-"
			}
			if data == "" {
				data = "-"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Position, p.Role, p.Kind, session,
				FormatAge(now.Sub(p.Created)), data, node)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, wn := range l.Warnings {
		if wn.Node != "" {
			fmt.Fprintf(w, "warning: %s: %s\n", wn.Node, wn.Message)
		} else {
			fmt.Fprintf(w, "warning: %s\n", wn.Message)
		}
	}
	return nil
}

// FormatAge renders d compactly: 850ms, 12.3s, 5m10s, 3h2m, 4d3h.
func FormatAge(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
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

// Holders returns the children of a mutex, leader latch or read-write lock path (names,
// in any order) that hold it, by the hold rules every participant applies
// (internal/locktree): the same rules the recipes' drivers grant by.
// Foreign children never hold.
func Holders(recipe string, names []string) map[string]bool {
	held := map[string]bool{}
	switch recipe {
	case RecipeMutex, RecipeLatch:
		marker := markerLock
		if recipe == RecipeLatch {
			marker = markerLatch
		}
		// Only the first child can hold (one holder), if it is a lock node.
		sorted := locktree.Sort(names, locktree.KeyFor(marker))
		if len(sorted) > 0 && strings.Contains(sorted[0], marker) {
			if ok, _, _ := locktree.Standard(sorted, sorted[0], 1); ok {
				held[sorted[0]] = true
			}
		}
	case RecipeReadWrite:
		sorted := locktree.Sort(names, locktree.ReadWriteSortKey)
		for _, n := range sorted {
			var ok bool
			switch {
			case locktree.IsWrite(n):
				ok, _, _ = locktree.Write(sorted, n)
			case locktree.IsRead(n):
				ok, _, _ = locktree.Read(sorted, n)
			}
			if ok {
				held[n] = true
			}
		}
	}
	return held
}
