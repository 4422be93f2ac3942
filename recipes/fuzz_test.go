package recipes

import (
	"sort"
	"strings"
	"testing"
)

// FuzzSortChildren: the order is a permutation of the input, keys never
// decrease, and equal keys keep their input order (Java's stable sort).
func FuzzSortChildren(f *testing.F) {
	f.Add("_c_a-lock-0000000002,_c_b-lock-0000000001,0-foreign,zzz-foreign", "lock-")
	f.Add("_c_a-__WRIT__0000000002,_c_b-__READ__0000000001,_c_d-__READ__0000000002", "__READ__")
	f.Add("x-lock--000000001,y-lock-2147483647,lock-", "lock-")
	f.Fuzz(func(t *testing.T, list, lockName string) {
		in := strings.Split(list, ",")
		got := SortChildren(in, lockName)
		a, b := append([]string(nil), in...), append([]string(nil), got...)
		sort.Strings(a)
		sort.Strings(b)
		if strings.Join(a, "\x00") != strings.Join(b, "\x00") {
			t.Fatalf("SortChildren(%q) = %q: not a permutation", in, got)
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
