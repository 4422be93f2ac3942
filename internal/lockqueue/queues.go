package lockqueue

import (
	"context"
	"fmt"
	"sort"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/locktree"
)

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
	lockName := locktree.MutexName
	if kind == KindLatch {
		lockName = locktree.LatchName
	}
	sortParticipants(ps, locktree.KeyFor(lockName))
	held := locktree.Holders(lockName, nodeNames(ps)) // of the nodes still there, which are those shown
	// locksAfter[i] counts the lock nodes that sort after child i.
	locksAfter := make([]int, len(ps)+1)
	for i := len(ps) - 1; i >= 0; i-- {
		locksAfter[i] = locksAfter[i+1]
		if locktree.IsNodeOf(ps[i].Node, lockName) {
			locksAfter[i]++
		}
	}
	for i := range ps {
		p := &ps[i]
		behind := locksAfter[i+1]
		if !locktree.IsNodeOf(p.Node, lockName) {
			p.Kind = KindForeign
			p.Role = RoleForeign
			if behind > 0 {
				p.Role = RoleBlocking
			}
			l.foreign(p, lockName, i == 0, behind)
			continue
		}
		p.Kind = kind
		p.Role = RoleWaiting
		if held[p.Node] {
			p.Role = RoleHolder
		} else if locksAfter[0]-locksAfter[i] == 0 {
			p.Notes = append(p.Notes, "first lock node, behind a blocking child: it holds the lock only if it got it before that child appeared")
		}
		if queue == locktree.SemaphoreLocks && held[p.Node] {
			p.Notes = append(p.Notes, "holds the semaphore's internal lock: creating or counting its lease")
		}
		l.checkLockNode(p, lockName)
	}
	l.Participants = append(l.Participants, ps...)
	return nil
}

// readWrite lists an InterProcessReadWriteLock's children: who holds is
// locktree.Holders'; a read node that shares a holding writer's sequence
// (the 5.5+ downgrade) is noted as such.
func (l *Listing) readWrite(ctx context.Context, client *framework.Client, names []string) error {
	ps, err := stat(ctx, client, l.Path, names, "")
	if err != nil {
		return err
	}
	sortParticipants(ps, locktree.ReadWriteSortKey)
	held := locktree.Holders(locktree.WriteName, nodeNames(ps))
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
		case KindWrite, KindRead:
			p.Role = RoleWaiting
			if held[p.Node] {
				p.Role = RoleHolder
			}
			lockName := locktree.WriteName
			if p.Kind == KindRead {
				lockName = locktree.ReadName
			}
			l.checkLockNode(p, lockName)
			if p.Kind == KindRead && holdingWriter >= 0 && locktree.ReadWriteSortKey(p.Node) == locktree.ReadWriteSortKey(ps[holdingWriter].Node) {
				p.Notes = append(p.Notes, "downgrade read node: shares the holding write node's sequence (Curator 5.5+)")
				if p.owner != ps[holdingWriter].owner {
					l.warnf(p.Path, "read node with the holding writer's sequence but another session (0x%x): a downgrade read node belongs to the writer's session", p.owner)
				}
			}
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
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].Role == RoleHolder && ps[j].Role != RoleHolder })
	l.Participants = append(l.Participants, ps...)
	return nil
}

// semaphore lists an InterProcessSemaphoreV2 (or SemaphoreMutex): every
// lease under PATH/leases is held, except perhaps the one the holder of the
// internal lock PATH/locks is counting; the rest of PATH/locks waits.
func (l *Listing) semaphore(ctx context.Context, client *framework.Client, names []string) error {
	for _, n := range names {
		if n != locktree.SemaphoreLocks && n != locktree.SemaphoreLeases {
			l.warnf(framework.JoinPath(l.Path, n), "not part of Curator's semaphore layout (only %s and %s belong under a semaphore path): the semaphore ignores it, but it keeps %s from being reaped when empty",
				locktree.SemaphoreLocks, locktree.SemaphoreLeases, l.Path)
		}
	}
	leasesPath := framework.JoinPath(l.Path, locktree.SemaphoreLeases)
	leaseNames, err := children(ctx, client, leasesPath, &l.Listed)
	if err != nil {
		return err
	}
	leases, err := stat(ctx, client, leasesPath, leaseNames, locktree.SemaphoreLeases)
	if err != nil {
		return err
	}
	sortParticipants(leases, locktree.KeyFor(locktree.LeaseName))
	for i := range leases {
		p := &leases[i]
		p.Role = RoleHolder
		if locktree.IsLease(p.Node) {
			p.Kind = KindLease
			l.checkLockNode(p, locktree.LeaseName)
			continue
		}
		p.Kind = KindForeign
		l.warnf(p.Path, "not a lease node (no %q marker), yet every contender counts it as a lease: the semaphore has one lease fewer while it is there", locktree.LeaseName)
	}

	locks := Listing{Path: l.Path}
	locksPath := framework.JoinPath(l.Path, locktree.SemaphoreLocks)
	lockNames, err := children(ctx, client, locksPath, &l.Listed)
	if err != nil {
		return err
	}
	if err := locks.mutex(ctx, client, locksPath, lockNames, locktree.SemaphoreLocks, KindInternalLock); err != nil {
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
			l.warnf(leasesPath, "%d leases are held but --max-leases is %d: participants disagree on the limit (Curator does not store it), or the limit is wrong", held, l.MaxLeases)
		}
	}
	l.Participants = append(append(l.Participants, leases...), locks.Participants...)
	return nil
}
