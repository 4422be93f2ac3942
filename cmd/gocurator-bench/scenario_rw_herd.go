package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// This file holds scenario 3: the herd of a read-write lock (server packets
// per writer release) and the time to drain a queue of writers and readers.
//
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

func (e *env) scenario3(ctx context.Context) *scenarioResult {
	pattern := s3Pattern(e.c.S3Reader, e.c.S3Group)
	writers := 0
	for _, w := range pattern {
		if w {
			writers++
		}
	}
	s := &scenarioResult{ID: 3, Title: "Read-write lock: writers and readers interleaved",
		Setup: fmt.Sprintf("queue W R×%d W R×%d … (%d writers, %d readers, each its own session), formed in order while the first writer holds; "+
			"then the first writer releases and each participant releases as soon as it acquires. Measured from that release until the last "+
			"participant has released: server packets sent (mntr zk_packets_sent delta, replies and watch notifications) and wall time; "+
			"%d repetitions after one unmeasured; per acquisition = / %d, per writer release = / %d",
			e.c.S3Group, e.c.S3Group, writers, e.c.S3Reader, e.c.Reps, len(pattern)-1, writers)}
	entries := goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (contender, error) {
		return e.s3Go(ctx, im, pattern)
	})
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s3", e.javaArgs(3, fmt.Sprintf("readers=%d", e.c.S3Reader), fmt.Sprintf("group=%d", e.c.S3Group))...)
	}})
	s.Rows = e.interleave(ctx, 3, entries, s3Row)
	s.Rows = append(s.Rows, row{Impl: nameZKLock, Status: "cannot: go-zookeeper has no read-write lock"})
	s.Notes = append(s.Notes,
		"Curator's readers watch the FIRST writer in the queue, so every writer release wakes every reader still queued (the herd). The floor's readers, as the ZooKeeper recipe says, watch the nearest writer before them.")
	return s
}

func s3Row(reps []repResult) row {
	var r row
	for _, rep := range reps {
		r.RepPacketsPerAcq = append(r.RepPacketsPerAcq, float64(rep.packets)/float64(rep.acquisitions))
		r.RepDrain = append(r.RepDrain, rep.drain)
		r.Participants, r.Writers = rep.participants, rep.wrote
	}
	r.PacketsPerAcq = median(r.RepPacketsPerAcq)
	if r.Writers > 0 {
		r.PacketsPerWriter = r.PacketsPerAcq * float64(r.Participants-1) / float64(r.Writers)
	}
	r.Drain = medianDuration(r.RepDrain)
	return r
}

type s3Contender struct {
	e        *env
	im       goImpl
	pattern  []bool
	sessions []session
	closeAll func()
	admin    *rawConn
	n        int
}

func (e *env) s3Go(ctx context.Context, im goImpl, pattern []bool) (contender, error) {
	// fail early, before opening sessions, if the recipe is missing
	probe, err := im.connect(ctx, e.servers)
	if err != nil {
		return nil, err
	}
	_, _, err = probe.ReadWrite(e.path(3, im.key) + "/probe")
	probe.Close()
	if err != nil {
		return nil, err
	}
	ss, closeAll, err := connectAll(ctx, im, e.servers, len(pattern))
	if err != nil {
		return nil, err
	}
	admin, err := connectRaw(ctx, e.servers)
	if err != nil {
		closeAll()
		return nil, err
	}
	c := &s3Contender{e: e, im: im, pattern: pattern, sessions: ss, closeAll: closeAll, admin: admin}
	if _, err := c.rep(ctx); err != nil { // unmeasured, as the Java side
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *s3Contender) close() {
	c.admin.close()
	c.closeAll()
}

func (c *s3Contender) rep(ctx context.Context) (repResult, error) {
	path := fmt.Sprintf("%s/r%d", c.e.path(3, c.im.key), c.n)
	c.n++
	owners := make([]owner, len(c.pattern))
	writers := 0
	for i, sess := range c.sessions {
		rd, wr, err := sess.ReadWrite(path)
		if err != nil {
			return repResult{}, err
		}
		if c.pattern[i] {
			owners[i] = wr()
			writers++
		} else {
			owners[i] = rd()
		}
	}
	packets, drain, err := c.e.s3Rep(ctx, c.admin, owners, path)
	if err != nil {
		return repResult{}, err
	}
	return repResult{packets: packets, drain: drain, acquisitions: len(owners) - 1, participants: len(owners), wrote: writers}, nil
}

// s3Rep forms the queue of owners in order and drains it; it returns the
// server packets sent and the time of the drain.
func (e *env) s3Rep(ctx context.Context, admin *rawConn, owners []owner, path string) (int64, time.Duration, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch0, err := counter(e.servers, "zk_watch_count")
	if err != nil {
		return 0, 0, err
	}
	firstHeld, gate := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel(errors.New("scenario 3 ended"))
	for i, o := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := o.Acquire(ctx); err != nil {
				cancel(fmt.Errorf("participant %d: %w", i, err))
				return
			}
			if i == 0 {
				close(firstHeld)
				select {
				case <-gate:
				case <-ctx.Done():
				}
			}
			if err := o.Release(context.WithoutCancel(ctx)); err != nil {
				cancel(fmt.Errorf("participant %d: release: %w", i, err))
			}
		}()
		if i == 0 {
			select {
			case <-firstHeld:
			case <-ctx.Done():
				return 0, 0, context.Cause(ctx)
			case <-time.After(30 * time.Second):
				return 0, 0, errors.New("the first writer did not acquire")
			}
			continue
		}
		// the next participant queues only once this one's node exists
		if err := waitFor(ctx, 30*time.Second, func() (bool, error) {
			kids, _, err := admin.Children(path)
			return len(kids) >= i+1, err
		}); err != nil {
			return 0, 0, fmt.Errorf("participant %d did not queue: %w", i, err)
		}
	}
	if err := waitFor(ctx, 30*time.Second, func() (bool, error) {
		n, err := counter(e.servers, "zk_watch_count")
		return n-watch0 >= int64(len(owners)-1), err
	}); err != nil {
		return 0, 0, fmt.Errorf("waiters did not set their watches: %w", err)
	}
	p0, err := counter(e.servers, "zk_packets_sent")
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	close(gate)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		return 0, 0, errors.New("the queue did not drain")
	}
	drain := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return 0, 0, err
	}
	time.Sleep(100 * time.Millisecond) // as the Java side: let background work reach the server
	p1, err := counter(e.servers, "zk_packets_sent")
	if err != nil {
		return 0, 0, err
	}
	return p1 - p0, drain, nil
}
