package compat_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
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

// goLoop takes the lock rounds times through o, entering the guards while
// it holds it.
func goLoop(ctx context.Context, o owner, guards []*guard, kind guardKind, max, rounds int, label string) error {
	for i := 0; i < rounds; i++ {
		if err := o.Acquire(ctx); err != nil {
			return fmt.Errorf("%s round %d: %w", label, i, err)
		}
		leave := goEnter(guards, kind, max, 1, label)
		time.Sleep(holdTime) // time inside the critical section, not synchronisation
		leave()
		if err := o.Release(ctx); err != nil {
			return fmt.Errorf("%s round %d: %w", label, i, err)
		}
	}
	return nil
}

// javaLoop asks the peer to do the same on worker.
func javaLoop(p *peer, worker, lock string, guards []*guard, kind guardKind, max, rounds int, label string) *call {
	return p.send(worker, "loop", lock, "rounds="+strconv.Itoa(rounds), "guard="+guardURLs(guards, 1),
		"kind="+string(kind), "max="+strconv.Itoa(max), "label="+label,
		"hold="+strconv.FormatInt(holdTime.Milliseconds(), 10))
}

// contender is one participant of a mixed run.
type contender struct {
	label string
	kind  guardKind
	goO   owner  // a Go contender, or
	java  string // the Java lock name
}

// runMixed runs every contender's loop concurrently and checks that all
// finished and no guard saw an overlap.
func runMixed(t *testing.T, p *peer, guards []*guard, max, rounds int, cs []contender) {
	t.Helper()
	ctx := testutil.Context(t)
	var wg sync.WaitGroup
	errs := make(chan error, len(cs))
	for _, c := range cs {
		wg.Add(1)
		if c.goO != nil {
			go func() {
				defer wg.Done()
				errs <- goLoop(ctx, c.goO, guards, c.kind, max, rounds, c.label)
			}()
			continue
		}
		call := javaLoop(p, "w-"+c.label, c.java, guards, c.kind, max, rounds, c.label)
		go func() {
			defer wg.Done()
			_, err := call.Wait(ctx)
			errs <- err
		}()
	}
	testutil.Wait(t, &wg, "the contenders' loops")
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for _, g := range guards {
		g.checkClean(t)
		if got, want := len(g.log()), rounds*len(cs); got != want {
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
	t.Logf("%d entries; the lock passed %d times from Go to Java and %d times back", len(log), goToJava, javaToGo)
}

// Go and Java contenders, three of each on two clients of each language,
// take the same lock many times concurrently: never more holders than the
// recipe allows, whoever holds.
func TestMixedContention(t *testing.T) {
	testutil.CheckLeaks(t)
	p := startPeer(t, "contention")
	p.client(t, "jc1", server.Addr())
	p.client(t, "jc2", server.Addr())
	gcs := []*framework.Client{newClient(t, ""), newClient(t, "")}
	for _, r := range allRecipes() {
		if r.name == "read" {
			continue // readers alone exclude nobody: see read-write below
		}
		t.Run(r.name, func(t *testing.T) {
			base := serverPath(t)
			guards := newGuards(t, r.guardPaths)
			var cs []contender
			for i := 0; i < contenders; i++ {
				lock := fmt.Sprintf("%s-%d", r.name, i)
				jc := []string{"jc1", "jc2"}[i%2]
				cs = append(cs,
					contender{label: label("go-"+r.name+"-", i), kind: r.kind, goO: r.goOwner(t, gcs[i%2], base, 1)},
					contender{label: label("java-"+r.name+"-", i), kind: r.kind, java: r.javaLock(t, p, lock, jc, base)})
			}
			start := time.Now()
			runMixed(t, p, guards, r.max, contentionRounds, cs)
			t.Logf("%d acquisitions in %v", contentionRounds*len(cs), time.Since(start).Round(time.Millisecond))
		})
	}

	// Readers and writers of both languages on one read-write lock: a
	// writer is alone, readers share.
	t.Run("read-write", func(t *testing.T) {
		base := serverPath(t)
		guards := newGuards(t, 1)
		read, write := readWriteRecipe("read", ""), readWriteRecipe("write", "")
		var cs []contender
		for i, jc := range []string{"jc1", "jc2"} {
			cs = append(cs,
				contender{label: label("go-reader-", i), kind: shared, goO: read.goOwner(t, gcs[i], base, 1)},
				contender{label: label("java-reader-", i), kind: shared, java: read.javaLock(t, p, label("rw-r-", i), jc, base)})
		}
		cs = append(cs,
			contender{label: "go-writer", kind: exclusive, goO: write.goOwner(t, gcs[0], base, 1)},
			contender{label: "java-writer", kind: exclusive, java: write.javaLock(t, p, "rw-w", "jc2", base)})
		start := time.Now()
		runMixed(t, p, guards, 1, contentionRounds, cs)
		t.Logf("%d acquisitions in %v", contentionRounds*len(cs), time.Since(start).Round(time.Millisecond))
	})
}
