package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/jvm"
)

// TestMain lets the test binary be the latency section's proxy process, as
// the command is (servingProxy).
func TestMain(m *testing.M) {
	servingProxy()
	os.Exit(m.Run())
}

// The latency section, with tiny counts, behind the proxy's process: a
// round trip through it takes at least the two delays, the rows break
// their requests down by kind (the floor's uncontended cycle: one create,
// one listing, one delete), and the process is gone afterwards.
func TestLatencySectionSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and JVMs")
	}
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t, zktest.WithStandaloneMode(), zktest.WithContainerCheckInterval(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := &env{srv: srv, servers: srv.Addr(), base: "/latency", logf: t.Logf, javaOff: "not in this test", c: counts{
		Reps: 2, WarmGo: 50 * time.Millisecond, WarmJava: 300 * time.Millisecond, Duration: 200 * time.Millisecond,
		S2Client: 3, S4Client: 4, S4Leases: 2, S5Paths: 10, S5Worker: 4,
	}}
	if _, err := jvm.Tool("javac"); err == nil {
		var err error
		if e.java, err = newJavaRunner(ctx, &versions{}); err != nil {
			t.Fatal(err)
		}
		e.javaOff = ""
	}
	res := &Results{}
	if err := e.runBehindProxy(ctx, srv, []string{"1d", "2d"}, res); err != nil {
		t.Fatal(err)
	}
	if l := res.Latency; l == nil || l.RTTProxied < 2*oneWayDelay || l.RTTDirect <= 0 {
		t.Errorf("the round trips measured: %+v", l)
	}
	for _, s := range res.Scenarios {
		for impl, r := range s.Rows {
			if r.Status != "" {
				if impl != nameCurator || e.java != nil {
					t.Errorf("scenario %s: %s: %s", s.Key, impl, r.Status)
				}
				continue
			}
			for _, m := range s.Measures {
				if _, ok := r.Value[m.Key]; !ok {
					t.Errorf("scenario %s: %s has no %s", s.Key, impl, m.Key)
				}
			}
		}
	}
	floor := res.scenario("1d").Rows[nameFloor].Value
	for kind, want := range map[string]float64{"create": 1, "children": 1, "delete": 1, "read": 0, "notify": 0} {
		if got := floor["req:"+kind]; got != want {
			t.Errorf("the floor's uncontended cycle: %v requests %s per acquisition, want %v", got, kind, want)
		}
	}
	if e.proxy != nil {
		t.Error("the proxy is still the env's")
	}
	if left := ourChildren(t); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}

// -timeline, with few cycles, on a real server: every Go implementation's
// cycle is laid out step by step from the frames its connection logged
// (the floor's listing after its create's reply, gocurator's before it).
func TestTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t, zktest.WithStandaloneMode())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out strings.Builder
	if err := runTimeline(ctx, &out, srv.Addr(), "/timeline", 200, 50); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{
		nameFloor + ": 200 cycles", nameLimit + ": 200 cycles", nameOurs + ": 200 cycles",
		"create's reply read → listing written", // the floor's
		"create written → listing written",      // gocurator's
		"delete written → delete's reply read",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
}

// The drain's timeline, with few waiters, on a real server: every
// hand-off of each implementation is a delete, its notification, and the
// next delete.
func TestDrainTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t, zktest.WithStandaloneMode())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := &env{srv: srv, servers: srv.Addr(), base: "/drain", logf: t.Logf}
	var out strings.Builder
	if err := e.drainTimeline(ctx, &out, 30); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{nameFloor + ": 30 waiters drained", nameOurs + ": 30 waiters drained", "notification read", "the median hand-off:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the drain's timeline lacks %q", want)
		}
	}
}
