package locktree

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gocurator/curator/internal/protected"
)

func TestSortChildrenMatchesCurator(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lockName string
		in       []string
		want     []string
	}{
		{"by sequence, not by uuid", "lock-", []string{
			"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000002",
			"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
			"_c_88888888-0000-4000-8000-000000000000-lock-0000000001",
		}, []string{
			"_c_88888888-0000-4000-8000-000000000000-lock-0000000001",
			"_c_ffffffff-0000-4000-8000-000000000000-lock-0000000002",
			"_c_00000000-0000-4000-8000-000000000000-lock-0000000010",
		}},
		{"foreign names are sorted by their whole name, and 0-foreign blocks", "lock-", []string{
			"zzz-foreign", "_c_a-lock-0000000001", "0-foreign",
		}, []string{"0-foreign", "_c_a-lock-0000000001", "zzz-foreign"}},
		{"go-zookeeper's 32-hex protected names sort among Curator's", "lock-", []string{
			"_c_0123456789abcdef0123456789abcdef-lock-0000000003",
			"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000002",
			"lock-0000000004",
		}, []string{
			"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000002",
			"_c_0123456789abcdef0123456789abcdef-lock-0000000003",
			"lock-0000000004",
		}},
		{"last occurrence of the marker counts", "lock-", []string{
			"lock-x-lock-0000000002", "a-lock-0000000001",
		}, []string{"a-lock-0000000001", "lock-x-lock-0000000002"}},
		// ZooKeeper formats a wrapped (negative) sequence as %010d: "-000000001".
		// Curator compares the text, so every negative sorts before every
		// positive, and among negatives "-0..." before "-2...": the order
		// breaks exactly as it does for Java participants.
		{"past 2^31 the sequence is negative and sorts as text, as in Curator", "lock-", []string{
			"_c_a-lock-2147483647", "_c_b-lock--2147483648", "_c_c-lock--000000001",
		}, []string{"_c_c-lock--000000001", "_c_b-lock--2147483648", "_c_a-lock-2147483647"}},
		{"stable for equal keys", "lock-", []string{"x-lock-1", "y-lock-1", "w-lock-1"},
			[]string{"x-lock-1", "y-lock-1", "w-lock-1"}},
		{"marker at the end gives an empty key", "lock-", []string{"a-lock-0000000001", "b-lock-"},
			[]string{"b-lock-", "a-lock-0000000001"}},
	} {
		got := Sort(tc.in, KeyFor(tc.lockName))
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s:\n got %v\nwant %v", tc.name, got, tc.want)
		}
	}
}

func TestReadWriteSortInterleaves(t *testing.T) {
	in := []string{
		"_c_a-__WRIT__0000000002", "_c_b-__READ__0000000001", "_c_c-__READ__0000000003",
		"_c_d-__READ__0000000002", // a downgrade read node carries its write node's sequence
	}
	got := Sort(in, ReadWriteSortKey)
	want := "_c_b-__READ__0000000001 _c_a-__WRIT__0000000002 _c_d-__READ__0000000002 _c_c-__READ__0000000003"
	if strings.Join(got, " ") != want {
		t.Errorf("got %v\nwant %s", got, want)
	}
}

// A listing of 10,000 mutex nodes in server order (a hash order, here a
// shuffle), as a waiter of a long queue sorts it.
func BenchmarkSort10000(b *testing.B) {
	names := make([]string, 10000)
	for i := range names {
		names[i] = fmt.Sprintf("_c_%s-lock-%010d", protected.NewID(), i)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })
	key := KeyFor(MutexName)
	b.ReportAllocs()
	for b.Loop() {
		Sort(names, key)
	}
}
