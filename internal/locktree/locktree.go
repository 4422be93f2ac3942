// Package locktree is the one home of Curator's lock-tree format: the names
// of lock nodes, the order in which every participant sorts them, and the
// rules that say which nodes hold. (The protected-name prefix in front of
// each lock node's name is a create's, not a lock's: internal/protected.)
// The recipes' drivers and internal/lockqueue (`zklock ls`) both use it, so
// that the command cannot disagree with the library about who holds a
// lock.
//
// Everything here is Curator 5.x's, as docs/tree-format.md describes it
// and compat_test checks against live Curator processes.
package locktree

import (
	"cmp"
	"slices"
	"strings"
)

// Curator's lock names: the marker before a node's sequence number.
const (
	MutexName = "lock-"    // InterProcessMutex, and a semaphore's internal lock
	ReadName  = "__READ__" // InterProcessReadWriteLock, read half
	WriteName = "__WRIT__" // InterProcessReadWriteLock, write half
	LeaseName = "lease-"   // InterProcessSemaphoreV2 leases
	LatchName = "latch-"   // LeaderLatch
)

// A semaphore's layout: P/locks holds its internal mutex, P/leases its
// leases (InterProcessSemaphoreV2.LOCK_SCHEMA).
const (
	SemaphoreLocks  = "locks"
	SemaphoreLeases = "leases"
)

// RevokeMessage is what Curator's Revoker writes to a lock node to ask its
// holder to release.
const RevokeMessage = "__REVOKE__"

// SortKey is the text Curator orders a lock child by
// (StandardLockInternalsDriver.fixForSorting): what follows the last
// occurrence of lockName, or the whole name if lockName does not occur.
func SortKey(name, lockName string) string {
	if i := strings.LastIndex(name, lockName); i >= 0 {
		return name[i+len(lockName):]
	}
	return name
}

// ReadWriteSortKey is the read-write lock's key (its
// SortingLockInternalsDriver): the standard key with __READ__, then again
// with __WRIT__. A write node and its owner's downgrade read node, which
// carries the write node's sequence, have the same key.
func ReadWriteSortKey(name string) string {
	return SortKey(SortKey(name, ReadName), WriteName)
}

// KeyFor returns the sort key of the lock whose nodes are named lockName.
func KeyFor(lockName string) func(string) string {
	return func(name string) string { return SortKey(name, lockName) }
}

// Sort orders lock children as every Curator participant does: by key,
// compared byte-wise (Java's String.compareTo for the ASCII names locks
// use), stably, with nothing filtered out. Foreign children are sorted and
// counted too, so "0-foreign" sorts before every sequence number and blocks
// the lock in Curator and here alike. It returns a new slice.
func Sort(children []string, key func(string) string) []string {
	// Stable as an unstable sort with the input position as the last key:
	// pdqsort's n log n, where a stable sort's in-place merges cost
	// n log² n, which a waiter of a long queue pays at every listing. A key
	// of ten decimal digits (every sequence number the server gives before
	// it wraps) is compared as its number: for two such keys that is the
	// byte-wise order. What moves while sorting is small: the number and
	// the position, which finds the key and the name.
	type keyed struct {
		num int64 // the key's value if it is ten decimal digits, else -1
		at  int
	}
	keys := make([]string, len(children))
	ks := make([]keyed, len(children))
	for i, c := range children {
		keys[i] = key(c)
		ks[i] = keyed{tenDigits(keys[i]), i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		c := 0
		if a.num >= 0 && b.num >= 0 {
			c = cmp.Compare(a.num, b.num)
		} else {
			c = strings.Compare(keys[a.at], keys[b.at])
		}
		if c != 0 {
			return c
		}
		return a.at - b.at
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = children[k.at]
	}
	return out
}

// tenDigits returns the value of s if it is ten decimal digits, else -1.
func tenDigits(s string) int64 {
	if len(s) != 10 {
		return -1
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

// IndexOf returns the index of name in sorted, or -1.
func IndexOf(sorted []string, name string) int { return slices.Index(sorted, name) }

// IsNodeOf reports whether name is a node of the lock whose nodes are
// named lockName: whether it carries that marker. A child without it is
// foreign to the lock.
func IsNodeOf(name, lockName string) bool { return strings.Contains(name, lockName) }

// IsWrite, IsRead, IsLock, IsLease and IsLatch report a child's kind by its
// marker (IsNodeOf). IsWrite: a read-write lock's write node.
func IsWrite(name string) bool { return IsNodeOf(name, WriteName) }

// IsRead reports whether name is a read-write lock's read node.
func IsRead(name string) bool { return IsNodeOf(name, ReadName) }

// IsLock reports whether name is a mutex (or semaphore-internal) lock node.
func IsLock(name string) bool { return IsNodeOf(name, MutexName) }

// IsLease reports whether name is a semaphore's lease node.
func IsLease(name string) bool { return IsNodeOf(name, LeaseName) }

// IsLatch reports whether name is a leader latch's node.
func IsLatch(name string) bool { return IsNodeOf(name, LatchName) }

// IsSequentialNode reports whether name is a node as the recipes create
// them: one of the lock names above followed by a ten-digit sequence
// number (a downgrade read node carries its write node's). A lock path is
// not named so, which tells a lock node that is gone from a lock path that
// is.
func IsSequentialNode(name string) bool {
	for _, lockName := range []string{MutexName, ReadName, WriteName, LeaseName, LatchName} {
		if i := strings.LastIndex(name, lockName); i >= 0 && tenDigits(name[i+len(lockName):]) >= 0 {
			return true
		}
	}
	return false
}

// The hold rules. Each takes the children sorted by the lock's key and a
// child's name, and says whether that child holds, or else which child it
// waits on; found is false when the name is not among the children.

// Standard is StandardLockInternalsDriver's rule: a child holds when fewer
// than maxLeases children sort before it; otherwise it waits on the child
// maxLeases places ahead (for a mutex, its predecessor: no herd).
func Standard(sorted []string, name string, maxLeases int) (held bool, watch string, found bool) {
	i := IndexOf(sorted, name)
	if i < 0 {
		return false, "", false
	}
	if i < maxLeases {
		return true, "", true
	}
	return false, sorted[i-maxLeases], true
}

// Write is the read-write lock's rule for a write node: it holds at the
// head of the queue (Standard with one lease), or behind nothing but read
// nodes of its own sequence (its owner's downgrade read node, which a
// writer only has while it holds); otherwise it waits on its predecessor.
func Write(sorted []string, name string) (held bool, watch string, found bool) {
	i := IndexOf(sorted, name)
	if i < 0 {
		return false, "", false
	}
	key := ReadWriteSortKey(name)
	for j := 0; j < i; j++ {
		if !IsRead(sorted[j]) || ReadWriteSortKey(sorted[j]) != key {
			return false, sorted[i-1], true
		}
	}
	return true, "", true
}

// Read is the read-write lock's rule for a read node: it holds when no
// write node sorts before it (every other child, foreign ones included,
// counts as a reader), or when it is a downgrade read node: one that
// shares the sequence of a write node that holds (ownWrite, when the caller
// knows it is its owner's write node). Otherwise it waits on the NEAREST
// write node ahead of it (Curator's readers watch the first one; the queue
// and the grants are the same, fewer readers wake). Curator 5.4's readers
// grant a downgrade read node by the same rule, since its key equals its
// write node's.
func Read(sorted []string, name string) (held bool, watch string, found bool) {
	nearest := -1
	for i, c := range sorted {
		if c == name {
			if nearest < 0 {
				return true, "", true
			}
			if w := sorted[nearest]; ReadWriteSortKey(w) == ReadWriteSortKey(name) {
				if held, _, _ := Write(sorted, w); held {
					return true, "", true // a downgrade read node, beside its holding write node
				}
			}
			return false, sorted[nearest], true
		}
		if IsWrite(c) {
			nearest = i
		}
	}
	return false, "", false
}

// Holders returns the children of a lock path that hold the lock whose
// nodes are named lockName, as every participant computes it: for
// MutexName or LatchName (a mutex, a LeaderSelector, a LeaderLatch), the
// first child in the lock's order if it is one of the lock's nodes
// (Standard with one lease); for ReadName or WriteName (a read-write lock),
// the write nodes that Write grants and the read nodes that Read grants.
// Foreign children never hold. children may be in any order.
func Holders(lockName string, children []string) map[string]bool {
	held := map[string]bool{}
	if lockName == ReadName || lockName == WriteName {
		sorted := Sort(children, ReadWriteSortKey)
		for _, n := range sorted {
			var ok bool
			switch {
			case IsWrite(n):
				ok, _, _ = Write(sorted, n)
			case IsRead(n):
				ok, _, _ = Read(sorted, n)
			}
			if ok {
				held[n] = true
			}
		}
		return held
	}
	// Only the first child can hold (one lease): the others need not be asked.
	sorted := Sort(children, KeyFor(lockName))
	if len(sorted) > 0 && IsNodeOf(sorted[0], lockName) {
		if ok, _, _ := Standard(sorted, sorted[0], 1); ok {
			held[sorted[0]] = true
		}
	}
	return held
}

// Leases is InterProcessSemaphoreV2's rule for a lease node: the leases
// hold while there are at most maxLeases of them, foreign children of
// P/leases included; order does not matter.
func Leases(children []string, name string, maxLeases int) (held, found bool) {
	if IndexOf(children, name) < 0 {
		return false, false
	}
	return len(children) <= maxLeases, true
}
