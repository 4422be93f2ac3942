package compat_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// eventCount waits until the peer has printed text n times (ever).
func eventCount(ctx context.Context, t testing.TB, p *peer, text string, n int) {
	t.Helper()
	seen := 0
	for i := 0; ; i++ {
		e, err := p.NextEvent(ctx, i)
		if err != nil {
			t.Fatalf("waiting for %q the %d. time: %v; events %q", text, n, err, p.EventTexts())
		}
		if e.Text == text {
			if seen++; seen == n {
				return
			}
		}
	}
}

// javaParticipants asks the peer for an election's participants, as
// "<id>:<isLeader>" each.
func javaParticipants(t testing.TB, p *peer, name string) string {
	t.Helper()
	reply := p.do(t, "-", "election-participants", name)
	_, list, _ := strings.Cut(reply, " ")
	return list
}

// goParticipants is the same from Go's side.
func goParticipants(t testing.TB, e interface {
	Participants(context.Context) ([]recipes.Participant, error)
}) string {
	t.Helper()
	ps, err := e.Participants(testutil.Context(t))
	testutil.Must(t, err)
	var parts []string
	for _, x := range ps {
		parts = append(parts, fmt.Sprintf("%s:%v", x.ID, x.IsLeader))
	}
	return strings.Join(parts, " ")
}

// Go and Java Curator 5.4 LeaderLatches in one election: both see the same
// leader and the same participants with their ids, and leadership passes
// from Java to Go (Java's latch closes), from Go to Go (close), from Go to
// Java (the Go leader's session expires), and from Java to Go again (the
// Java process is killed).
func TestLeaderLatchWithJava(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := serverPath(t)
	p := startPeer(t, "latch")
	p.client(t, "jc", server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	gc, gx := newClient(t, ""), newClient(t, proxy.Addr())
	raw := testutil.Connect(t, server.Addr())

	p.do(t, "-", "latch", "j1", "jc", base, "id=java-1")
	p.do(t, "-", "latch-start", "j1")
	p.mustEvent(t, "leader j1 true")
	g1 := mustLatch(t, gx, base, "go-1")
	g2 := mustLatch(t, gc, base, "go-2")
	for i, l := range []*recipes.LeaderLatch{g1, g2} {
		testutil.Must(t, l.Start())
		defer l.Close()
		testutil.WaitChildren(t, raw, base, i+2)
	}
	const want = "java-1:true go-1:false go-2:false"
	if got := javaParticipants(t, p, "j1"); got != want {
		t.Fatalf("Java sees %q, want %q", got, want)
	}
	if got := goParticipants(t, g2); got != want {
		t.Fatalf("Go sees %q, want %q", got, want)
	}
	if l, err := g1.Leader(ctx); err != nil || l != (recipes.Participant{ID: "java-1", IsLeader: true}) {
		t.Fatalf("Go's leader %v, %v", l, err)
	}
	if g1.HasLeadership() || g2.HasLeadership() {
		t.Fatal("a Go latch leads while Java does")
	}

	p.do(t, "-", "latch-close", "j1")
	testutil.Must(t, g1.Await(ctx)) // Java → Go
	if got := p.do(t, "-", "election-leader", "j1"); got != "go-1:true" {
		t.Fatalf("Java's latch says the leader is %q", got)
	}
	p.do(t, "-", "latch", "j2", "jc", base, "id=java-2")
	p.do(t, "-", "latch-start", "j2")
	testutil.WaitChildren(t, raw, base, 3)
	testutil.Must(t, proxy.ExpireSession(gx.SessionID())) // Go → Go, by expiry
	testutil.Must(t, g2.Await(ctx))
	// go-1's node went with its session: it queues again, with a node of
	// its new session, behind java-2. It then leaves, so that the killed
	// Java candidate below can lead.
	testutil.WaitChildren(t, raw, base, 3)
	if got := goParticipants(t, g2); got != "go-2:true java-2:false go-1:false" {
		t.Fatalf("after go-1's expiry, Go sees %q, want go-1 queued again behind java-2", got)
	}
	testutil.Must(t, g1.Close())
	testutil.Must(t, g2.Close()) // Go → Java, by close
	p.mustEvent(t, "leader j2 true")
	if got := javaParticipants(t, p, "j2"); !strings.HasPrefix(got, "java-2:true") {
		t.Fatalf("Java sees %q, want java-2 leading", got)
	}

	// Java → Go, by a killed process: its session expires on the server.
	k := startPeer(t, "latch-killed")
	k.client(t, "kc", server.Addr(), "session=2000")
	k.do(t, "-", "latch", "k", "kc", base, "id=java-killed")
	p.do(t, "-", "latch-close", "j2")
	k.do(t, "-", "latch-start", "k")
	k.mustEvent(t, "leader k true")
	g3 := mustLatch(t, gc, base, "go-3")
	testutil.Must(t, g3.Start())
	defer g3.Close()
	k.Kill()
	testutil.Must(t, g3.Await(ctx))
}

// Go and Java Curator 5.4 LeaderSelectors in one election: one leader at a
// time, in queue order, with the ids Curator reports; each hands over when
// its leadership function returns (Go) or its takeLeadership does (Java),
// and an auto-requeued selector leads again.
func TestLeaderSelectorWithJava(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := serverPath(t)
	java, golang := sides(t, "selector")
	p, gc := java.p, golang.gc
	raw := testutil.Connect(t, server.Addr())

	p.do(t, "-", "selector", "js", "jc", base, "id=java", "autorequeue=true")
	p.do(t, "-", "selector-start", "js")
	p.mustEvent(t, "leader js true")
	gs, goLeads, goReturn := startGoSelector(t, gc, base, "go")
	testutil.WaitChildren(t, raw, base, 2)
	const want = "java:true go:false"
	if got := javaParticipants(t, p, "js"); got != want {
		t.Fatalf("Java sees %q, want %q", got, want)
	}
	if got := goParticipants(t, gs); got != want {
		t.Fatalf("Go sees %q, want %q", got, want)
	}
	if gs.HasLeadership() {
		t.Fatal("Go leads while Java does")
	}

	p.do(t, "-", "selector-release", "js") // Java → Go; Java queues again
	select {
	case <-goLeads:
	case <-ctx.Done():
		t.Fatal("Go did not lead after Java")
	}
	p.mustEvent(t, "leader js false")
	testutil.WaitChildren(t, raw, base, 2)
	if got := p.do(t, "-", "election-leader", "js"); got != "go:true" {
		t.Fatalf("Java says the leader is %q", got)
	}
	if p.do(t, "-", "selector-has", "js") != "false" {
		t.Fatal("Java says it leads while Go does")
	}
	close(goReturn) // Go → Java
	eventCount(ctx, t, p, "leader js true", 2)
	if gs.HasLeadership() {
		t.Fatal("Go still leads after its function returned")
	}
	p.do(t, "-", "selector-close", "js")
	p.do(t, "-", "selector-release", "js")
}

// startGoSelector starts a Go LeaderSelector with participant id on c at
// base, closed when the test ends. Each term of its leadership sends on
// leads, and lasts until ret is closed (or leadership ends).
func startGoSelector(t testing.TB, c *framework.Client, base, id string) (s *recipes.LeaderSelector, leads <-chan struct{}, ret chan struct{}) {
	t.Helper()
	led := make(chan struct{}, 1)
	ret = make(chan struct{})
	s, err := recipes.NewLeaderSelector(c, base, func(ctx context.Context) error {
		led <- struct{}{}
		select {
		case <-ret:
		case <-ctx.Done():
		}
		return nil
	}, recipes.WithParticipantID(id))
	testutil.Must(t, err)
	testutil.Must(t, s.Start())
	t.Cleanup(func() { s.Close() })
	return s, led, ret
}

func mustLatch(t testing.TB, c *framework.Client, path, id string) *recipes.LeaderLatch {
	t.Helper()
	l, err := recipes.NewLeaderLatch(c, path, recipes.WithParticipantID(id))
	testutil.Must(t, err)
	return l
}

// A Go latch leading under the Session policy keeps its leadership through
// a blip of T/2 (T = 4 s, the client idle but for its pings, black-holed
// just after a ping went to the server), as a Java Curator leader keeps
// its own: the Java candidate waiting behind it never leads, and both
// languages see the Go latch lead all along. Before the client kept its
// own clock, the Go client gave its session up at such a blip and the
// leadership went to Java (a hand-off gap of about a second).
func TestGoLeaderKeepsLeadershipThroughABlipWithJava(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := serverPath(t)
	const T = 4 * time.Second
	p := startPeer(t, "latch-blip")
	p.client(t, "jc", server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	gc := newClient(t, proxy.Addr(), framework.WithSessionTimeout(T), framework.WithErrorPolicy(state.SessionErrorPolicy{}),
		framework.WithListener(rec))
	raw := testutil.Connect(t, server.Addr())

	g := mustLatch(t, gc, base, "go-1")
	testutil.Must(t, g.Start())
	defer g.Close()
	testutil.Must(t, g.Await(ctx))
	p.do(t, "-", "latch", "j1", "jc", base, "id=java-1")
	p.do(t, "-", "latch-start", "j1")
	testutil.WaitChildren(t, raw, base, 2)
	session := gc.SessionID()

	testutil.Must(t, proxy.WaitRequests(ctx, zktest.OpPing, proxy.Requests(zktest.OpPing)+12))
	proxy.BlackHole()
	blip := time.NewTimer(T / 2) // the fault's length: the scenario, not a wait for the library
	<-blip.C
	proxy.Restore()
	rec.WaitFor(ctx, t, state.Reconnected)
	if err := rec.Equal(state.Connected, state.Suspended, state.Reconnected); err != nil {
		t.Fatal(err)
	}
	if gc.SessionID() != session {
		t.Fatalf("the blip changed the Go client's session from %x to %x", session, gc.SessionID())
	}
	if err := g.Err(); err != nil {
		t.Fatalf("the Go latch lost its leadership in a blip of T/2: %v", err)
	}
	if got := javaParticipants(t, p, "j1"); got != "go-1:true java-1:false" {
		t.Fatalf("Java sees %q, want go-1 leading all along", got)
	}
	if p.HasEvent("leader j1 true") {
		t.Fatalf("the Java candidate led during the Go leader's blip; its events %q", p.EventTexts())
	}
}
