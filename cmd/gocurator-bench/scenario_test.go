package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/jvm"
	"github.com/gocurator/curator/internal/testutil"
)

// Every scenario, with tiny counts, against a real server: every row that
// must be measured has every measure of its scenario, the client's CPU
// time and the server's packets are counted, scenario 6's waiters acquire
// in order, the results survive JSON and render, and no JVM of ours is
// left behind.
func TestScenariosSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts ZooKeeper and JVMs")
	}
	if err := zktest.Available(); err != nil {
		t.Skip(err)
	}
	srv := zktest.NewServer(t, zktest.WithStandaloneMode(), zktest.WithContainerCheckInterval(time.Minute)) // as the command runs it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := &env{srv: srv, servers: srv.Addr(), base: "/smoke", logf: t.Logf, c: counts{
		Reps: 2, WarmGo: 50 * time.Millisecond, WarmJava: 300 * time.Millisecond, Duration: 200 * time.Millisecond,
		S2Client: 3, S2Sweep: []int{1, 2}, S3Reader: 6, S3Group: 2, S4Client: 4, S4Leases: 2, S5Paths: 10, S5Worker: 4, S6Wait: 50, S7Handoff: 3, S8Nodes: 200, S8Updates: 5,
	}}
	if _, err := jvm.Tool("javac"); err == nil {
		if e.java, err = newJavaRunner(ctx, &versions{}); err != nil {
			t.Fatal(err)
		}
	} else {
		e.javaOff = "javac not found"
	}
	res := &Results{Counts: e.c, JavaOff: e.javaOff, LoadStart: []float64{0, 0, 0}}
	for _, key := range allScenarios[:8] {
		s := e.scenario(ctx, key)
		res.Scenarios = append(res.Scenarios, s)
		for impl, r := range s.Rows {
			switch {
			case r.Status == "":
				for _, m := range s.Measures {
					if _, ok := r.Value[m.Key]; !ok {
						t.Errorf("scenario %s: %s has no %s", key, impl, m.Key)
					}
				}
				if r.Value["cpu"] <= 0 || r.Value["packets"] < 0 || (key != "3" && r.Value["packets"] == 0) {
					t.Errorf("scenario %s: %s: CPU %v and packets %v per acquisition", key, impl, r.Value["cpu"], r.Value["packets"])
				}
			case impl == nameCurator && (e.java == nil || key == "6"):
			default:
				t.Errorf("scenario %s: %s: %s", key, impl, r.Status)
			}
		}
	}
	if s2 := res.scenario("2"); len(s2.Sweep) != 3 {
		t.Errorf("scenario 2's sweep has %d points, want 1, 2 and 3 sessions", len(s2.Sweep))
	}
	if x, ok := res.scenario("1").Rows[nameLimit].Value["packets"]; !ok || x < 2 || x >= 3 {
		t.Errorf("the limit: %v packets per acquisition, want 2 (create, delete) and a ping at most", x)
	}
	if e.java != nil && e.java.versions.Curator == "" {
		t.Error("the JVMs did not report their versions")
	}
	b, err := json.Marshal(res)
	testutil.Must(t, err)
	var back Results
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := back.render(&out); err != nil || !strings.Contains(out.String(), "## Scenario 7: Leader hand-off") {
		t.Errorf("rendering the results: %v", err)
	}
	if left := ourChildren(t); len(left) > 0 {
		t.Errorf("CuratorBench JVMs left behind: %v", left)
	}
}

func TestS3Pattern(t *testing.T) {
	p := s3Pattern(50, 3)
	if len(p) != 67 || strings.Count(p, "W") != 17 || !strings.HasPrefix(p, "WRRRWRRRW") || !strings.HasSuffix(p, "WRR") {
		t.Errorf("pattern %s", p)
	}
}

func TestCheckFIFO(t *testing.T) {
	if err := checkFIFO(10, []int64{11, 15, 20}, 3); err != nil {
		t.Errorf("ascending tokens: %v", err)
	}
	for _, tc := range []struct {
		first  int64
		tokens []int64
	}{{10, []int64{11, 20, 15}}, {12, []int64{11, 15, 20}}, {10, []int64{11, 15}}} {
		if checkFIFO(tc.first, tc.tokens, 3) == nil {
			t.Errorf("first %d, tokens %v passed", tc.first, tc.tokens)
		}
	}
}
