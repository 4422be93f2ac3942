package recipes

// The drivers' rules, as unit tests: the drivers are this package's
// implementations of the engine's rules (driver.go), pure functions of a
// listing. Everything else of the package is tested through its public API
// (package recipes_test); the engine's own tests are in internal/acquire.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/internal/protected"
	"github.com/gocurator/curator/recipes/internal/acquire"
)

// Where a waiter may hold as soon as the node it watches is deleted, without
// listing again — and, as important, where it may not.
func TestHandoffDecisions(t *testing.T) {
	mutex := lockNameDriver(locktree.MutexName, 1)
	writer := newWriteDriver()
	reader := readDriver{}
	for _, tc := range []struct {
		name   string
		d      acquire.HandoffDriver
		sorted []string
		our    string
		watch  string
		want   bool
	}{
		{"mutex second in line", mutex, []string{"a-lock-1", "b-lock-2"}, "b-lock-2", "a-lock-1", true},
		{"mutex third in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "b-lock-2", false},
		{"semaphore v1 with two leases", lockNameDriver(locktree.MutexName, 2), []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "a-lock-1", false},
		// the holder of __WRIT__1 may downgrade: its read node __READ__1 would
		// take the write node's place before the write node goes
		{"writer behind a writer", writer, []string{"a-__WRIT__1", "b-__WRIT__2"}, "b-__WRIT__2", "a-__WRIT__1", false},
		{"writer behind one reader", writer, []string{"a-__READ__1", "b-__WRIT__2"}, "b-__WRIT__2", "a-__READ__1", true},
		{"writer behind two readers", writer, []string{"a-__READ__1", "c-__READ__2", "b-__WRIT__3"}, "b-__WRIT__3", "c-__READ__2", false},
		{"reader behind its only writer", reader, []string{"r-__READ__1", "w-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "w-__WRIT__2", true},
		{"reader behind two writers", reader, []string{"w-__WRIT__1", "x-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "x-__WRIT__2", false},
		{"downgrading reader", readDriver{ownWrite: "w-__WRIT__1"}, []string{"w-__WRIT__1", "o-__READ__1"}, "o-__READ__1", "w-__WRIT__1", false},
	} {
		if got := tc.d.HandsOff(tc.sorted, tc.our, tc.watch); got != tc.want {
			t.Errorf("%s: handsOff = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Which node a waiter further back also watches, so that it lists again
// while its predecessor holds (lookahead).
func TestLookaheadDecisions(t *testing.T) {
	mutex := lockNameDriver(locktree.MutexName, 1)
	writer := newWriteDriver()
	for _, tc := range []struct {
		name   string
		d      acquire.HandoffDriver
		sorted []string
		our    string
		watch  string
		want   string
	}{
		{"mutex third in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "b-lock-2", "a-lock-1"},
		{"mutex fourth in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3", "d-lock-4"}, "d-lock-4", "c-lock-3", "b-lock-2"},
		{"mutex second in line (hands off already)", mutex, []string{"a-lock-1", "b-lock-2"}, "b-lock-2", "a-lock-1", ""},
		{"semaphore v1 with two leases", lockNameDriver(locktree.MutexName, 2), []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "a-lock-1", ""},
		{"writer behind readers", writer, []string{"a-__READ__1", "b-__READ__2", "c-__WRIT__3"}, "c-__WRIT__3", "b-__READ__2", "a-__READ__1"},
		// second in line behind a writer, it would still have to list again
		{"writer behind a writer", writer, []string{"a-__READ__1", "b-__WRIT__2", "c-__WRIT__3"}, "c-__WRIT__3", "b-__WRIT__2", ""},
		{"reader", readDriver{}, []string{"w-__WRIT__1", "x-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "x-__WRIT__2", ""},
	} {
		if got := tc.d.Lookahead(tc.sorted, tc.our, tc.watch); got != tc.want {
			t.Errorf("%s: lookahead = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The read predicate on sorted queues, as every participant sorts them:
// held with no writer ahead; otherwise the NEAREST writer ahead is watched.
func TestReadDriverCheck(t *testing.T) {
	r := func(seq string) string {
		return "_c_00000000-0000-4000-8000-00000000000" + seq[len(seq)-1:] + "-__READ__" + seq
	}
	w := func(seq string) string {
		return "_c_00000000-0000-4000-8000-00000000000" + seq[len(seq)-1:] + "-__WRIT__" + seq
	}
	for _, tc := range []struct {
		name     string
		children []string
		ours     string
		ownWrite string
		held     bool
		watch    string
		err      error
	}{
		{"readers only", []string{r("0000000001"), r("0000000002"), r("0000000003")}, r("0000000003"), "", true, "", nil},
		{"writer behind us does not matter", []string{r("0000000001"), w("0000000002")}, r("0000000001"), "", true, "", nil},
		{"nearest of two writers ahead, not the first", []string{
			r("0000000000"), w("0000000001"), w("0000000002"), r("0000000003"), r("0000000004"),
		}, r("0000000004"), "", false, w("0000000002"), nil},
		{"nearest writer with readers between", []string{
			w("0000000001"), r("0000000002"), w("0000000003"), r("0000000004"), r("0000000005"),
		}, r("0000000005"), "", false, w("0000000003"), nil},
		{"foreign nodes count as readers, wherever they sort", []string{
			"0-foreign", r("0000000001"), "zzz-foreign-__READ__x",
		}, r("0000000001"), "", true, "", nil},
		{"a foreign node containing __WRIT__ is a writer", []string{
			"x-__WRIT__0000000000", r("0000000001"),
		}, r("0000000001"), "", false, "x-__WRIT__0000000000", nil},
		{"downgrade node sorting after its own write node", []string{
			w("0000000005"), r("0000000005"), w("0000000006"),
		}, r("0000000005"), w("0000000005"), true, "", nil},
		{"downgrade node sorting before its own write node", []string{
			r("0000000005"), w("0000000005"), w("0000000006"),
		}, r("0000000005"), w("0000000005"), true, "", nil},
		{"a reader queued behind a downgrade and the next writer waits on that writer", []string{
			w("0000000005"), r("0000000005"), w("0000000006"), r("0000000007"),
		}, r("0000000007"), "", false, w("0000000006"), nil},
		{"our node is gone", []string{r("0000000001")}, r("0000000002"), "", false, "", acquire.ErrVanished},
		{"downgrade whose write node is gone", []string{r("0000000005"), w("0000000006")}, r("0000000005"), w("0000000005"), false, "", ErrLockLost},
	} {
		d := readDriver{ownWrite: tc.ownWrite}
		// the order of equal keys depends on the server's order: try both
		for _, in := range [][]string{tc.children, reversed(tc.children)} {
			sorted := d.Sort(in)
			held, watch, err := d.Check(sorted, tc.ours)
			if held != tc.held || watch != tc.watch || !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Errorf("%s: check(%v) = %v, %q, %v; want %v, %q, %v", tc.name, sorted, held, watch, err, tc.held, tc.watch, tc.err)
			}
		}
	}
}

func reversed(s []string) []string {
	out := make([]string, len(s))
	for i, x := range s {
		out[len(s)-1-i] = x
	}
	return out
}

// `zklock ls` (internal/lockqueue, by locktree.Holders) cannot disagree
// with the library about who holds a lock: on generated trees of mutexes
// and read-write locks (with downgrade read nodes, before and after their
// write node goes, and foreign children in every place), the holders
// locktree.Holders reports are exactly the nodes the recipes' drivers
// grant.
func TestLocktreeHoldersAreTheDriversGrants(t *testing.T) {
	rng := rand.New(rand.NewPCG(20261122, 12))
	foreign := []string{"0-foreign", "zzz-foreign", "lock-x", "locks", "a__lock__0000000003", "_c_0123456789abcdef0123456789abcdef-x"}
	for round := 0; round < 3000; round++ {
		var names []string
		recipe := locktree.MutexName
		if rng.IntN(2) == 0 {
			recipe = locktree.WriteName // a read-write lock
		}
		seq := rng.IntN(100)
		next := func() string { seq += 1 + rng.IntN(3); return fmt.Sprintf("%010d", seq) }
		node := func(marker string) string {
			return protected.Name(protected.NewID(), marker+next())
		}
		for n := rng.IntN(6); n > 0; n-- {
			switch {
			case recipe == locktree.MutexName:
				names = append(names, node(locktree.MutexName))
			case rng.IntN(2) == 0:
				names = append(names, node(locktree.WriteName))
			default:
				names = append(names, node(locktree.ReadName))
			}
		}
		if recipe == locktree.WriteName {
			names = withDowngrade(rng, names)
		}
		for n := rng.IntN(3); n > 0; n-- {
			names = append(names, foreign[rng.IntN(len(foreign))])
		}
		names = slices.Compact(names)
		rng.Shuffle(len(names), func(i, j int) { names[i], names[j] = names[j], names[i] })

		granted := map[string]bool{}
		for _, n := range names {
			var d acquire.Driver
			switch {
			case recipe == locktree.MutexName && locktree.IsLock(n):
				d = lockNameDriver(locktree.MutexName, 1)
			case recipe == locktree.WriteName && locktree.IsWrite(n):
				d = newWriteDriver()
			case recipe == locktree.WriteName && locktree.IsRead(n):
				d = readDriver{}
			default:
				continue // foreign: no participant of this lock asks
			}
			held, _, err := d.Check(d.Sort(names), n)
			if err != nil {
				t.Fatalf("round %d: check %s among %q: %v", round, n, names, err)
			}
			if held {
				granted[n] = true
			}
		}
		if got := locktree.Holders(recipe, names); !equalSets(got, granted) {
			t.Fatalf("round %d, %s %q:\nlocktree's holders %v\ndrivers' grants    %v", round, recipe, names, got, granted)
		}
	}
}

// withDowngrade adds, sometimes, the downgrade read node of the write node
// that holds (first in the queue), which carries its sequence; and
// sometimes then removes the write node, as when the downgrader releases
// the write lock and keeps the read lock in its place.
func withDowngrade(rng *rand.Rand, names []string) []string {
	sorted := locktree.Sort(names, locktree.ReadWriteSortKey)
	if len(sorted) == 0 || !locktree.IsWrite(sorted[0]) || rng.IntN(2) == 0 {
		return names
	}
	w := sorted[0]
	down := protected.Name(protected.NewID(), locktree.ReadName+locktree.ReadWriteSortKey(w))
	names = append(names, down)
	if rng.IntN(2) == 0 {
		names = slices.DeleteFunc(names, func(n string) bool { return n == w })
	}
	return names
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}
