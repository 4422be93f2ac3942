package main

import (
	"context"
	"os"
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
	srv, ctx := benchServer(t)
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

// benchServer starts a standalone server, as the command runs it, for a
// test that skips in -short mode or without ZooKeeper; ctx bounds the
// test.
func benchServer(t *testing.T) (*zktest.Server, context.Context) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts ZooKeeper")
	}
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t, zktest.WithStandaloneMode(), zktest.WithContainerCheckInterval(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return srv, ctx
}
