package main

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"
)

// This file holds scenario 3: the herd of a read-write lock (server packets
// per writer release) and the time to drain a queue of writers and readers.

// s3Pattern is the queue: a writer, then group readers, ..., readers in all
// (true: a writer).
func s3Pattern(readers, group int) []bool {
	var w []bool
	for r := 0; r < readers; {
		w = append(w, true)
		for g := 0; g < group && r < readers; g, r = g+1, r+1 {
			w = append(w, false)
		}
	}
	return w
}

func (e *env) scenario3(ctx context.Context) *Scenario {
	pattern := s3Pattern(e.c.S3Reader, e.c.S3Group)
	s := &Scenario{Key: "3", Title: "Read-write lock: writers and readers interleaved",
		Setup: fmt.Sprintf("Queue W R×%d W R×%d … (%d readers, each participant on its own session), formed in order while the first writer holds; "+
			"then the first writer releases and each participant releases as soon as it acquires. Measured from that release until the last "+
			"participant has released: server packets sent (mntr zk_packets_sent delta, replies and watch notifications) and wall time; "+
			"the client's CPU time likewise (the queue formed, each participant has paid for its node and its watch; the drain wakes, "+
			"lists, acquires and releases); per acquisition: / %d; %d repetitions after one unmeasured",
			e.c.S3Group, e.c.S3Group, e.c.S3Reader, len(pattern)-1, e.c.Reps),
		Measures: []Measure{
			{Key: "perWriter", Label: "server packets per writer release", Unit: unitNumber, Better: "lower"},
			{Key: "perAcq", Label: "server packets per acquisition, in the drain", Unit: unitNumber, Better: "lower"},
			{Key: "drain", Label: "time to drain the queue", Unit: unitTime, Better: "lower"},
			{Key: "cpu", Label: "client CPU per acquisition, in the drain", Unit: unitTime, Better: "lower"},
		},
		Notes: []string{"Curator's readers watch the FIRST writer in the queue, so every writer release wakes every reader still queued (the herd). " +
			"The floor's readers, as the ZooKeeper recipe says, watch the nearest writer before them."}}
	entries := goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (*contender, error) {
		q, err := e.s3Go(ctx, im, pattern)
		if err != nil {
			return nil, err
		}
		return e.s3Contender(ctx, q, pattern)
	})
	entries = append(entries, e.javaEntry("3", "s3", func(ctx context.Context, p *javaProc) (*contender, error) {
		return e.s3Contender(ctx, rwQueue{close: p.close, cpu: p.cpu,
			form: func(ctx context.Context) error {
				answer, err := p.ask(ctx, "form")
				if err == nil && answer != "formed" {
					err = fmt.Errorf("CuratorBench form: %q", answer)
				}
				return err
			},
			drain: func(ctx context.Context) (time.Duration, error) {
				answer, err := p.ask(ctx, "drain")
				if err != nil {
					return 0, err
				}
				ns, err := strconv.ParseInt(answer, 10, 64)
				return time.Duration(ns), err
			}}, pattern)
	}, fmt.Sprintf("readers=%d", e.c.S3Reader), fmt.Sprintf("group=%d", e.c.S3Group)))
	e.interleave(ctx, s, entries, func(r repResult) map[string]float64 {
		acq := float64(r.ops - 1) // the first writer's was before the drain
		m := map[string]float64{"cpu": float64(r.drainCPU) / acq, "drain": float64(r.drain), "perAcq": float64(r.drainPackets) / acq}
		if r.writers > 0 {
			m["perWriter"] = float64(r.drainPackets) / float64(r.writers)
		}
		return m
	})
	s.Rows = append(s.Rows, Row{Impl: nameZKLock, Status: "cannot: go-zookeeper has no read-write lock"})
	return s
}

// rwQueue is an implementation's queue of scenario 3: form forms it on a
// new path, in order, while the first writer holds, and returns once every
// participant's node exists; drain makes the first writer release, waits
// until every participant has acquired and released (each as soon as it
// acquires) and 100 ms more for background work to reach the server, and
// returns the time from the release until the last participant had
// released; cpu reads the CPU time of the implementation's process.
type rwQueue struct {
	form  func(ctx context.Context) error
	drain func(ctx context.Context) (time.Duration, error)
	cpu   func() (time.Duration, error)
	close func()
}

// s3Contender runs one unmeasured repetition of q and returns it as a
// contender.
func (e *env) s3Contender(ctx context.Context, q rwQueue, pattern []bool) (*contender, error) {
	writers := 0
	for _, w := range pattern {
		if w {
			writers++
		}
	}
	c := &contender{close: q.close, cpu: q.cpu, rep: func(ctx context.Context, _ int) (repResult, error) {
		watch0, err := e.counter("zk_watch_count")
		if err == nil {
			err = q.form(ctx)
		}
		if err == nil {
			err = e.waitWatches(ctx, watch0, len(pattern)-1, 2*time.Millisecond, 30*time.Second)
		}
		if err != nil {
			return repResult{}, err
		}
		r := repResult{ops: int64(len(pattern)), writers: writers}
		p0, err := e.counter("zk_packets_sent")
		c0, err2 := q.cpu()
		if err = cmp.Or(err, err2); err == nil {
			r.drain, err = q.drain(ctx)
		}
		c1, err2 := q.cpu()
		p1, err3 := e.counter("zk_packets_sent")
		r.drainCPU, r.drainPackets = c1-c0, p1-p0
		return r, cmp.Or(err, err2, err3)
	}}
	if _, err := c.rep(ctx, 0); err != nil { // unmeasured
		c.close()
		return nil, err
	}
	return c, nil
}

// s3Go is im's queue: a session per participant.
func (e *env) s3Go(ctx context.Context, im goImpl, pattern []bool) (rwQueue, error) {
	ss, closeAll, err := connectAll(ctx, im, e.servers, len(pattern))
	if err != nil {
		return rwQueue{}, err
	}
	admin, err := newRawConn(ctx, e.servers)
	if err != nil {
		closeAll()
		return rwQueue{}, err
	}
	var (
		n      int
		first  owner
		queued *queue
	)
	q := rwQueue{cpu: processCPU}
	q.close = func() {
		if queued != nil {
			queued.close()
		}
		admin.close()
		closeAll()
	}
	q.form = func(ctx context.Context) error {
		path := fmt.Sprintf("%s/r%d", e.path("3", im.key), n)
		n++
		owners := make([]owner, len(pattern))
		for i, sess := range ss {
			rd, wr, err := sess.readWrite(path)
			if err != nil {
				return err
			}
			if owners[i] = rd(); pattern[i] {
				owners[i] = wr()
			}
		}
		first = owners[0]
		if err := first.Acquire(ctx); err != nil {
			return fmt.Errorf("the first writer: %w", err)
		}
		queued = newQueue(ctx)
		for i, o := range owners[1:] {
			queued.add(o)
			// the next participant queues only once this one's node exists
			if err := waitFor(queued.ctx, 30*time.Second, 2*time.Millisecond, func() (bool, error) {
				kids, _, err := admin.Children(path)
				return len(kids) >= i+2, err
			}); err != nil {
				return fmt.Errorf("participant %d did not queue: %w", i+1, err)
			}
		}
		return nil
	}
	q.drain = func(context.Context) (time.Duration, error) {
		defer func() { queued.close(); queued = nil }()
		d, err := queued.drain(first, time.Minute)
		time.Sleep(100 * time.Millisecond) // as the Java side: let background work reach the server
		return d, err
	}
	return q, nil
}
