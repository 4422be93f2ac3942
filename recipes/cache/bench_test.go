package cache

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
)

// BenchmarkFirstLoad starts a cache of a tree of 2,000 nodes (a root, 44
// children, 44 under each) and waits for its first load; per node. The
// bench (cmd/gocurator-bench, scenario 8) measures 10,000 beside Java's.
func BenchmarkFirstLoad(b *testing.B) {
	base := basePath(b)
	client := newClient(b, "")
	mk(b, base)
	nodes := 1 + 44*45
	var held uint64
	b.ResetTimer()
	for range b.N {
		before := liveHeap()
		c, err := New(client, base)
		if err != nil {
			b.Fatal(err)
		}
		<-c.Initialized()
		if c.Len() != nodes {
			b.Fatalf("%d nodes, want %d", c.Len(), nodes)
		}
		b.StopTimer()
		held += liveHeap() - before
		b.StartTimer()
		c.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nodes), "ns/node")
	b.ReportMetric(float64(held)/float64(b.N*nodes), "heap-B/node")
}

// liveHeap returns the bytes of the heap's live objects, after garbage
// collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// mk makes the benchmark's tree at base: a root, 44 children, 44 under each.
func mk(b testing.TB, base string) {
	raw := testutil.Connect(b, server.Addr())
	var ops []any
	ops = append(ops, &zk.CreateRequest{Path: base, Acl: openACL})
	for i := range 44 {
		p := fmt.Sprintf("%s/p%02d", base, i)
		ops = append(ops, &zk.CreateRequest{Path: p, Data: make([]byte, 32), Acl: openACL})
		for j := range 44 {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/c%02d", p, j), Data: make([]byte, 32), Acl: openACL})
		}
	}
	for len(ops) > 0 {
		n := min(len(ops), 500)
		if _, err := raw.Multi(ops[:n]...); err != nil {
			b.Fatal(err)
		}
		ops = ops[n:]
	}
}
