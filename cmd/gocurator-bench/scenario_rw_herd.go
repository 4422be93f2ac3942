package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// This file holds scenario 3: the herd of a read-write lock (server packets
// per writer release) and the time to drain a queue of writers and readers.

// s3Pattern is the queue: a writer (W), then group readers (R), ...,
// readers in all.
func s3Pattern(readers, group int) string {
	var b strings.Builder
	for r := 0; r < readers; {
		b.WriteByte('W')
		for g := 0; g < group && r < readers; g, r = g+1, r+1 {
			b.WriteByte('R')
		}
	}
	return b.String()
}

func (e *env) scenario3(ctx context.Context) *Scenario {
	pattern := s3Pattern(e.c.S3Reader, e.c.S3Group)
	s := &Scenario{Key: "3", Title: "Read-write lock: writers and readers interleaved",
		Setup: fmt.Sprintf("Queue W R×%d W R×%d … (%d readers, each participant on its own session), formed in order while the first writer holds; "+
			"then the first writer releases and each participant releases as soon as it acquires. Measured from that release until the last "+
			"participant has released: server packets sent (mntr zk_packets_sent delta, replies and watch notifications) and wall time; "+
			"the client's CPU time likewise (the queue formed, each participant has paid for its node and its watch; the drain wakes, "+
			"lists, acquires and releases); per acquisition: / %d; %d repetitions after %s of warm-up (JVM: %s)",
			e.c.S3Group, e.c.S3Group, e.c.S3Reader, len(pattern)-1, e.c.Reps, e.c.WarmGo, e.c.WarmJava),
		Measures: append([]Measure{
			{Key: "perWriter", Label: "server packets per writer release", Unit: unitNumber, Better: "lower"},
			{Key: "drain", Label: "time to drain the queue", Unit: unitTime, Better: "lower"},
		}, perMeasures("acquisition, in the drain")...),
		Notes: []string{"Curator's readers watch the FIRST writer in the queue, so every writer release wakes every reader still queued (the herd). " +
			"The floor's readers, as the ZooKeeper recipe says, watch the nearest writer before them."}}
	entries := e.goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (*contender, error) {
		q, err := e.s3Go(ctx, im, pattern)
		if err != nil {
			return nil, err
		}
		return e.s3Contender(q, im.key, pattern), nil
	})
	entries = append(entries, e.javaEntry("3", "s3", func(p *javaProc) *contender {
		return e.s3Contender(rwQueue{close: p.close, cpu: p.cpu,
			add: func(ctx context.Context, path string, i int) error {
				_, err := p.ask(ctx, fmt.Sprintf("add %s %d", path, i))
				return err
			},
			drain: func(ctx context.Context) (time.Duration, error) { return p.askNs(ctx, "drain") }}, "curator", pattern)
	}, "pattern="+pattern))
	e.interleave(ctx, s, entries, func(r repResult, m map[string]float64) {
		m["drain"] = float64(r.elapsed)
		m["perWriter"] = float64(r.packets) / float64(strings.Count(pattern, "W"))
	})
	return s
}

// rwQueue is an implementation's queue of scenario 3, each participant on
// a session of its own: add adds participant i (pattern[i]) to a queue on
// path: the first holds once add returns, the others queue on their own
// goroutines (threads) and release as soon as they acquire; drain makes
// the first release, waits until every participant has acquired and
// released, and returns the time that took; cpu reads the CPU time of the
// implementation's process.
type rwQueue struct {
	add   func(ctx context.Context, path string, i int) error
	drain func(ctx context.Context) (time.Duration, error)
	cpu   func() (time.Duration, error)
	close func()
}

// s3Contender is q as a contender whose form forms the queue on a new
// path, in order: each participant queues once the one before waits (the
// server counts its watch), so once its node exists.
func (e *env) s3Contender(q rwQueue, impl, pattern string) *contender {
	forms := 0
	return &contender{close: q.close, cpu: q.cpu,
		form: func(ctx context.Context) error {
			path := fmt.Sprintf("%s/r%d", e.path("3", impl), forms)
			forms++
			watch0, err := e.counter("zk_watch_count")
			for i := 0; err == nil && i < len(pattern); i++ {
				if err = q.add(ctx, path, i); err == nil {
					err = e.waitWatches(ctx, watch0, i, 2*time.Millisecond, 30*time.Second)
				}
			}
			return err
		},
		rep: func(ctx context.Context, _ int) (repResult, error) {
			d, err := q.drain(ctx)
			time.Sleep(100 * time.Millisecond)                              // let background work (watch removal) reach the server, and be counted
			return repResult{ops: int64(len(pattern) - 1), elapsed: d}, err // the first writer acquired before
		}}
}

// s3Go is im's queue.
func (e *env) s3Go(ctx context.Context, im goImpl, pattern string) (rwQueue, error) {
	ss, closeAll, err := connectAll(ctx, im, e.servers, len(pattern))
	if err != nil {
		return rwQueue{}, err
	}
	var (
		first  owner
		queued *queue
	)
	q := rwQueue{cpu: processCPU}
	q.close = func() {
		if queued != nil {
			queued.close()
		}
		closeAll()
	}
	q.add = func(ctx context.Context, path string, i int) error {
		rd, wr, err := ss[i].readWrite(path)
		if err != nil {
			return err
		}
		o := rd()
		if pattern[i] == 'W' {
			o = wr()
		}
		if i > 0 {
			queued.add(o)
			return context.Cause(queued.ctx) // an earlier participant's failure
		}
		first, queued = o, newQueue(ctx)
		return first.Acquire(ctx)
	}
	q.drain = func(context.Context) (time.Duration, error) {
		defer func() { queued.close(); queued = nil }()
		return queued.drain(first, time.Minute)
	}
	return q, nil
}
