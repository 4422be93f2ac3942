package locktree

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gocurator/curator/internal/protected"
)

// FuzzSort: the order is a permutation of the input, keys never
// decrease, and equal keys keep their input order (Java's stable sort).
func FuzzSort(f *testing.F) {
	f.Add("_c_a-lock-0000000002,_c_b-lock-0000000001,0-foreign,zzz-foreign", "lock-")
	f.Add("_c_a-__WRIT__0000000002,_c_b-__READ__0000000001,_c_d-__READ__0000000002", "__READ__")
	f.Add("x-lock--000000001,y-lock-2147483647,lock-", "lock-")
	f.Fuzz(func(t *testing.T, list, lockName string) {
		in := strings.Split(list, ",")
		got := Sort(in, KeyFor(lockName))
		a, b := append([]string(nil), in...), append([]string(nil), got...)
		sort.Strings(a)
		sort.Strings(b)
		if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
			t.Fatalf("Sort(%q) = %q: not a permutation", in, got)
		}
		for i := 1; i < len(got); i++ {
			ki, kp := SortKey(got[i], lockName), SortKey(got[i-1], lockName)
			if ki < kp {
				t.Fatalf("keys decrease at %d: %q after %q", i, ki, kp)
			}
		}
		// stability: among names with one key, input order is kept
		byKey := map[string][]string{}
		for _, s := range in {
			k := SortKey(s, lockName)
			byKey[k] = append(byKey[k], s)
		}
		for _, s := range got {
			k := SortKey(s, lockName)
			if byKey[k][0] != s {
				t.Fatalf("equal keys reordered: %q before %q", s, byKey[k][0])
			}
			byKey[k] = byKey[k][1:]
		}
	})
}

// FuzzSequenceKey: the sequence a child is ordered by (SortKey, and the
// read-write lock's double key) is what follows the last lock-name marker,
// or the whole name; for every name Curator and gocurator create,
// _c_<id>-<lock name><%010d sequence>, it is the sequence text whatever the
// id holds; sequences order numerically, and a negative one (a cversion past
// 2^31) first; and a downgrade read node, __READ__ + its write node's key,
// keeps that key.
func FuzzSequenceKey(f *testing.F) {
	for _, s := range []struct {
		name, lockName, id string
		seq, other         int32
	}{
		{"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007", "lock-", "40bfe6fd-3b9e-4c4d-9a5e-0123456789ab", 7, 0},
		{"_c_2b161efc-0000-4000-8000-000000000000-__READ__0000000004", "__READ__", "x__WRIT__y", 4, 3},
		{"_c_2b161efc-0000-4000-8000-000000000000-__WRIT__0000000003", "__WRIT__", "x__READ__y", 3, 4},
		{"leases/_c_d2c7de36-0000-4000-8000-000000000000-lease-0000000003", "lease-", "lock-lease-", 3, 2},
		{"0-foreign", "lock-", "", 0, 1},
		{"zzz-foreign", "lock-", "zzz", 2147483647, -2147483648},
		{"x-lock--000000001", "lock-", "lock-", -1, 0},
		{"__READ____READ__", "__READ__", "__READ__READ__", 10, 9},
		{"lock-", "lock-", "-", 0, 0},
		{"aaa", "aa", "", 1, 1},
	} {
		f.Add(s.name, s.lockName, s.id, s.seq, s.other)
	}
	f.Fuzz(func(t *testing.T, name, lockName, id string, seq, other int32) {
		k := SortKey(name, lockName)
		if !strings.Contains(name, lockName) {
			if k != name {
				t.Fatalf("SortKey(%q, %q) = %q without the marker", name, lockName, k)
			}
		} else if !strings.HasSuffix(name, lockName+k) || lockName != "" && strings.Contains(k, lockName) {
			t.Fatalf("SortKey(%q, %q) = %q: not what follows the last marker", name, lockName, k)
		}

		digits := func(n int32) string { return fmt.Sprintf("%010d", n) }
		for _, marker := range []string{MutexName, LeaseName, ReadName, WriteName} {
			node := protected.Name(id, marker+digits(seq))
			if got := SortKey(node, marker); got != digits(seq) {
				t.Fatalf("SortKey(%q, %q) = %q, want %q", node, marker, got, digits(seq))
			}
			if marker == ReadName || marker == WriteName {
				if got := ReadWriteSortKey(node); got != digits(seq) {
					t.Fatalf("ReadWriteSortKey(%q) = %q, want %q", node, got, digits(seq))
				}
			}
		}
		a, b := digits(seq), digits(other)
		switch {
		case seq < 0 && other >= 0:
			if a >= b {
				t.Fatalf("negative sequence %q does not sort before %q", a, b)
			}
		case seq >= 0 && other >= 0:
			if (a < b) != (seq < other) {
				t.Fatalf("sequences %q and %q do not sort as %d and %d", a, b, seq, other)
			}
		}
		write := protected.Name(id, WriteName+digits(seq))
		downgrade := protected.Name(id, ReadName+ReadWriteSortKey(write))
		if got := ReadWriteSortKey(downgrade); got != ReadWriteSortKey(write) {
			t.Fatalf("downgrade node %q has key %q, its write node %q has %q", downgrade, got, write, ReadWriteSortKey(write))
		}
	})
}
