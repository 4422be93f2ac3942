package recipes_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/rawlock"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// Benchmarks of the mutex against the package's shared test server. They
// measure the library's own cost per operation (time, allocations) on top of
// ZooKeeper's round trips; cmd/gocurator-bench compares whole scenarios with
// Curator and the floor.

// One handle, no contention: acquire + release, i.e. create, list, check
// and delete. Reports the server packets sent per cycle as zkpackets/op.
func BenchmarkMutexAcquireRelease(b *testing.B) {
	benchmarkAcquireRelease(b, context.Background())
}

// The same cycle with a context that can be cancelled, as callers' contexts
// usually are (a deadline, a signal): every ZooKeeper call must then be
// abandonable, which is what costs more than with context.Background.
func BenchmarkMutexAcquireReleaseCancellable(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	benchmarkAcquireRelease(b, ctx)
}

func benchmarkAcquireRelease(b *testing.B, ctx context.Context) {
	base := testutil.Path(b)
	testutil.CleanupTree(b, server.Addr(), base)
	h := mustMutex(b, newClient(b, ""), base).NewHandle()
	acquireRelease(b, ctx, h) // the first cycle creates the parents; keep it out of the measure
	acquireReleaseLoop(ctx, b, h)
}

// acquireRelease acquires and releases h, or fails tb.
func acquireRelease(tb testing.TB, ctx context.Context, h *recipes.Handle) {
	if err := h.Acquire(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		tb.Fatal(err)
	}
}

// floorCycle is the textbook lock's uncontended cycle on raw go-zookeeper
// (internal/rawlock) under the persistent node parent: create, get
// children, delete.
func floorCycle(tb testing.TB, conn *zk.Conn, parent string) {
	l := rawlock.Lock{Conn: conn, Dir: parent, Prefix: "lock-"}
	if err := l.Acquire(context.Background()); err != nil {
		tb.Fatal(err)
	}
	if err := l.Release(); err != nil {
		tb.Fatal(err)
	}
}

// floorParent makes the persistent nodes base and base/floor, for
// floorCycle, and returns the latter.
func floorParent(tb testing.TB, conn *zk.Conn, base string) string {
	floor := base + "/floor"
	for _, p := range []string{base, floor} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			tb.Fatal(err)
		}
	}
	return floor
}

// A handle that already holds the lock acquires again and releases: only
// its count moves, with no ZooKeeper traffic.
func BenchmarkMutexReentrantAcquire(b *testing.B) {
	ctx := context.Background()
	base := testutil.Path(b)
	testutil.CleanupTree(b, server.Addr(), base)
	h := mustMutex(b, newClient(b, ""), base).NewHandle()
	if err := h.Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	n, perOp := acquireReleaseLoop(ctx, b, h)
	// sessions' pings may fall in, but not a packet per acquisition
	if n >= 1000 && perOp > 0.01 {
		b.Errorf("a reentrant acquire made ZooKeeper traffic: %.3f packets per acquisition", perOp)
	}
	if err := h.Release(ctx); err != nil {
		b.Fatal(err)
	}
}

// packetsSent is the server's zk_packets_sent counter.
func packetsSent(b *testing.B) int64 {
	b.Helper()
	m, err := server.Mntr()
	if err != nil {
		b.Fatal(err)
	}
	n, err := strconv.ParseInt(m["zk_packets_sent"], 10, 64)
	if err != nil {
		b.Fatalf("zk_packets_sent %q: %v", m["zk_packets_sent"], err)
	}
	return n
}

// cpuTime is the CPU time (user and system) the test process has used.
// Per operation it is a steadier measure of the client's own cost than
// wall time, which the server's round trips and other load dominate.
func cpuTime(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportPerOp reports, per cycle of n, the server packets sent and the
// process's CPU time since p0 and c0, as zkpackets/op and cpu-ns/op. It
// returns the packets per cycle.
func reportPerOp(b *testing.B, n int, p0 int64, c0 time.Duration) float64 {
	b.Helper()
	if n == 0 {
		return 0
	}
	cpu := cpuTime(b) - c0
	perOp := float64(packetsSent(b)-p0) / float64(n)
	b.ReportMetric(perOp, "zkpackets/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(n), "cpu-ns/op")
	return perOp
}

// acquireReleaseLoop is the measured loop of the mutex benchmarks: it
// acquires and releases h (cycleLoop).
func acquireReleaseLoop(ctx context.Context, b *testing.B, h *recipes.Handle) (int, float64) {
	return cycleLoop(b, func() { acquireRelease(b, ctx, h) })
}

// cycleLoop runs cycle in the benchmark's loop, and reports the server
// packets sent and the CPU time used per cycle (reportPerOp). It returns
// the cycles run and the packets per cycle.
func cycleLoop(b *testing.B, cycle func()) (int, float64) {
	p0, c0 := packetsSent(b), cpuTime(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		cycle()
		n++
	}
	b.StopTimer()
	return n, reportPerOp(b, n, p0, c0)
}

// The floor: the textbook lock's uncontended cycle on raw go-zookeeper
// (create, get children, delete), to read the mutex's figures against.
func BenchmarkFloorCreateListDelete(b *testing.B) {
	base := testutil.Path(b)
	testutil.CleanupTree(b, server.Addr(), base)
	conn := testutil.Connect(b, server.Addr())
	floor := floorParent(b, conn, base)
	cycleLoop(b, func() { floorCycle(b, conn, floor) })
}

// The uncontended cycle of the mutex and of the floor, one after the other
// in turn, each timed: alternating cycle by cycle, a change of load on the
// machine falls on both alike, so the ratio of their medians is steadier
// than two benchmarks run one after the other. Reports both medians and
// their ratio (ours/floor).
func BenchmarkMutexAgainstFloorP50(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	base := testutil.Path(b)
	testutil.CleanupTree(b, server.Addr(), base)
	h := mustMutex(b, newClient(b, ""), base+"/ours").NewHandle()
	conn := testutil.Connect(b, server.Addr())
	floor := floorParent(b, conn, base)
	acquireRelease(b, ctx, h)
	var oursLat, floorLat []time.Duration
	for b.Loop() {
		t := time.Now()
		acquireRelease(b, ctx, h)
		oursLat = append(oursLat, time.Since(t))
		t = time.Now()
		floorCycle(b, conn, floor)
		floorLat = append(floorLat, time.Since(t))
	}
	b.StopTimer()
	o, f := median(oursLat), median(floorLat)
	b.ReportMetric(float64(o.Nanoseconds()), "ours-p50-ns")
	b.ReportMetric(float64(f.Nanoseconds()), "floor-p50-ns")
	b.ReportMetric(float64(o)/float64(f), "ours/floor")
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
