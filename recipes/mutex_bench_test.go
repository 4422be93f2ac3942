package recipes

import (
	"context"
	"strconv"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// Benchmarks of the mutex against the package's shared test server. They
// measure the library's own cost per operation (time, allocations) on top of
// ZooKeeper's round trips; cmd/gocurator-bench compares whole scenarios with
// Curator and the floor.

// One handle, no contention: acquire + release, i.e. create, list, check
// and delete. Reports the server packets sent per cycle as zkpackets/op.
func BenchmarkMutexAcquireRelease(b *testing.B) {
	ctx := context.Background()
	base := testutil.Path(b)
	testutil.CleanupTree(b, server.Addr(), base)
	h := mustMutex(b, newClient(b, ""), base).NewHandle()
	// the first cycle creates the parents; keep it out of the measure
	if err := h.Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	if err := h.Release(ctx); err != nil {
		b.Fatal(err)
	}
	acquireReleaseLoop(ctx, b, h)
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

// acquireReleaseLoop is the measured loop of the mutex benchmarks: it
// acquires and releases h, and reports the server packets sent per cycle
// as zkpackets/op. It returns the cycles run and that figure.
func acquireReleaseLoop(ctx context.Context, b *testing.B, h *Handle) (int, float64) {
	p0 := packetsSent(b)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := h.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if err := h.Release(ctx); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	if n == 0 {
		return 0, 0
	}
	perOp := float64(packetsSent(b)-p0) / float64(n)
	b.ReportMetric(perOp, "zkpackets/op")
	return n, perOp
}
