package compat_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	zkatomic "github.com/gocurator/curator/recipes/atomic"
	"github.com/gocurator/curator/recipes/barriers"
	"github.com/gocurator/curator/recipes/nodes"
	"github.com/gocurator/curator/retry"
)

// Curator's other recipes, Go and Java on the same nodes in one test (one
// JVM, its Curator client "jc", and a Go client, on the shared server): a
// counter Java and Go increment together, a double barrier whose Go and
// Java members pass together, a barrier one side sets and the other waits
// on, a Go persistent node that a Java CuratorCache sees come back after the
// Go session expires, and a shared value each side sets and hears.
func TestFleetRecipesWithJava(t *testing.T) {
	testutil.CheckLeaks(t)
	java, golang := sides(t, "fleet")
	p, jc, gc := java.p, java.jc, golang.gc

	// Java and Go increment one DistributedAtomicLong at once, optimistic
	// and then under the promoted lock (Java's InterProcessMutex and Go's
	// at one path): no update is lost, and each side reads the other's
	// bytes.
	t.Run("atomic-long", func(t *testing.T) {
		t.Parallel()
		ctx := testutil.Context(t)
		base := serverPath(t)
		path, lock := base+"/counter", base+"/lock"
		const javaTimes, goWorkers, goTimes = 150, 2, 75
		p.do(t, "-", "atomic", "counter-"+t.Name(), jc, path, "lock="+lock, "retries=3", "sleep=1")
		javaAdds := p.send("atomic-"+t.Name(), "atomic-add", "counter-"+t.Name(), "1", "times="+strconv.Itoa(javaTimes))
		var goOK, goGaveUp atomic.Int64
		var wg sync.WaitGroup
		for range goWorkers {
			l, err := zkatomic.NewDistributedAtomicLong(gc, path, retry.NewNTimes(3, time.Millisecond),
				zkatomic.WithPromotedToLock(zkatomic.PromotedToLock{Path: lock, RetryPolicy: retry.NewNTimes(3, time.Millisecond)}))
			testutil.Must(t, err)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range goTimes {
					v, err := l.Increment(ctx)
					switch {
					case err != nil:
						t.Error(err)
						return
					case v.Succeeded:
						goOK.Add(1)
					default:
						goGaveUp.Add(1)
					}
				}
			}()
		}
		testutil.Wait(t, &wg, "the Go incrementers")
		var javaOK, javaFailed int64
		if _, err := fmt.Sscanf(javaAdds.must(t), "succeeded=%d failed=%d", &javaOK, &javaFailed); err != nil {
			t.Fatal(err)
		}
		got, err := zkatomic.NewDistributedAtomicLong(gc, path, retry.NewNTimes(0, 0))
		testutil.Must(t, err)
		v, err := got.Get(ctx)
		testutil.Must(t, err)
		t.Logf("counter %d: Java %d succeeded (%d gave up), Go %d succeeded (%d gave up)", v.PreValue, javaOK, javaFailed, goOK.Load(), goGaveUp.Load())
		if want := javaOK + goOK.Load(); v.PreValue != want {
			t.Fatalf("the counter is %d, want the %d increments that succeeded (Java %d, Go %d)", v.PreValue, want, javaOK, goOK.Load())
		}
		if j := p.do(t, "-", "atomic-get", "counter-"+t.Name()); j != strconv.FormatInt(v.PreValue, 10) {
			t.Fatalf("Java reads %s, Go %d", j, v.PreValue)
		}
	})

	// Two Go and two Java members of one double barrier of four: none
	// passes Enter while three are in, all pass once the fourth enters;
	// none passes Leave before every one leaves.
	t.Run("double-barrier", func(t *testing.T) {
		t.Parallel()
		ctx := testutil.Context(t)
		path := serverPath(t) + "/barrier"
		const qty = 4
		var goMembers []*barriers.DistributedDoubleBarrier
		for range 2 {
			m, err := barriers.NewDistributedDoubleBarrier(gc, path, qty)
			testutil.Must(t, err)
			goMembers = append(goMembers, m)
		}
		javaMember := func(i int) string {
			name := fmt.Sprintf("member%d-%s", i, t.Name())
			p.do(t, "-", "dbarrier", name, jc, path, strconv.Itoa(qty))
			return name
		}
		j0, j1 := javaMember(0), javaMember(1)
		goDone := make(chan error, 2)
		step := func(m *barriers.DistributedDoubleBarrier, enter bool) {
			go func() {
				if enter {
					goDone <- m.Enter(ctx)
				} else {
					goDone <- m.Leave(ctx)
				}
			}()
		}
		step(goMembers[0], true)
		j0Enter := p.send(j0, "dbarrier-enter", j0)
		step(goMembers[1], true)
		testutil.Until(t, "three members in", func() (bool, string) {
			kids := children(t, gc, path)
			return len(kids) == 3 && !slices.Contains(kids, "ready"), fmt.Sprint(kids)
		})
		if j0Enter.Answered() || len(goDone) > 0 {
			t.Fatalf("a member passed Enter with three of four in (Java answered %v, Go members passed %d)", j0Enter.Answered(), len(goDone))
		}
		allPass(t, "Enter", goDone, j0Enter, p.send(j1, "dbarrier-enter", j1))

		step(goMembers[0], false)
		j0Leave := p.send(j0, "dbarrier-leave", j0)
		step(goMembers[1], false)
		testutil.Until(t, "three members leaving", func() (bool, string) {
			return testutil.Parked("barriers.(*DistributedDoubleBarrier).leave") == 2, "the Go members not waiting"
		})
		if j0Leave.Answered() || len(goDone) > 0 {
			t.Fatalf("a member passed Leave while one had not begun to leave")
		}
		allPass(t, "Leave", goDone, j0Leave, p.send(j1, "dbarrier-leave", j1))
		if kids := children(t, gc, path); len(kids) != 0 {
			t.Fatalf("nodes left in the barrier: %v", kids)
		}
	})

	// A barrier Java sets and Go waits on, and one Go sets and Java waits on.
	t.Run("barrier", func(t *testing.T) {
		t.Parallel()
		ctx := testutil.Context(t)
		path := serverPath(t) + "/barrier"
		name := "barrier-" + t.Name()
		p.do(t, "-", "barrier", name, jc, path)
		b, err := barriers.NewDistributedBarrier(gc, path)
		testutil.Must(t, err)

		p.do(t, "-", "barrier-set", name)
		goWait := make(chan error, 1)
		go func() { goWait <- b.WaitOnBarrier(ctx) }()
		testutil.Until(t, "Go waiting", func() (bool, string) {
			return testutil.Parked("barriers.(*DistributedBarrier).WaitOnBarrier") == 1, "not yet"
		})
		p.do(t, "-", "barrier-remove", name)
		testutil.Must(t, testutil.Recv(t, goWait, "Go's wait once Java removed the barrier"))

		testutil.Must(t, b.SetBarrier(ctx))
		javaWait := p.send(name, "barrier-wait", name)
		waitWatching(t, java.sid, func(w string) bool { return w == path }, nil)
		if javaWait.Answered() {
			t.Fatal("Java passed a barrier that stands")
		}
		testutil.Must(t, b.RemoveBarrier(ctx))
		if javaWait.must(t) != "true" {
			t.Fatal("Java's wait said false")
		}
	})

	// A Java CuratorCache sees a Go persistent node (ephemeral, protected,
	// sequential) come back, under the same name and with its data, after
	// the Go session expires.
	t.Run("persistent-node", func(t *testing.T) {
		t.Parallel()
		ctx := testutil.Context(t)
		base := serverPath(t)
		dir := base + "/services"
		proxy := zktest.NewProxy(t, server.Addr())
		c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(time.Second))
		_, err := gc.Create(ctx, dir, nil, framework.CreatingParentsIfNeeded())
		testutil.Must(t, err)
		name := "cache-" + t.Name()
		p.do(t, "-", "cache", name, jc, dir)
		defer p.do(t, "-", "cache-close", name)
		p.mustEvent(t, "cache "+name+" initialized")

		n, err := nodes.NewPersistentNode(c, framework.EphemeralSequential, dir+"/svc-", []byte("10.0.0.7:8080"), nodes.WithProtection())
		testutil.Must(t, err)
		defer n.Close()
		testutil.Must(t, n.Start())
		testutil.Must(t, n.WaitForInitialCreate(ctx))
		node := n.ActualPath()
		created, deleted := "cache "+name+" created "+node+" 10.0.0.7:8080", "cache "+name+" deleted "+node+" 10.0.0.7:8080"
		p.mustEvent(t, created)

		before := c.SessionID()
		testutil.WaitBlocked(t, "nodes.(*PersistentNode).loop", nil) // its node watched: the expiry finds it there
		testutil.Must(t, proxy.ExpireSession(before))
		inOrder(t, p, "cache "+name+" ", created, deleted, created)
		if n.ActualPath() != node || c.SessionID() == before {
			t.Fatalf("the node is %s in session %x, was %s in %x", n.ActualPath(), c.SessionID(), node, before)
		}
	})

	// A Java GroupMember and a Go one in one group: each sees the other,
	// with its data, and the other's new data; a Java CuratorCache sees
	// the Go member's node leave and come back when the Go session
	// expires, and the Java member sees it in the group again. A member
	// made without a payload holds the local address, on either side.
	t.Run("group-member", func(t *testing.T) {
		t.Parallel()
		ctx := testutil.Context(t)
		group := serverPath(t) + "/group"
		proxy := zktest.NewProxy(t, server.Addr())
		c := newClient(t, proxy.Addr(), framework.WithSessionTimeout(time.Second))
		jm, cache := "group-"+t.Name(), "group-cache-"+t.Name()
		p.do(t, "-", "group", jm, jc, group, "java-1", "from-java")
		defer p.do(t, "-", "group-close", jm)
		g, err := nodes.NewGroupMember(c, group, "go-1", []byte("from-go"))
		testutil.Must(t, err)
		defer g.Close()
		testutil.Must(t, g.Start())

		both := func(want map[string]string) {
			t.Helper()
			testutil.Until(t, fmt.Sprintf("both members seeing %v", want), func() (bool, string) {
				got := map[string]string{}
				for id, data := range g.CurrentMembers() {
					got[id] = string(data)
				}
				java, err := p.GroupMembers(ctx, jm)
				if err != nil {
					return false, err.Error()
				}
				return maps.Equal(got, want) && maps.Equal(java, want), fmt.Sprintf("Go sees %v, Java %v", got, java)
			})
		}
		both(map[string]string{"java-1": "from-java", "go-1": "from-go"})
		testutil.Must(t, g.SetThisData(ctx, []byte("go-2")))
		p.do(t, "-", "group-set", jm, "java-2")
		both(map[string]string{"java-1": "java-2", "go-1": "go-2"})

		p.do(t, "-", "cache", cache, jc, group)
		defer p.do(t, "-", "cache-close", cache)
		p.mustEvent(t, "cache "+cache+" initialized")
		before := c.SessionID() // its node is there: Java saw its data
		testutil.Must(t, proxy.ExpireSession(before))
		node := group + "/go-1"
		inOrder(t, p, "cache "+cache+" ", "cache "+cache+" deleted "+node+" go-2", "cache "+cache+" created "+node+" go-2")
		both(map[string]string{"java-1": "java-2", "go-1": "go-2"})
		if _, st, err := gc.Exists(ctx, node); err != nil || st.EphemeralOwner != c.SessionID() || c.SessionID() == before {
			t.Fatalf("%s: owner %x, err %v; the Go session is %x, was %x", node, st.EphemeralOwner, err, c.SessionID(), before)
		}

		// Curator's default payload, and ours.
		jd := "group-default-" + t.Name()
		p.do(t, "-", "group", jd, jc, group, "java-default")
		defer p.do(t, "-", "group-close", jd)
		gd, err := nodes.NewGroupMember(gc, group, "go-default", nil)
		testutil.Must(t, err)
		defer gd.Close()
		testutil.Must(t, gd.Start())
		testutil.Must(t, gd.SetThisData(ctx, gd.ThisData())) // its node made
		testutil.Until(t, "the Java member's default payload", func() (bool, string) {
			_, ok := gd.CurrentMembers()["java-default"]
			return ok, "not seen yet"
		})
		java, golang := gd.CurrentMembers()["java-default"], gd.ThisData()
		if string(java) != string(golang) || len(golang) == 0 {
			t.Errorf("default payloads: Java's %q, Go's %q", java, golang)
		}
		t.Logf("the default payload, on either side: %q", golang)
	})

	// A shared value that each side sets and the other hears.
	t.Run("shared-value", func(t *testing.T) {
		t.Parallel()
		ctx := testutil.Context(t)
		path := serverPath(t) + "/value"
		name := "value-" + t.Name()
		p.do(t, "-", "shared-value", name, jc, path, "java-seed")
		v, err := recipes.NewSharedValue(gc, path, []byte("go-seed"))
		testutil.Must(t, err)
		heard := make(chan string, 10)
		v.AddListener(func(b []byte) { heard <- string(b) })
		testutil.Must(t, v.Start(ctx))
		defer v.Close()
		if got := string(v.Value()); got != "java-seed" {
			t.Fatalf("Go reads %q, want Java's seed", got)
		}
		ok, err := v.TrySetValue(ctx, v.VersionedValue(), []byte("from-go"))
		if err != nil || !ok {
			t.Fatalf("TrySetValue: %v %v", ok, err)
		}
		p.mustEvent(t, "value "+name+" from-go")
		p.do(t, "-", "shared-value-set", name, "from-java")
		for got := ""; got != "from-java"; {
			got = testutil.Recv(t, heard, "Go hearing Java's value")
		}
		if got := p.do(t, "-", "shared-value-get", name); got != "from-java" {
			t.Fatalf("Java reads %q", got)
		}
	})
}

// allPass waits for the two Go members' step and the Java members' calls,
// failing the test on an error or a Java false.
func allPass(t *testing.T, step string, goDone <-chan error, java ...*call) {
	t.Helper()
	for range 2 {
		testutil.Must(t, testutil.Recv(t, goDone, "a Go member's "+step))
	}
	for _, c := range java {
		if c.must(t) != "true" {
			t.Fatalf("a Java member's %s said false", step)
		}
	}
}

// inOrder waits until the peer's events that start with prefix include
// want, in that order (others may come between).
func inOrder(t *testing.T, p *peer, prefix string, want ...string) {
	t.Helper()
	ctx := testutil.Context(t)
	var seen []string
	for i, next := 0, 0; next < len(want); i++ {
		e, err := p.NextEvent(ctx, i)
		if err != nil {
			t.Fatalf("waiting for %q after %q: %v", want[next:], seen, err)
		}
		if !strings.HasPrefix(e.Text, prefix) {
			continue
		}
		seen = append(seen, e.Text)
		if e.Text == want[next] {
			next++
		}
	}
}
