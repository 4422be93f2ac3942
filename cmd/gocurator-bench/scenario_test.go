package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/jvm"
)

// Every scenario, with tiny counts, against a real server: the rows that
// must be measured are, scenario 6's waiters acquire in order, and no JVM
// of ours is left behind.
func TestScenariosSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and JVMs")
	}
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t, zktest.WithContainerCheckInterval(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := &env{servers: srv.Addr(), base: "/smoke", logf: t.Logf, profileDir: t.TempDir(), c: counts{
		Reps: 2, WarmGo: 50 * time.Millisecond, WarmJava: 300 * time.Millisecond, S1Ops: 20, Duration: 200 * time.Millisecond,
		S2Client: 3, S2Sweep: []int{1, 2}, S3Reader: 6, S3Group: 2, S4Client: 4, S4Leases: 2, S5Paths: 10, S5Worker: 4, S6Wait: 50, S7Handoff: 3,
	}}
	if _, err := jvm.Tool("javac"); err == nil {
		j, err := newJavaRunner(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.java = j
	} else {
		e.javaOff = "javac not found"
	}
	rep := &report{Counts: e.c, JavaOff: e.javaOff}
	for _, f := range []func(context.Context) *scenarioResult{e.scenario1, e.scenario2, e.scenario3, e.scenario4, e.scenario5, e.scenario6, e.scenario7} {
		s := f(ctx)
		rep.Scenarios = append(rep.Scenarios, s)
		for _, r := range s.Rows {
			switch {
			case r.ok():
			case strings.HasPrefix(r.Status, "cannot: ") && r.Impl == nameZKLock && (s.ID == 3 || s.ID == 4 || s.ID == 7):
			case r.Impl == nameCurator && (e.java == nil || s.ID == 6):
			default:
				t.Errorf("scenario %d: %s: %s", s.ID, r.Impl, r.Status)
			}
		}
	}
	s1, s2, s6 := rep.scenario(1), rep.scenario(2), rep.scenario(6)
	if len(s2.Sweep) != 3 {
		t.Errorf("scenario 2's sweep has %d points, want 1, 2 and 3 sessions", len(s2.Sweep))
	}
	for _, pt := range s2.Sweep {
		for _, x := range pt.Rows {
			switch {
			case x.ok():
			case x.Impl == nameZKLock && pt.Sessions != e.c.S2Client && strings.HasPrefix(x.Status, "not measured"):
			case x.Impl == nameCurator && e.java == nil:
			default:
				t.Errorf("scenario 2 with %d sessions: %s: %s", pt.Sessions, x.Impl, x.Status)
			}
		}
	}
	if r, ok := s1.find(nameFloor); !ok || r.Lat.P50 <= 0 || r.Lat.P99 < r.Lat.P50 || r.Lat.Max() < r.Lat.P99 || r.PacketsPerOp < 3 {
		t.Errorf("scenario 1 floor row: %+v", r)
	}
	for _, impl := range []string{nameFloor, nameOurs} {
		if r, ok := s6.find(impl); !ok || !r.FIFO || r.Waiters != 50 {
			t.Errorf("scenario 6 %s: %+v", impl, r)
		}
	}
	for _, impl := range []string{nameFloor, nameOurs, nameCurator} {
		r, ok := rep.scenario(7).find(impl)
		if !ok && impl == nameCurator && e.java == nil {
			continue
		}
		if !ok || r.Lat.P50 <= 0 || r.SessionLat.P50 <= 0 || len(r.Lat.RepMax) != e.c.Reps {
			t.Errorf("scenario 7 %s: %+v", impl, r)
		}
	}
	if e.java != nil && e.java.curatorVersion == "" {
		t.Error("the JVMs did not report their versions")
	}
	var b bytes.Buffer
	rep.write(&b)
	if !strings.HasPrefix(b.String(), generatedLine) {
		t.Error("report does not open with the generated line")
	}
	profiles, _ := filepath.Glob(filepath.Join(e.profileDir, "s1-gocurator-rep*.cpu.pprof"))
	if len(profiles) != e.c.Reps {
		t.Errorf("profiles: %v", profiles)
	}
	if left := ourJVMs(t); len(left) > 0 {
		t.Errorf("CuratorBench JVMs left behind: %v", left)
	}
}
