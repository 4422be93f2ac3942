package compat_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

const (
	// contentionRounds is how many times each contender takes the lock.
	contentionRounds = 20
	// contenders is how many contenders of each language take part (on two
	// clients of each language).
	contenders = 3
	// holdTime is how long a holder stays in the critical section, so that
	// an overlap, if the lock allowed one, would last long enough to be seen.
	holdTime = 2 * time.Millisecond
)

// entrant is one contender of a run: where it runs, its recipe (a
// read-write lock's half, or the lock's only one) and its label.
type entrant struct {
	s     side
	r     recipe
	label string
}

// runMixed runs every entrant's loop on the lock at base concurrently and
// checks that all finished and no guard saw an overlap.
func runMixed(t *testing.T, base string, guards []*guard, rounds int, es []entrant) {
	t.Helper()
	start := time.Now()
	done := make(chan error, len(es))
	for _, e := range es {
		e.s.loop(t, e.r, base, guards, rounds, e.label, done)
	}
	for range es {
		if err := testutil.Recv(t, done, "the contenders' loops"); err != nil {
			t.Error(err)
		}
	}
	for _, g := range guards {
		g.checkClean(t)
		if got, want := len(g.log()), rounds*len(es); got != want {
			t.Errorf("guard %s: %d entries, want %d", g.url, got, want)
		}
	}
	// The languages really took turns: the lock passed from Go to Java and
	// from Java to Go.
	var goToJava, javaToGo int
	log := guards[0].log()
	for i := 1; i < len(log); i++ {
		prevGo, nextGo := strings.HasPrefix(log[i-1], "go-"), strings.HasPrefix(log[i], "go-")
		switch {
		case prevGo && !nextGo:
			goToJava++
		case !prevGo && nextGo:
			javaToGo++
		}
	}
	if goToJava == 0 || javaToGo == 0 {
		t.Errorf("the lock passed %d times from Go to Java and %d times back: the languages did not mix", goToJava, javaToGo)
	}
	t.Logf("%d entries in %v; the lock passed %d times from Go to Java and %d times back",
		len(log), time.Since(start).Round(time.Millisecond), goToJava, javaToGo)
}

// Go and Java contenders, three of each on two clients of each language,
// take the same lock many times concurrently: never more holders than the
// recipe allows, whoever holds.
func TestMixedContention(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "contention")
	sides := []side{{gc: newClient(t, "")}, javaSide(t, p, "jc1", ""), {gc: newClient(t, "")}, javaSide(t, p, "jc2", "")}
	for _, r := range blockingRecipes() {
		t.Run(r.name, func(t *testing.T) {
			var es []entrant
			for i := range 2 * contenders {
				s := sides[i%len(sides)]
				es = append(es, entrant{s, r, fmt.Sprintf("%s-%s-%d", s.lang(), r.name, i)})
			}
			runMixed(t, serverPath(t), newGuards(t, r.guardPaths), contentionRounds, es)
		})
	}

	// Readers and writers of both languages on one read-write lock: a
	// writer is alone, readers share.
	t.Run("read-write", func(t *testing.T) {
		read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
		var es []entrant
		for i, s := range sides {
			es = append(es, entrant{s, read, fmt.Sprintf("%s-reader-%d", s.lang(), i)})
		}
		es = append(es, entrant{sides[0], write, "go-writer"}, entrant{sides[3], write, "java-writer"})
		runMixed(t, serverPath(t), newGuards(t, 1), contentionRounds, es)
	})
}
