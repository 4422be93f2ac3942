package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"
)

// sampleReport is a report as a full run would make it, with made-up
// numbers: gocurator beats Curator everywhere but misses the floor target
// in scenario 1, and its read-write lock and semaphore are not there.
func sampleReport() *report {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	return &report{
		Generated: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), Elapsed: 4 * time.Minute, Counts: fullCounts(),
		Machine:   machine{CPU: "Test CPU", NumCPU: 2, MemTotal: "24.0 GiB", OS: "linux/amd64", Kernel: "6.1"},
		GoVersion: "go1.26", GoZKVersion: "v1.0.4", Revision: "abc123", ZKServerVersion: "3.8.0",
		ServerSetup: "throwaway", JavaVersion: "17.0.15", CuratorVersion: "5.4.0", ZKClientVersion: "3.8.0",
		LoadStart: "0.10, 0.20, 0.30", LoadEnd: "1.00, 0.50, 0.40",
		Scenarios: []*scenarioResult{
			{ID: 1, Title: "Uncontended", Setup: "one session", Rows: []row{
				{Impl: nameFloor, Lat: latency{P50: ms(1), P99: ms(2), RepP50: []time.Duration{ms(1)}, RepP99: []time.Duration{ms(2)},
					RepMax: []time.Duration{ms(3)}, RepSlow: []int{0}}, PacketsPerOp: 3},
				{Impl: nameOurs, Lat: latency{P50: ms(1.5), P99: ms(2.4), RepP50: []time.Duration{ms(1.5)}, RepP99: []time.Duration{ms(2.4)},
					RepMax: []time.Duration{ms(2500)}, RepSlow: []int{4}}, PacketsPerOp: 4},
				{Impl: nameZKLock, Lat: latency{P50: ms(1.1), P99: ms(2.2)}, PacketsPerOp: 3},
				{Impl: nameCurator, Lat: latency{P50: ms(2), P99: ms(4)}, PacketsPerOp: 3},
			}},
			{ID: 2, Title: "Hot mutex", Setup: "8 sessions", Rows: []row{
				{Impl: nameFloor, Rate: 400, RepRates: []float64{400}},
				{Impl: nameOurs, Rate: 300, RepRates: []float64{300}},
				{Impl: nameCurator, Rate: 100, RepRates: []float64{100}},
			}, Sweep: []sweepPoint{
				{Sessions: 1, Rows: []row{{Impl: nameFloor, Rate: 500, RepRates: []float64{500}}, {Impl: nameOurs, Rate: 450, RepRates: []float64{450}},
					{Impl: nameCurator, Status: "failed: boom"}}},
				{Sessions: 8, Rows: []row{{Impl: nameFloor, Rate: 400, RepRates: []float64{400}}, {Impl: nameOurs, Rate: 300, RepRates: []float64{300}},
					{Impl: nameCurator, Rate: 100, RepRates: []float64{100}}}},
			}},
			{ID: 3, Title: "RW", Setup: "queue", Rows: []row{
				{Impl: nameFloor, PacketsPerAcq: 3, PacketsPerWriter: 11.6, Drain: ms(50), Participants: 67, Writers: 17},
				{Impl: nameOurs, Status: "not measured: recipe not in package recipes yet: InterProcessReadWriteLock"},
				{Impl: nameCurator, PacketsPerAcq: 20, PacketsPerWriter: 77.6, Drain: ms(700), Participants: 67, Writers: 17},
			}},
			{ID: 4, Title: "Semaphore", Setup: "3 leases", Rows: []row{
				{Impl: nameFloor, Rate: 1500}, {Impl: nameOurs, Rate: 440}, {Impl: nameCurator, Rate: 300},
			}},
			{ID: 5, Title: "Many paths", Setup: "200 paths", Rows: []row{
				{Impl: nameFloor, Rate: 1000}, {Impl: nameOurs, Rate: 900}, {Impl: nameCurator, Status: "failed: boom"},
			}},
			{ID: 7, Title: "Leader hand-off", Setup: "two candidates", Rows: []row{
				{Impl: nameFloor, Lat: latency{P50: ms(0.6), P99: ms(2)}, SessionLat: latency{P50: ms(1.2), P99: ms(3)}},
				{Impl: nameOurs, Lat: latency{P50: ms(0.4), P99: ms(2), RepP50: []time.Duration{ms(0.4)}, RepP99: []time.Duration{ms(2)},
					RepMax: []time.Duration{ms(150)}, RepSlow: []int{1}}, SessionLat: latency{P50: ms(5), P99: ms(6)}},
				{Impl: nameCurator, Lat: latency{P50: ms(1.8), P99: ms(8)}, SessionLat: latency{P50: ms(4), P99: ms(100)}},
			}},
			{ID: 6, Title: "Waiters", Setup: "10000", Rows: []row{
				{Impl: nameFloor, Waiters: 10000, HeapPerWaiter: 1200, StackPerWaiter: 4000, FIFO: true, FIFODetail: "all 10000 acquired in queue order"},
				{Impl: nameOurs, Waiters: 10000, Setup: 2300 * time.Millisecond, HeapPerWaiter: 2048, StackPerWaiter: 8192, FIFO: true, FIFODetail: "all 10000 acquired in queue order"},
			}},
		},
	}
}

func render(r *report) string {
	var b bytes.Buffer
	r.write(&b)
	return b.String()
}

func TestReportHeaderAndTables(t *testing.T) {
	out := render(sampleReport())
	if !strings.HasPrefix(out, generatedLine+"\n") {
		t.Fatalf("the report must open with the generated-file line; it opens with %q", strings.SplitN(out, "\n", 2)[0])
	}
	for _, want := range []string{
		"DO NOT EDIT BY HAND",
		"| CPU | Test CPU, 2 logical CPUs |",
		"| Curator | 5.4.0 (ZooKeeper client 3.8.0) |",
		"0.10, 0.20, 0.30 at the start",
		// summary: ours/Curator and ours/floor of the p50
		"| 1 | p50 latency of acquire+release (lower is better) | 1.50 ms | 2.00 ms | 1.00 ms | 1.10 ms | 0.75× | 1.50× |",
		"| 2 | acquisitions per second, one hot mutex (higher is better) | 300 | 100 | 400 | — | 3.00× | 0.75× |",
		"| 6 | heap per waiting handle (lower is better) | 2.00 KiB | — | 1.17 KiB | — | — | 1.71× |",
		// scenario sections
		"## Scenario 1: Uncontended",
		"| gocurator | 1.50 ms | 2.40 ms | 0.75× | 0.60× | 1.50× | 1.20× | 4.00 | 2.50 s | 4 | 1.50 ms; 2.40 ms |",
		"| 1 | slowest acquire+release, all repetitions (lower is better) | 2.50 s | — | 3.00 ms | — | — | 833.33× |",
		"| 1 | acquire+release cycles over 100 ms, all repetitions | 4 | 0 | 0 | 0 | — | — |",
		"- gocurator: not measured: recipe not in package recipes yet: InterProcessReadWriteLock.",
		"- Curator 5.4 (Java): failed: boom.",
		"| gocurator | 10000 | 2.00 KiB | 8.00 KiB | 1.71× |",
		// scenario 7
		"| 7 | median leader hand-off after the leader's Close (lower is better) | 400 µs | 1.80 ms | 600 µs | — | 0.22× | 0.67× |",
		"| gocurator | the leader's Close | 400 µs | 2.00 ms | 0.22× | 0.25× | 0.67× | 1.00× | 150.0 ms | 1 | 400 µs; 2.00 ms |",
		"| gocurator | its session's end | 5.00 ms | 6.00 ms | 1.25× | 0.06× | 4.17× | 2.00× |",
		"| hand-off after | p50 | p99 | p50 vs Curator | p99 vs Curator | p50 vs floor | p99 vs floor | max per repetition | hand-offs > 100 ms per repetition |",
		// scenario 2's sweep, and the link to its plot
		"| Sessions | gocurator | Curator 5.4 (Java) | floor (raw go-zk) | ours / Curator | ours / floor |",
		"| 1 | 450 (450) | — | 500 (500) | — | 0.90× |",
		"| 8 | 300 (300) | 100 (100) | 400 (400) | 3.00× | 0.75× |",
		"![One hot mutex: acquisitions per second against sessions](hot-mutex-sessions.svg)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q\n--- report ---\n%s", want, out)
		}
	}
	if strings.Contains(out, "WARNING: JAVA") {
		t.Error("Java was measured, yet the report warns that it was not")
	}
}

func TestReportTargets(t *testing.T) {
	got := map[string]string{}
	for _, tg := range sampleReport().targets() {
		got[tg.Text] = tg.Status
	}
	for text, want := range map[string]string{
		"p50 ≤ 1.05 × the floor's p50":        "MISSED", // 1.5 ms vs 1.0 ms
		"p50 below Curator's":                 "met",
		"leases per second ≥ 1.5 × Curator's": "MISSED", // 440 vs 1.5 × 300
		"10000 waiters form their queue ≥ 10 × faster than before issue #17 (47.70 s)": "met", // 2.3 s
		"p99 ≤ 0.8 × Curator's p99":                                                       "met", // 2.4 vs 0.8 × 4
		"throughput ≥ 1.5 × Curator's":                                                    "met",
		"throughput ≥ 0.8 × the floor's":                                                  "met",
		"≤ 16 KiB (heap) per waiting handle, and all acquire in order":                    "met",
		"median leader hand-off after the leader's Close no slower than Curator's":        "met",
		"median leader hand-off after the leader's session ends no slower than Curator's": "MISSED", // 5 ms vs 4 ms
	} {
		if got[text] != want {
			t.Errorf("target %q: %q, want %q", text, got[text], want)
		}
	}
	for text, status := range got {
		if strings.HasPrefix(text, "server packets per writer release") && !strings.HasPrefix(status, "not measured: gocurator: recipe not in package recipes yet") {
			t.Errorf("scenario 3 target without gocurator's read-write lock: %q", status)
		}
	}
}

func TestReportWithoutJava(t *testing.T) {
	r := sampleReport()
	r.JavaOff = "javac not found"
	for _, s := range r.Scenarios {
		for i := range s.Rows {
			if s.Rows[i].Impl == nameCurator {
				s.Rows[i] = row{Impl: nameCurator, Status: "not measured: Java is off (javac not found)"}
			}
		}
	}
	out := render(r)
	if !strings.Contains(out, "**WARNING: JAVA CURATOR WAS NOT MEASURED: javac not found.") {
		t.Error("no loud note that Java was not measured")
	}
	for _, tg := range r.targets() {
		if strings.Contains(tg.Text, "Curator") && !strings.HasPrefix(tg.Status, "not measured") {
			t.Errorf("target %q against Curator is %q without Java", tg.Text, tg.Status)
		}
	}
}

func TestS3Bound(t *testing.T) {
	// 3 readers + 1 writer, each: 4 packets uncontended + notification + re-list
	if got := s3Bound(3, 4); got != 24 {
		t.Errorf("s3Bound(3, 4) = %v, want 24", got)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{fmtDur(0), "—"},
		{fmtDur(412 * time.Microsecond), "412 µs"},
		{fmtDur(1234 * time.Microsecond), "1.23 ms"},
		{fmtDur(12345 * time.Microsecond), "12.3 ms"},
		{fmtDur(2500 * time.Millisecond), "2.50 s"},
		{fmtBytes(512), "512 B"},
		{fmtBytes(16384), "16.00 KiB"},
		{fmtRatio(0.5), "0.50×"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestHotMutexPlot(t *testing.T) {
	r := sampleReport()
	p, ok := r.hotMutexPlot()
	if !ok {
		t.Fatal("no plot of scenario 2's sweep")
	}
	if len(p.X) != 2 || p.X[0] != 1 || p.X[1] != 8 || len(p.Series) != 3 {
		t.Fatalf("plot %+v", p)
	}
	for _, s := range p.Series {
		if s.Name == nameCurator && (!math.IsNaN(s.Y[0]) || s.Y[1] != 100) {
			t.Errorf("Curator's line %v, want [NaN 100]", s.Y)
		}
	}
	r.Scenarios = r.Scenarios[:1]
	if _, ok := r.hotMutexPlot(); ok {
		t.Error("a plot without scenario 2")
	}
	if strings.Contains(render(r), hotMutexSVG) {
		t.Error("the report links to a plot that is not written")
	}
}
