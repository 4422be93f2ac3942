package main

import (
	"context"
	"fmt"
	"time"
)

// scenario1 measures the latency of an uncontended mutex acquire + release
// on one session, and the server packets each costs. This file holds it,
// its Go contender and its row.
func (e *env) scenario1(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 1, Title: "Uncontended mutex acquire + release, one client",
		Setup: fmt.Sprintf("one session, one lock path, %d acquire+release cycles per repetition, %d repetitions; the latency of each whole cycle",
			e.c.S1Ops, e.c.Reps)}
	entries := goEntries([]goImpl{implFloor, implOurs, implZKLock}, e.s1Go)
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s1", e.javaArgs(1, fmt.Sprintf("ops=%d", e.c.S1Ops))...)
	}})
	s.Rows = e.interleave(ctx, 1, entries, s1Row)
	return s
}

type s1Contender struct {
	e    *env
	sess session
	o    owner
}

func (e *env) s1Go(ctx context.Context, im goImpl) (contender, error) {
	sess, err := im.connect(ctx, e.servers)
	if err != nil {
		return nil, err
	}
	mk, err := sess.Mutex(e.path(1, im.key))
	if err != nil {
		sess.Close()
		return nil, err
	}
	c := &s1Contender{e: e, sess: sess, o: mk()}
	for until := time.Now().Add(e.c.WarmGo); time.Now().Before(until); {
		if err := cycleOf(c.o)(ctx); err != nil {
			c.close()
			return nil, err
		}
	}
	return c, nil
}

func (c *s1Contender) close() { c.sess.Close() }

func (c *s1Contender) rep(ctx context.Context) (repResult, error) {
	p0, err := counter(c.e.servers, "zk_packets_sent")
	if err != nil {
		return repResult{}, err
	}
	lat := make([]time.Duration, c.e.c.S1Ops)
	for i := range lat {
		t := time.Now()
		if err := c.o.Acquire(ctx); err != nil {
			return repResult{}, err
		}
		if err := c.o.Release(ctx); err != nil {
			return repResult{}, err
		}
		lat[i] = time.Since(t)
	}
	p1, err := counter(c.e.servers, "zk_packets_sent")
	if err != nil {
		return repResult{}, err
	}
	return repResult{lat: lat, packets: p1 - p0}, nil
}

func s1Row(reps []repResult) row {
	var r row
	var packets, ops int64
	var lats [][]time.Duration
	for _, rep := range reps {
		lats = append(lats, rep.lat)
		packets += rep.packets
		ops += int64(len(rep.lat))
	}
	r.Lat = latencyOf(lats)
	if ops > 0 {
		r.PacketsPerOp = float64(packets) / float64(ops)
	}
	return r
}
