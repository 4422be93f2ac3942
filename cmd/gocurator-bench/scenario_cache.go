package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes/cache"
	"github.com/gocurator/curator/retry"
)

// This file holds scenario 8: a cache of a tree of counts.S8Nodes nodes
// (gocurator's recipes/cache against Curator's CuratorCache). Each
// repetition starts a cache of the tree, unmeasured from before: the time
// until it is initialized (the first load), the client CPU and the server
// packets of that load per node, the heap it holds per node (after a
// garbage collection), then counts.S8Updates changes of a leaf's data, one
// at a time, each timed from just before the write (on the cache's own
// client) until the cache's listener hears it; then the cache closes.
func (e *env) scenario8(ctx context.Context) *Scenario {
	tree := e.path("8", "tree")
	s := &Scenario{Key: "8", Title: "A cache of a " + thousands(s8Count(e.c.S8Nodes)) + "-node tree",
		Setup: fmt.Sprintf("One tree of %s nodes (a root, %d children, %d grandchildren under each; %d bytes of data each), "+
			"made once; each repetition starts a cache of it on a client already connected (gocurator: recipes/cache.New; Curator: "+
			"CuratorCache.build(client, path).start()) and measures its first load, until it says it is initialized, and the heap it then holds "+
			"(Go: runtime.MemStats.HeapAlloc; the JVM: the heap's used bytes; each after forced garbage collections), then %d changes of a "+
			"leaf's data made one at a time on the cache's own client, each from just before the write until the cache's listener hears it; "+
			"%d repetitions, each cache closed at its end",
			thousands(s8Count(e.c.S8Nodes)), s8Parents(e.c.S8Nodes), s8Children(e.c.S8Nodes), s8DataLen, e.c.S8Updates, e.c.Reps),
		Measures: append([]Measure{
			{Key: "load", Label: "first load of the tree", Unit: unitTime, Better: "lower"},
			{Key: "heap", Label: "heap held per node", Unit: unitBytes, Better: "lower"},
			{Key: "cpu", Label: "client CPU per node loaded", Unit: unitTime, Better: "lower"},
			{Key: "packets", Label: "server packets per node loaded", Unit: unitNumber, Better: "lower"},
		}, latencyMeasures("u", "update delivered (write to listener)")...),
		Notes: []string{"gocurator's cache reads each node once and lists only the nodes with children (a Stat's NumChildren); " +
			"Curator's CuratorCache reads each node and lists every one, leaves included: hence the server packets per node. " +
			"Both follow the tree from one persistent recursive watch, and read the node of each event."}}
	if err := e.s8Tree(ctx, tree); err != nil {
		s.Rows = map[string]Row{nameOurs: {Status: "failed: making the tree: " + err.Error()}}
		return s
	}
	entries := []entry{{impl: nameOurs, warm: e.c.WarmGo, setup: func(ctx context.Context) (*contender, error) { return e.s8Go(ctx, tree) }},
		e.javaEntry("8", "s8", func(p *javaProc) *contender { return e.s8Java(p) }, "tree="+tree,
			"parents="+strconv.Itoa(s8Parents(e.c.S8Nodes)), "children="+strconv.Itoa(s8Children(e.c.S8Nodes)),
			"updates="+strconv.Itoa(e.c.S8Updates))}
	e.interleave(ctx, s, entries, nil)
	return s
}

// thousands formats n with a comma between each three digits: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// s8DataLen is the bytes of data of each node of scenario 8's tree.
const s8DataLen = 32

// The shape of scenario 8's tree of about n nodes: a root, s8Parents(n)
// children, s8Children(n) children under each, s8Count(n) in all.
func s8Parents(n int) int  { return max(1, int(math.Sqrt(float64(n)))-1) }
func s8Children(n int) int { return max(0, (n-1-s8Parents(n))/s8Parents(n)) }
func s8Count(n int) int    { return 1 + s8Parents(n)*(1+s8Children(n)) }

// s8Tree makes the tree at path, in transactions of 500 creates.
func (e *env) s8Tree(ctx context.Context, path string) error {
	c, err := newRawConn(ctx, e.servers, nil)
	if err != nil {
		return err
	}
	defer c.close()
	data := []byte(strings.Repeat("x", s8DataLen))
	acl := zk.WorldACL(zk.PermAll)
	for i := 1; i <= len(path); i++ { // the parents, then the root
		if i == len(path) || path[i] == '/' {
			if _, err := c.Create(path[:i], data, 0, acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return err
			}
		}
	}
	var ops []any
	flush := func() error {
		if len(ops) == 0 {
			return nil
		}
		_, err := c.Multi(ops...)
		ops = ops[:0]
		return err
	}
	for i := range s8Parents(e.c.S8Nodes) {
		parent := fmt.Sprintf("%s/p%03d", path, i)
		ops = append(ops, &zk.CreateRequest{Path: parent, Data: data, Acl: acl})
		for j := range s8Children(e.c.S8Nodes) {
			ops = append(ops, &zk.CreateRequest{Path: fmt.Sprintf("%s/c%03d", parent, j), Data: data, Acl: acl})
			if len(ops) >= 500 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// s8Leaf is the i-th leaf updated: one per parent in turn (CuratorBench's
// S8 picks the same).
func s8Leaf(tree string, n, i int) string {
	p := s8Parents(n)
	return fmt.Sprintf("%s/p%03d/c%03d", tree, i%p, (i/p)%max(1, s8Children(n)))
}

// s8Go is gocurator's side: a client, and a repetition that starts a cache
// on it.
func (e *env) s8Go(ctx context.Context, tree string) (*contender, error) {
	client, err := framework.New(e.servers, retry.NewExponentialBackoff(100*time.Millisecond, 5), framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, err
	}
	if err := client.BlockUntilConnected(ctx); err != nil {
		client.Close()
		return nil, err
	}
	n := s8Count(e.c.S8Nodes)
	rep := func(ctx context.Context, _ int) (repResult, error) {
		r := repResult{values: map[string]float64{}}
		heap0 := liveHeap()
		cpu0, err := processCPU()
		if err != nil {
			return r, err
		}
		p0, err := e.counter("zk_packets_sent")
		if err != nil {
			return r, err
		}
		start := time.Now()
		c, err := cache.New(client, tree)
		if err != nil {
			return r, err
		}
		defer c.Close()
		select {
		case <-c.Initialized():
		case <-time.After(2 * time.Minute):
			return r, errors.New("the cache was not initialized within 2 minutes")
		case <-ctx.Done():
			return r, ctx.Err()
		}
		load := time.Since(start)
		cpu1, err := processCPU()
		if err != nil {
			return r, err
		}
		p1, err := e.counter("zk_packets_sent")
		if err != nil {
			return r, err
		}
		heap1 := liveHeap()
		if c.Len() != n {
			return r, fmt.Errorf("the cache holds %d nodes, want %d", c.Len(), n)
		}
		heard := make(chan string, 1)
		c.Listen(cache.ListenerFunc(func(ev cache.Event) {
			if ev.Type == cache.NodeChanged {
				select {
				case heard <- ev.Node.Path:
				default:
				}
			}
		}))
		var lat []time.Duration
		for i := range e.c.S8Updates {
			leaf := s8Leaf(tree, e.c.S8Nodes, i)
			t0 := time.Now()
			if _, err := client.SetData(ctx, leaf, []byte(strconv.Itoa(i)), -1); err != nil {
				return r, err
			}
			for p := ""; p != leaf; {
				select {
				case p = <-heard:
				case <-time.After(handoffLimit):
					return r, fmt.Errorf("the change of %s was not heard within %s", leaf, handoffLimit)
				}
			}
			lat = append(lat, time.Since(t0))
		}
		s8Values(r.values, n, load, cpu1-cpu0, heap1-heap0, p1-p0, lat)
		return r, nil
	}
	return &contender{rep: rep, close: func() { client.Close() }}, nil
}

// s8Values puts a repetition's measures into m: the load's time, and its
// CPU, heap and packets per node of the n, and the updates' latencies.
func s8Values(m map[string]float64, n int, load, cpu time.Duration, heap, packets int64, lat []time.Duration) {
	m["load"] = float64(load)
	m["cpu"] = float64(cpu) / float64(n)
	m["heap"] = float64(heap) / float64(n)
	m["packets"] = float64(packets) / float64(n)
	latencyValues(m, "u", lat)
}

// liveHeap returns the bytes of the heap's live objects, after a garbage
// collection (two: what the first finalizes goes with the second).
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// s8Java is Curator's side: the JVM's "load" (a CuratorCache started until
// initialized: nanoseconds, CPU nanoseconds, heap bytes held, nodes),
// "updates" (the nanoseconds of each update delivered) and "close".
func (e *env) s8Java(p *javaProc) *contender {
	n := s8Count(e.c.S8Nodes)
	rep := func(ctx context.Context, _ int) (repResult, error) {
		r := repResult{values: map[string]float64{}}
		p0, err := e.counter("zk_packets_sent")
		if err != nil {
			return r, err
		}
		answer, err := p.ask(ctx, "load")
		if err != nil {
			return r, err
		}
		p1, err := e.counter("zk_packets_sent")
		if err != nil {
			return r, err
		}
		var load, cpu, heap, size int64
		if _, err := fmt.Sscan(answer, &load, &cpu, &heap, &size); err != nil {
			return r, fmt.Errorf("CuratorBench s8 load: %q: %w", answer, err)
		}
		if size != int64(n) {
			return r, fmt.Errorf("the Curator cache holds %d nodes, want %d", size, n)
		}
		answer, err = p.ask(ctx, "updates")
		if err != nil {
			return r, err
		}
		var lat []time.Duration
		for _, f := range strings.Fields(answer) {
			x, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return r, fmt.Errorf("CuratorBench s8 updates: %q: %w", tail(answer, 200), err)
			}
			lat = append(lat, time.Duration(x))
		}
		if _, err := p.ask(ctx, "close"); err != nil {
			return r, err
		}
		s8Values(r.values, n, time.Duration(load), time.Duration(cpu), heap, p1-p0, lat)
		return r, nil
	}
	return &contender{rep: rep, close: p.close, cpu: p.cpu}
}
