package compat_test

import (
	"context"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// nextLeader receives the observer's next view and checks it: fresh, the
// leader id (none: ""), and, if node is not "", that node. It returns it.
func nextLeader(ctx context.Context, t testing.TB, views <-chan recipes.LeaderView, id, node, what string) recipes.LeaderView {
	t.Helper()
	var v recipes.LeaderView
	select {
	case got, ok := <-views:
		if !ok {
			t.Fatalf("%s: the observer's channel closed", what)
		}
		v = got
	case <-ctx.Done():
		t.Fatalf("%s: no view came; want leader %q", what, id)
	}
	if v.Stale || v.Err != nil || v.Leader.ID != id || v.Leader.IsLeader != (v.Node != "") || (id == "") != (v.Node == "") || node != "" && v.Node != node {
		t.Fatalf("%s: view %+v; want leader %q at %q, fresh", what, v, id, node)
	}
	return v
}

// A Go process that is no candidate observes a LeaderLatch election of
// Java and Go Curator candidates: it sees each leader as Java's own
// getLeader names it, as leadership passes from Java to Go (Java's latch
// closes) and from Go to Java (Go's closes), and not the candidates that
// queue behind the leader.
func TestObserveLeaderLatchWithJava(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := serverPath(t)
	p := startPeer(t, "observe-latch")
	p.client(t, "jc", server.Addr())
	obs, gc := newClient(t, ""), newClient(t, "")
	raw := testutil.Connect(t, server.Addr())
	views, err := recipes.ObserveLeaderLatch(ctx, obs, base)
	testutil.Must(t, err)
	nextLeader(ctx, t, views, "", "", "no candidate yet")

	p.do(t, "-", "latch", "j1", "jc", base, "id=java-1")
	p.do(t, "-", "latch-start", "j1")
	p.mustEvent(t, "leader j1 true")
	nextLeader(ctx, t, views, "java-1", "", "Java leads")
	g1 := mustLatch(t, gc, base, "go-1")
	testutil.Must(t, g1.Start())
	defer g1.Close()
	p.do(t, "-", "latch", "j2", "jc", base, "id=java-2")
	testutil.WaitChildren(t, raw, base, 2)
	p.do(t, "-", "latch-start", "j2")
	testutil.WaitChildren(t, raw, base, 3) // go-1 and java-2 queue behind java-1: no view

	p.do(t, "-", "latch-close", "j1") // Java → Go
	testutil.Must(t, g1.Await(ctx))
	nextLeader(ctx, t, views, "go-1", g1.OurPath(), "after Java's latch closed")
	if got := p.do(t, "-", "election-leader", "j2"); got != "go-1:true" {
		t.Fatalf("Java's getLeader says %q", got)
	}
	testutil.Must(t, g1.Close()) // Go → Java
	p.mustEvent(t, "leader j2 true")
	nextLeader(ctx, t, views, "java-2", "", "after Go's latch closed")
	if got := p.do(t, "-", "election-leader", "j2"); got != "java-2:true" {
		t.Fatalf("Java's getLeader says %q", got)
	}
	p.do(t, "-", "latch-close", "j2")
	nextLeader(ctx, t, views, "", "", "every candidate gone")
}

// A Go process that is no candidate observes a LeaderSelector election of
// Java and Go Curator candidates: Java leads, hands over to Go (its
// takeLeadership returns), and, auto-requeued, leads again once Go's
// function returns; the observer sees that new term of the same id as a
// view of its own (another node).
func TestObserveLeaderSelectorWithJava(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := serverPath(t)
	java, golang := sides(t, "observe-selector")
	p, gc := java.p, golang.gc
	obs := newClient(t, "")
	raw := testutil.Connect(t, server.Addr())
	views, err := recipes.ObserveLeaderSelector(ctx, obs, base)
	testutil.Must(t, err)
	nextLeader(ctx, t, views, "", "", "no candidate yet")

	p.do(t, "-", "selector", "js", "jc", base, "id=java", "autorequeue=true")
	p.do(t, "-", "selector-start", "js")
	p.mustEvent(t, "leader js true")
	first := nextLeader(ctx, t, views, "java", "", "Java leads")
	_, goLeads, goReturn := startGoSelector(t, gc, base, "go")
	testutil.WaitChildren(t, raw, base, 2) // Go queues behind Java: no view

	p.do(t, "-", "selector-release", "js") // Java → Go; Java queues again
	testutil.Recv(t, goLeads, "Go leading")
	nextLeader(ctx, t, views, "go", "", "after Java's takeLeadership returned")
	if got := p.do(t, "-", "election-leader", "js"); got != "go:true" {
		t.Fatalf("Java's getLeader says %q", got)
	}
	close(goReturn) // Go → Java, a new term
	eventCount(ctx, t, p, "leader js true", 2)
	again := nextLeader(ctx, t, views, "java", "", "after Go's function returned")
	if again.Node == first.Node {
		t.Fatalf("Java's second term at its first term's node %s", first.Node)
	}
	p.do(t, "-", "selector-close", "js")
	p.do(t, "-", "selector-release", "js")
	nextLeader(ctx, t, views, "", "", "every candidate gone")
}
