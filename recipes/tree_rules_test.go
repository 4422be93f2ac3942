package recipes

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gocurator/curator/internal/locktree"
)

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
			return locktree.ProtectedName(locktree.NewProtectedID(), marker+next())
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
			var d driver
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
			held, _, err := d.check(d.sort(names), n)
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
	down := locktree.ProtectedName(locktree.NewProtectedID(), locktree.ReadName+locktree.ReadWriteSortKey(w))
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
