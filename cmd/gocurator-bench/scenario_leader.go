package main

import (
	"context"
	"fmt"
	"time"
)

// This file holds scenario 7: how long a leader election takes to hand
// leadership over, from the leader's Close or from the end of its session
// until the next candidate knows it leads.
func (e *env) scenario7(ctx context.Context) *Scenario {
	s := &Scenario{Key: "7", Title: "Leader hand-off, two candidates",
		Setup: fmt.Sprintf("Two candidates of one LeaderLatch election, each on its own session; the leader leaves, by closing its latch or "+
			"by closing its client (which ends its session), and the other candidate takes over; then the one that left joins again "+
			"(after a session end, on a new session) and the next hand-off waits until the server shows its watch on the new leader's node "+
			"(wchp). Measured: from just before the Close until the other candidate learns that it leads "+
			"(gocurator's LeaderLatch.Await or Curator's LeaderLatch.await returns; the floor: its lock acquire returns); "+
			"%d hand-offs of each kind per repetition, alternating, %d repetitions; packets and CPU per hand-off", e.c.S7Handoff, e.c.Reps),
		Measures: append(append(latencyMeasures("", "hand-off after the leader's Close"),
			latencyMeasures("s", "hand-off after the leader's session ends")...), perMeasures("hand-off")...),
		Notes: []string{"The floor is the election on raw go-zookeeper as the ZooKeeper recipe describes it, the floor's mutex: " +
			"the lowest ephemeral sequential node leads, the other watches its predecessor; leaving deletes the node (or closes the session).",
			"A Curator LeaderLatch's close deletes its node in the background; gocurator's Close returns once its node is deleted. " +
				"Both are timed from the call, so either way the time includes the delete's round trip."}}
	entries := e.goEntries([]goImpl{implFloor, implOurs}, func(ctx context.Context, im goImpl) (*contender, error) {
		el, err := e.s7Go(ctx, im)
		if err != nil {
			return nil, err
		}
		return e.s7Contender(el), nil
	})
	entries = append(entries, e.javaEntry("7", "s7", func(p *javaProc) *contender {
		return e.s7Contender(elector{close: p.close, cpu: p.cpu,
			leader: func(ctx context.Context) (string, error) { return p.ask(ctx, "leader") },
			handoff: func(ctx context.Context, bySession bool) (time.Duration, error) {
				return p.askNs(ctx, map[bool]string{false: "handoff close", true: "handoff session"}[bySession])
			}})
	}))
	e.interleave(ctx, s, entries, func(r repResult, m map[string]float64) {
		latencyValues(m, "", r.lat)
		latencyValues(m, "s", r.latSession)
	})
	return s
}

// elector is an implementation's election of scenario 7, two candidates
// on sessions of their own: leader is the leader's node path; handoff
// makes the leader leave, by its latch's Close or by closing its session,
// and returns the time until the follower knew that it leads, once the one
// that left is a candidate again (after a session's end, on a new
// session); cpu reads the CPU time of the implementation's process.
type elector struct {
	leader  func(ctx context.Context) (string, error)
	handoff func(ctx context.Context, bySession bool) (time.Duration, error)
	cpu     func() (time.Duration, error)
	close   func()
}

// handoffLimit bounds each wait of scenario 7: for a hand-off, for a watch.
const handoffLimit = 30 * time.Second

// s7Contender is el as a contender whose repetition is counts.S7Handoff
// hand-offs of each kind, alternating. Each hand-off starts once the
// follower watches the leader's node (wchp).
func (e *env) s7Contender(el elector) *contender {
	handoff := func(ctx context.Context, bySession bool) (time.Duration, error) {
		node, err := el.leader(ctx)
		if err == nil {
			err = waitFor(ctx, handoffLimit, 2*time.Millisecond, func() (bool, error) { return e.watched(node) })
		}
		if err != nil {
			return 0, fmt.Errorf("the follower's watch on %s: %w", node, err)
		}
		return el.handoff(ctx, bySession)
	}
	return &contender{close: el.close, cpu: el.cpu, rep: func(ctx context.Context, _ int) (repResult, error) {
		var r repResult
		for range e.c.S7Handoff {
			d, err := handoff(ctx, false)
			if err != nil {
				return r, err
			}
			r.lat = append(r.lat, d)
			if d, err = handoff(ctx, true); err != nil {
				return r, err
			}
			r.latSession = append(r.latSession, d)
		}
		r.ops = int64(len(r.lat) + len(r.latSession))
		return r, nil
	}}
}

// s7Member is a session and its candidate.
type s7Member struct {
	sess *session
	cand *candidate
}

// s7Go is im's election: two members, a leader and a follower.
func (e *env) s7Go(ctx context.Context, im goImpl) (elector, error) {
	var leader, follower s7Member
	// join makes a candidate on sess, or on a new session for nil
	join := func(ctx context.Context, sess *session) (m s7Member, err error) {
		if sess == nil {
			if sess, err = im.connect(ctx, e.servers); err != nil {
				return m, err
			}
		}
		m.sess = sess
		m.cand, err = sess.join(e.path("7", im.key))
		return m, err
	}
	el := elector{cpu: processCPU, leader: func(context.Context) (string, error) { return leader.cand.node(), nil }}
	el.close = func() {
		for _, m := range []s7Member{follower, leader} {
			if m.cand != nil {
				m.cand.leave()
			}
			if m.sess != nil {
				m.sess.close()
			}
		}
	}
	el.handoff = func(ctx context.Context, bySession bool) (time.Duration, error) {
		old, next := leader, follower
		start := time.Now()
		if bySession {
			old.sess.close()
		} else {
			old.cand.leave()
		}
		if err := waitLed(ctx, next.cand); err != nil {
			return 0, err
		}
		took := next.cand.ledAt.Sub(start)
		leader, follower = next, s7Member{}
		if bySession {
			old.cand.leave() // what is left of it
			old.sess = nil
		}
		var err error
		follower, err = join(ctx, old.sess)
		return took, err
	}
	leader, err := join(ctx, nil)
	if err == nil {
		err = waitLed(ctx, leader.cand)
	}
	if err == nil {
		follower, err = join(ctx, nil)
	}
	if err != nil {
		el.close()
	}
	return el, err
}

func waitLed(ctx context.Context, c *candidate) error {
	select {
	case <-c.led:
		return nil
	case <-time.After(handoffLimit):
		return fmt.Errorf("no candidate led within %s", handoffLimit)
	case <-ctx.Done():
		return ctx.Err()
	}
}
