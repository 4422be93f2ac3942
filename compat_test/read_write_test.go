package compat_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Readers of both languages share the read lock: a Java reader, a Go reader
// and a second Java reader hold it at once (all inside the guard together).
// A writer of either language queued behind them is a barrier for readers
// of both languages that come later (Curator's writer-starvation rule), and
// gets the lock only once the last reader has gone: every holder enters the
// guard from where it holds the lock, the moment it is granted, so the guard
// records a writer that got in early whenever that happens.
func TestReadersShare(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	java, golang := sides(t, "readers")
	p, gc := java.p, golang.gc
	raw := testutil.Connect(t, server.Addr())
	base := serverPath(t)
	g := newGuards(t, 1)
	rw := mustReadWrite(t, gc, base, "")
	p.do(t, "-", "rwlock", "rw", "jc", base)

	r1 := javaHold(p, java.sid, "r1", "rw.read", 1, g, shared, 1, "java-r1")
	r1.granted(t)
	r2 := rw.NewHandle().ReadLock()
	if err := r2.TryAcquire(ctx); err != nil {
		t.Fatalf("Go reader could not share the read lock with a Java reader: %v", err)
	}
	leave2 := goEnter(g, shared, 1, 1, "go-r2")
	r3 := javaHold(p, java.sid, "r3", "rw.read", 1, g, shared, 1, "java-r3", "timeout=0")
	r3.granted(t) // Java reader 3 shares the read lock with a Java and a Go reader

	gw := golang.contend(t, readWriteRecipe("write", ""), base, 1, g, "go-w")
	testutil.WaitChildren(t, raw, base, 4)
	gw.waiting(t, base, base)
	if acquired(t, p.do(t, "r4", "acquire", "rw.read", "timeout=0")) {
		t.Fatal("a Java reader got past a queued Go writer")
	}
	testutil.ErrorIs(t, rw.NewHandle().ReadLock().TryAcquire(ctx), recipes.ErrLocked) // a Go reader behind a queued Go writer
	gw.notYet(t, "Go writer")

	r1.release(t)
	leave2()
	testutil.Must(t, r2.Release(ctx))
	gw.notYet(t, "Go writer")
	r3.release(t)
	gw.granted(t)

	// And a Java writer queued behind a Go writer bars later Go readers. It
	// has a client of its own: reader 4's try left a watch on jc's session.
	jw := javaSide(t, p, "jwc", "").contend(t, readWriteRecipe("write", ""), base, 1, g, "java-w2")
	testutil.WaitChildren(t, raw, base, 2)
	jw.waiting(t, base, "")
	testutil.ErrorIs(t, rw.NewHandle().ReadLock().TryAcquire(ctx), recipes.ErrLocked) // a Go reader behind a Go-held write lock and a queued Java writer
	jw.notYet(t, "Java writer")
	gw.release(t)
	jw.granted(t)
	jw.release(t)
	checkGuards(t, g)
	checkLog(t, g, "java-r1", "go-r2", "java-r3", "go-w", "java-w2")
}

var seqSuffix = regexp.MustCompile(`(__READ__|__WRIT__)([0-9]{10})$`)

// seqOf returns the sequence text of a read-write node name.
func seqOf(t testing.TB, name string) string {
	t.Helper()
	m := seqSuffix.FindStringSubmatch(name)
	if m == nil {
		t.Fatalf("%s is not a read-write lock node", name)
	}
	return m[2]
}

// Downgrade across languages.
//
// Go holds the write lock, takes the read lock (Curator 5.5's node: a
// non-sequential _c_<uuid>-__READ__<the write node's sequence>), and
// releases the write lock; a Java writer that queued behind the write lock
// must not get in while Go holds the read lock. The witness is the Java
// writer's own untimed acquire, which cannot give up: it enters the guard
// the moment it is granted, while Go is inside as a reader until it
// releases, so an early grant is an overlap the guard records. Go keeps the
// read lock until the server shows the Java writer watching the read node:
// it has looked at the queue without the write node and chose to wait.
//
// With the roles swapped, Curator 5.4 shows CURATOR-621: its downgrade read
// node is an ordinary sequential node with a NEW sequence, so the Go writer
// queued between Java's write and read nodes is first in line once Java
// releases the write lock, and gets the write lock while Java still holds
// the read lock. The test asserts this is what Debian's Curator 5.4 does
// (it fails, asking for an update, should a fixed Curator be installed),
// and that the Go writer did not get in while Java held the write lock.
func TestDowngrade(t *testing.T) {
	testutil.CheckLeaks(t)
	java, golang := sides(t, "downgrade")
	p, gc := java.p, golang.gc
	raw := testutil.Connect(t, server.Addr())
	write := readWriteRecipe("write", "")

	t.Run("go-downgrades", func(t *testing.T) {
		ctx := testutil.Context(t)
		base := serverPath(t)
		g := newGuards(t, 1)
		h := mustReadWrite(t, gc, base, "").NewHandle()
		testutil.Must(t, h.WriteLock().Acquire(ctx))
		leaveW := goEnter(g, exclusive, 1, 1, "go-writer")
		jw := java.contend(t, write, base, 1, g, "java-writer").(*javaHolder)
		testutil.WaitChildren(t, raw, base, 2)
		testutil.Must(t, h.ReadLock().Acquire(ctx))
		writeName, readName := lastSegment(h.WriteLock().LockPath()), lastSegment(h.ReadLock().LockPath())
		if !framework.IsProtectedName(readName) || seqOf(t, readName) != seqOf(t, writeName) || !strings.Contains(readName, "-__READ__") {
			t.Fatalf("downgrade read node %s, want _c_<uuid>-__READ__ with the write node's sequence (%s)", readName, writeName)
		}
		_, st, err := gc.GetData(ctx, h.ReadLock().LockPath())
		testutil.Must(t, err)
		if st.EphemeralOwner != gc.SessionID() {
			t.Fatalf("downgrade read node owner %x, want our session", st.EphemeralOwner)
		}
		leaveW()
		testutil.Must(t, h.WriteLock().Release(ctx))
		leaveR := goEnter(g, shared, 1, 1, "go-downgraded-reader")
		readPath := h.ReadLock().LockPath()
		if !waitWatching(t, java.sid, func(p string) bool { return p == readPath }, jw.acq.Done()) {
			r, err := jw.acq.Wait(ctx)
			jw.enter.must(t) // its entry into the guard, which records the overlap
			checkGuards(t, g)
			t.Fatalf("the Java writer's acquire returned (%q, %v) while Go held the downgraded read lock", r, err)
		}
		jw.notYet(t, "the Java writer's acquire")
		leaveR()
		testutil.Must(t, h.ReadLock().Release(ctx))
		jw.granted(t)
		jw.release(t)
		checkGuards(t, g)
		checkLog(t, g, "go-writer", "go-downgraded-reader", "java-writer")
	})

	t.Run("java-downgrades-curator-621", func(t *testing.T) {
		ctx := testutil.Context(t)
		base := serverPath(t)
		g := newGuards(t, 1)
		p.do(t, "-", "rwlock", "rw2", "jc", base)
		jw := javaHold(p, java.sid, "d2", "rw2.write", 1, g, exclusive, 1, "java-writer")
		jw.granted(t)
		javaWrite := ownedBy(t, gc, base, java.sid)
		gw := golang.contend(t, write, base, 1, g, "go-writer")
		queued(t, raw, write, base, gw)
		// Same thread: a downgrade. Java's read lock stays out of the guard:
		// the overlap with the Go writer below is CURATOR-621's.
		if !acquired(t, p.do(t, "d2", "acquire", "rw2.read")) {
			t.Fatal("Java's downgrade read acquire returned false")
		}
		testutil.WaitChildren(t, raw, base, 3)
		var javaRead string
		for _, n := range ownedBy(t, gc, base, java.sid) {
			if n != javaWrite[0] {
				javaRead = n
			}
		}
		goWrite := lastSegment(ownedBy(t, gc, base, gc.SessionID())[0])
		jwSeq, jrSeq, gwSeq := seqOf(t, lastSegment(javaWrite[0])), seqOf(t, lastSegment(javaRead)), seqOf(t, goWrite)
		t.Logf("Java write %s, Go write %s, Java downgrade read %s", lastSegment(javaWrite[0]), goWrite, lastSegment(javaRead))
		if !(jwSeq < gwSeq && gwSeq < jrSeq) {
			t.Fatalf("Curator's downgrade read node %s (sequence %s) does not follow the Go writer's %s: "+
				"this is not Curator 5.4's CURATOR-621 behaviour; Curator 5.5+ reuses the write sequence. "+
				"Update this test and docs/ for the installed Curator", javaRead, jrSeq, gwSeq)
		}
		gw.notYet(t, "Go writer")
		jw.release(t)
		// CURATOR-621: the Go writer is now first and gets the write lock
		// while Java still holds its read lock.
		gw.granted(t)
		if ok, _, err := gc.Exists(ctx, javaRead); err != nil || !ok {
			t.Fatalf("Java's read node %s is gone (%v): cannot show CURATOR-621", javaRead, err)
		}
		t.Logf("CURATOR-621 as Curator 5.4 has it: Go holds the write lock (%s) while Java holds the read lock (%s)",
			goWrite, javaRead)
		gw.release(t)
		p.do(t, "d2", "release", "rw2.read")
		checkGuards(t, g)
		checkLog(t, g, "java-writer", "go-writer")
	})
}

func lastSegment(path string) string { return path[strings.LastIndex(path, "/")+1:] }
