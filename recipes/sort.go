package recipes

import (
	"slices"
	"strings"
)

// Curator's lock names (the marker before the sequence number).
const (
	mutexLockName = "lock-"
	readLockName  = "__READ__"
	writeLockName = "__WRIT__"
	leaseName     = "lease-"
)

// SortKey is the text Curator orders a lock child by
// (StandardLockInternalsDriver.fixForSorting): what follows the last
// occurrence of lockName, or the whole name if lockName does not occur.
func SortKey(name, lockName string) string {
	if i := strings.LastIndex(name, lockName); i >= 0 {
		return name[i+len(lockName):]
	}
	return name
}

// SortChildren orders lock children as every Curator participant does:
// by SortKey, compared byte-wise (Java's String.compareTo for the ASCII names
// locks use), stably, with nothing filtered out. Foreign children are sorted
// and counted too, so "0-foreign" sorts before every sequence number and
// blocks the lock in Curator and here alike. It returns a new slice.
func SortChildren(children []string, lockName string) []string {
	return sortBy(children, func(s string) string { return SortKey(s, lockName) })
}

// readWriteSortKey is the read-write lock's key (SortingLockInternalsDriver):
// the standard transformation with __READ__, then again with __WRIT__.
func readWriteSortKey(name string) string {
	return SortKey(SortKey(name, readLockName), writeLockName)
}

func sortBy(children []string, key func(string) string) []string {
	type keyed struct{ key, name string }
	ks := make([]keyed, len(children))
	for i, c := range children {
		ks[i] = keyed{key(c), c}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return strings.Compare(a.key, b.key) })
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.name
	}
	return out
}

func indexOf(sorted []string, name string) int {
	for i, c := range sorted {
		if c == name {
			return i
		}
	}
	return -1
}
