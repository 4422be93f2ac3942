package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gocurator/curator/recipes"
)

// This file holds scenario 7: how long a leader election takes to hand
// leadership over, from the leader's Close or from the end of its session
// until the next candidate knows it leads.
func (e *env) scenario7(ctx context.Context) *scenarioResult {
	s := &scenarioResult{ID: 7, Title: "Leader hand-off, two candidates",
		Setup: fmt.Sprintf("two candidates of one LeaderLatch election, each on its own session; the leader leaves, by closing its latch or "+
			"by closing its client (which ends its session), and the other candidate takes over; then the one that left joins again "+
			"(after a session end, on a new session) and the next hand-off waits until the server shows its watch on the new leader's node "+
			"(wchp). Measured: from just before the Close until the other candidate learns that it leads "+
			"(gocurator: LeaderLatch.Await returns; Curator: its LeaderLatchListener.isLeader is called; the floor: its lock acquire returns); "+
			"%d hand-offs of each kind per repetition, alternating, %d repetitions", e.c.S7Handoff, e.c.Reps)}
	entries := goEntries([]goImpl{implFloor, implOurs}, e.s7Go)
	entries = append(entries, entry{nameCurator, func(ctx context.Context) (contender, error) {
		return e.startJava(ctx, "s7", e.javaArgs(7, fmt.Sprintf("handoffs=%d", e.c.S7Handoff))...)
	}})
	s.Rows = e.interleave(ctx, 7, entries, s7Row)
	s.Rows = append(s.Rows, row{Impl: nameZKLock, Status: "cannot: go-zookeeper has no leader election"})
	s.Notes = append(s.Notes,
		"The floor is the election on raw go-zookeeper as the ZooKeeper recipe describes it, the floor's mutex: the lowest ephemeral sequential node leads, the other watches its predecessor; leaving deletes the node (or closes the session).",
		"A Curator LeaderLatch's close deletes its node in the background; gocurator's Close returns once its node is deleted. Both are timed from the call, so either way the time includes the delete's round trip.")
	return s
}

func s7Row(reps []repResult) row {
	var closed, ended [][]time.Duration
	for _, rep := range reps {
		closed, ended = append(closed, rep.lat), append(ended, rep.latSession)
	}
	return row{Lat: latencyOf(closed), SessionLat: latencyOf(ended)}
}

// elector is a session that can run candidates of an election.
type elector interface {
	session
	// join starts a candidate of the election at path on this session.
	join(path string) (candidate, error)
}

// candidate is one candidate of an election.
type candidate interface {
	// led is closed once the candidate leads; ledAt says when it learned.
	led() <-chan struct{}
	ledAt() time.Time
	// node is the path of its node; known once it leads.
	node() string
	// resign leaves the election (the latch's Close).
	resign()
	// drop lets a candidate whose session has ended go.
	drop()
}

// leadSignal is when a candidate learned that it leads.
type leadSignal struct {
	done chan struct{}
	at   time.Time // written before done closes
}

func newLeadSignal() leadSignal { return leadSignal{done: make(chan struct{})} }

func (s *leadSignal) mark()                { s.at = time.Now(); close(s.done) }
func (s *leadSignal) led() <-chan struct{} { return s.done }
func (s *leadSignal) ledAt() time.Time     { return s.at }

// ---- gocurator: a LeaderLatch ----

type oursCandidate struct {
	leadSignal
	l      *recipes.LeaderLatch
	cancel context.CancelFunc
	ended  chan struct{}
}

func (s oursSession) join(path string) (candidate, error) {
	l, err := recipes.NewLeaderLatch(s.c, path)
	if err != nil {
		return nil, err
	}
	if err := l.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &oursCandidate{leadSignal: newLeadSignal(), l: l, cancel: cancel, ended: make(chan struct{})}
	go func() {
		defer close(c.ended)
		if l.Await(ctx) == nil {
			c.mark()
		}
	}()
	return c, nil
}

func (c *oursCandidate) node() string { return c.l.OurPath() }

func (c *oursCandidate) resign() {
	_ = c.l.Close()
	c.cancel()
	<-c.ended
}

func (c *oursCandidate) drop() { c.resign() }

// ---- the floor: the textbook election, the floor's mutex ----

type floorCandidate struct {
	leadSignal
	l      *rawLock
	cancel context.CancelFunc
	ended  chan struct{}
}

func (s floorSession) join(path string) (candidate, error) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &floorCandidate{leadSignal: newLeadSignal(), cancel: cancel, ended: make(chan struct{}),
		l: &rawLock{conn: s.c.Conn, base: path, prefix: "latch-", kind: rawExclusive}}
	go func() {
		defer close(c.ended)
		if c.l.Acquire(ctx) == nil {
			c.mark()
		}
	}()
	return c, nil
}

// node is read once led is closed, after Acquire set it.
func (c *floorCandidate) node() string { return c.l.node }

func (c *floorCandidate) resign() {
	c.cancel()
	<-c.ended // a candidate that does not lead deletes its node as it gives up
	if c.l.node != "" {
		_ = c.l.Release(context.Background())
	}
}

func (c *floorCandidate) drop() {
	c.cancel()
	<-c.ended
}

// ---- the contender: a leader and a follower, handing over ----

// s7Member is a session and its candidate.
type s7Member struct {
	sess elector
	cand candidate
}

type s7Contender struct {
	e                *env
	im               goImpl
	path             string
	leader, follower s7Member
}

// handoffLimit bounds each wait of scenario 7: for a hand-off, for a watch.
const handoffLimit = 30 * time.Second

func (e *env) s7Go(ctx context.Context, im goImpl) (contender, error) {
	c := &s7Contender{e: e, im: im, path: e.path(7, im.key)}
	err := c.join(ctx, &c.leader, true)
	if err == nil {
		err = waitLed(ctx, c.leader.cand)
	}
	if err == nil {
		err = c.join(ctx, &c.follower, true)
	}
	if err == nil {
		err = c.waitWatched(ctx)
	}
	for until := time.Now().Add(e.c.WarmGo); err == nil && time.Now().Before(until); {
		if _, err = c.handoff(ctx, false); err == nil {
			_, err = c.handoff(ctx, true)
		}
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// join makes m a candidate again, on a new session if fresh.
func (c *s7Contender) join(ctx context.Context, m *s7Member, fresh bool) error {
	if fresh {
		s, err := c.im.connect(ctx, c.e.servers)
		if err != nil {
			return err
		}
		el, ok := s.(elector)
		if !ok {
			s.Close()
			return fmt.Errorf("%w: %s has no election", errUnsupported, c.im.name())
		}
		m.sess = el
	}
	cand, err := m.sess.join(c.path)
	m.cand = cand
	return err
}

func waitLed(ctx context.Context, cand candidate) error {
	t := time.NewTimer(handoffLimit)
	defer t.Stop()
	select {
	case <-cand.led():
		return nil
	case <-t.C:
		return fmt.Errorf("no candidate led within %s", handoffLimit)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitWatched waits until the follower watches the leader's node, so that
// the next hand-off starts from a follower that waits.
func (c *s7Contender) waitWatched(ctx context.Context) error {
	node := c.leader.cand.node()
	if err := waitFor(ctx, handoffLimit, func() (bool, error) { return watched(c.e.servers, node) }); err != nil {
		return fmt.Errorf("the follower's watch on %s: %w", node, err)
	}
	return nil
}

// handoff makes the leader leave, by its latch's Close or by closing its
// session, and returns the time until the follower knows that it leads;
// then the one that left joins again as the follower.
func (c *s7Contender) handoff(ctx context.Context, bySession bool) (time.Duration, error) {
	old, next := &c.leader, &c.follower
	start := time.Now()
	if bySession {
		old.sess.Close()
	} else {
		old.cand.resign()
	}
	if err := waitLed(ctx, next.cand); err != nil {
		return 0, err
	}
	took := next.cand.ledAt().Sub(start)
	if bySession {
		old.cand.drop()
		old.cand, old.sess = nil, nil
	} else {
		old.cand = nil
	}
	c.leader, c.follower = *next, *old
	if err := c.join(ctx, &c.follower, bySession); err != nil {
		return 0, err
	}
	return took, c.waitWatched(ctx)
}

func (c *s7Contender) rep(ctx context.Context) (repResult, error) {
	var r repResult
	for range c.e.c.S7Handoff {
		for _, bySession := range []bool{false, true} {
			d, err := c.handoff(ctx, bySession)
			if err != nil {
				return repResult{}, err
			}
			if bySession {
				r.latSession = append(r.latSession, d)
			} else {
				r.lat = append(r.lat, d)
			}
		}
	}
	return r, nil
}

func (c *s7Contender) close() {
	for _, m := range []*s7Member{&c.follower, &c.leader} {
		if m.cand != nil {
			m.cand.resign()
		}
		if m.sess != nil {
			m.sess.Close()
		}
	}
}
