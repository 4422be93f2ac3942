package compat_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds the chaos suite's faults made to the ensemble: a member
// killed (a follower or the leader), the quorum lost for longer than the
// session timeout, a member partitioned from the others, a member slowed.

// killMember kills a follower or the leader (SIGKILL), leaves it down for
// f.length and restarts it, then waits for the quorum.
func (r *chaosRun) killMember(ctx context.Context, f fault) (string, error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	leader, err := r.ens.WaitForLeader(lctx)
	cancel()
	if err != nil {
		return "", err
	}
	members := r.ens.Members()
	victim := leader
	if f.kind == faultFollower {
		victim = (leader + 1 + f.target%2) % len(members)
	}
	m := members[victim]
	inside, done := r.holdOn(r.clients...)
	err = m.Kill()
	pause(ctx, 300*time.Millisecond) // for the disconnected holders to be told while they hold on
	done()
	if err != nil {
		return "", err
	}
	r.count(r.faults, f.kind)
	note := fmt.Sprintf("member %d, %d holders inside", m.ID(), inside)
	if f.kind == faultLeader {
		start := time.Now()
		lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		next, err := r.ens.WaitForLeader(lctx)
		if err != nil {
			return note, fmt.Errorf("no new leader: %w", err)
		}
		note += fmt.Sprintf(", member %d led after %v", members[next].ID(), time.Since(start).Round(time.Millisecond))
	}
	pause(ctx, f.length)
	start := time.Now()
	if err := m.Restart(); err != nil { // bounded by the ensemble's start timeout
		return note, fmt.Errorf("restart member %d: %w", m.ID(), err)
	}
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.ens.WaitForQuorum(qctx); err != nil {
		return note, err
	}
	return note + fmt.Sprintf(", back after %v", time.Since(start).Round(time.Millisecond)), nil
}

// quorumLoss kills two of the three members for f.length (two to three
// session timeouts), alone (the client lanes wait), then restarts them.
// No session can expire without a quorum, so each client decides alone that
// its session is gone. Checked: every holder inside is told within the
// notice bound; every client declares LOST before the quorum is back; once
// it is, no node of a session its client gave up outlives the server's own
// expiry (the session timeout, counted from the quorum's return) by more
// than a second (or, after a second election, initLimit more); every
// contender holds its lock again (measured, and bounded by
// chaosRecoveryBound). Overlaps are the guards' to see, as always.
func (r *chaosRun) quorumLoss(ctx context.Context, f fault) (string, error) {
	r.gate.Lock()
	defer r.gate.Unlock()
	members := r.ens.Members()
	survivor := f.target % len(members)
	before := map[string]int64{}
	for _, c := range r.clients {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		sid, err := c.sessionID(sctx)
		cancel()
		if err != nil {
			return "", err
		}
		before[c.name] = sid
	}
	inside, done := r.holdOn(r.clients...)
	cut := r.beginCut(r.clients)
	t0 := cut.at
	var killed []int
	for i, m := range members {
		if i != survivor {
			if err := m.Kill(); err != nil {
				done()
				return "", err
			}
			killed = append(killed, i)
		}
	}
	r.count(r.faults, faultQuorum)
	cut.check(r, func(c *chaosClient) []*zktest.Proxy { return c.prox }, "lost the quorum", false)
	done()
	pause(ctx, time.Until(t0.Add(f.length)))

	var findings []string
	for _, c := range r.clients {
		if _, ok := firstState(c, t0, "LOST"); !ok {
			findings = append(findings, fmt.Sprintf("%s did not declare its session LOST in %v without a quorum (states: %s)",
				c.name, time.Since(t0).Round(time.Millisecond), statesSince(c, t0)))
		}
	}
	// The quorum is back once one killed member is: then the other.
	if err := members[killed[0]].Restart(); err != nil {
		return "", fmt.Errorf("restart member %d: %w", members[killed[0]].ID(), err)
	}
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := r.ens.WaitForLeader(lctx); err != nil {
		return "", fmt.Errorf("no leader after the restart of member %d: %w", members[killed[0]].ID(), err)
	}
	q := time.Now()
	restartErr := make(chan error, 1)
	go func() { restartErr <- members[killed[1]].Restart() }()

	// Nodes of the sessions given up must go by the server's own expiry:
	// the session timeout from the quorum's return, which a second election
	// soon after (up to initLimit later) starts again; + 1 s.
	gaveUp := map[int64]string{}
	for _, c := range r.clients {
		if _, ok := firstState(c, t0, "LOST"); ok {
			gaveUp[before[c.name]] = c.name
		}
	}
	left, err := r.ephemeralsLeft(ctx, func(s int64) bool { return gaveUp[s] != "" }, q.Add(chaosSessionTimeout+chaosInitLimit+time.Second))
	expiry := time.Since(q)
	if err != nil {
		findings = append(findings, fmt.Sprintf("listing %s: %v", chaosBase, err))
	}
	for _, n := range left {
		findings = append(findings, fmt.Sprintf("%s of session 0x%x, which %s gave up, still there %v after the quorum came back",
			n.path, n.owner, gaveUp[n.owner], expiry.Round(time.Millisecond)))
	}

	// Every contender holds its lock again.
	recovery, stuck := r.awaitProgress(ctx, r.labels(), q, q.Add(chaosRecoveryBound))
	findings = append(findings, stuck...)

	if err := <-restartErr; err != nil {
		return "", fmt.Errorf("restart member %d: %w", members[killed[1]].ID(), err)
	}
	if err := r.ens.WaitForQuorum(lctx); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.quorumFindings = append(r.quorumFindings, findings...)
	r.nodeExpiry = max(r.nodeExpiry, expiry)
	r.recovery = max(r.recovery, recovery)
	r.mu.Unlock()
	return fmt.Sprintf("members %d and %d down for %v, %d holders inside; quorum back at +%v; "+
		"nodes of %d sessions given up gone %v after it; every contender held again %v after it",
		members[killed[0]].ID(), members[killed[1]].ID(), q.Sub(t0).Round(time.Millisecond), inside,
		q.Sub(t0).Round(time.Millisecond), len(gaveUp), expiry.Round(time.Millisecond),
		recovery.Round(time.Millisecond)), nil
}

// awaitProgress waits until every contender of labels has had a holding
// inside since since, or until deadline, and returns how long the last one
// took, and those that did not.
func (r *chaosRun) awaitProgress(ctx context.Context, labels []string, since, deadline time.Time) (time.Duration, []string) {
	for {
		worst, stuck := r.ref.progress(labels, since)
		if len(stuck) == 0 {
			return worst, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			sort.Strings(stuck)
			return time.Since(since), []string{fmt.Sprintf("contenders %s did not hold their locks within %v of the quorum's return (%s)",
				strings.Join(stuck, ","), deadline.Sub(since), dumpStacks("stuck"))}
		}
		pause(ctx, 50*time.Millisecond) // polling the progress notes
	}
}

// clientsOn returns the clients (not paused) connected to each member.
func (r *chaosRun) clientsOn() [][]*chaosClient {
	on := make([][]*chaosClient, len(r.ens.Members()))
	for _, c := range r.clients {
		if i := slices.Index(c.prox, c.currentProxy()); i >= 0 && !r.isPaused(c) {
			on[i] = append(on[i], c)
		}
	}
	return on
}

// viaMember gives a client's proxy to member i.
func viaMember(i int) func(*chaosClient) []*zktest.Proxy {
	return func(c *chaosClient) []*zktest.Proxy { return c.prox[i : i+1] }
}

// cutTarget picks, by pick, a member that clients are connected to, for a
// fault that cuts it off, and makes its clients' holders hold on (holdOn).
// That can take seconds, in which a client may move to another member, so
// it begins the cut (beginCut) with the clients still on the member then;
// if none is left, it picks again (5 times at most). The caller cuts the
// member off at once. done ends holding on.
func (r *chaosRun) cutTarget(pick int) (int, *cut, func()) {
	for attempt := 1; ; attempt++ {
		on := r.clientsOn()
		var busy []int
		for i, cs := range on {
			if len(cs) > 0 {
				busy = append(busy, i)
			}
		}
		i := pick % len(on)
		if len(busy) > 0 {
			i = busy[pick%len(busy)]
		}
		_, done := r.holdOn(on[i]...)
		if still := r.clientsOn()[i]; len(still) > 0 || attempt == 5 {
			return i, r.beginCut(still), done
		}
		done()
	}
}

// partitionMember cuts a member that clients are connected to off from the
// other two (on the quorum and election ports: between servers, not
// between clients and servers) for at least f.length. Checked: the member
// stops serving; each of its clients is told (its holders within the
// notice bound) and moves to another member while the partition lasts.
func (r *chaosRun) partitionMember(ctx context.Context, f fault) (string, error) {
	i, cut, done := r.cutTarget(f.target)
	defer done()
	m, on, t0 := r.ens.Members()[i], cut.clients, cut.at
	heal, err := r.ens.Partition(i)
	if err != nil {
		return "", err
	}
	defer heal()
	r.count(r.faults, faultPartition)
	// The member stops serving.
	var stopped time.Duration
	for {
		mode, err := m.Mode()
		if err == nil && mode != "leader" && mode != "follower" {
			stopped = time.Since(t0)
			break
		}
		if time.Since(t0) > 20*time.Second {
			return "", fmt.Errorf("member %d still serves (%q, %v) 20s after its partition", m.ID(), mode, err)
		}
		pause(ctx, 20*time.Millisecond) // polling the member
	}
	// Its clients are told (or keep their sessions), and move on while the
	// partition lasts.
	cut.check(r, viaMember(i), fmt.Sprintf("on partitioned member %d", m.ID()), false)
	done()
	var wg sync.WaitGroup
	moved := make([]error, len(on))
	for k, c := range on {
		ev, left := firstState(c, t0, "SUSPENDED", "LOST")
		if !left {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			if _, err := waitState(cctx, c, ev.at, "CONNECTED", "RECONNECTED"); err != nil {
				moved[k] = fmt.Errorf("%s did not move on from partitioned member %d in 20s: %w (states: %s)",
					c.name, m.ID(), err, statesSince(c, t0))
			}
		}()
	}
	wg.Wait()
	pause(ctx, time.Until(t0.Add(f.length)))
	heal()
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.ens.WaitForQuorum(qctx); err != nil {
		return "", fmt.Errorf("after healing member %d: %w", m.ID(), err)
	}
	if err := errors.Join(moved...); err != nil {
		return "", err
	}
	names := make([]string, len(on))
	for k, c := range on {
		names[k] = c.name
	}
	return fmt.Sprintf("member %d, stopped serving after %v; its clients [%s] moved on; partitioned %v",
		m.ID(), stopped.Round(time.Millisecond), strings.Join(names, " "), time.Since(t0).Round(time.Millisecond)), nil
}

// slowServer delays every packet between the clients and a member they are
// connected to by f.delay each way (a round trip past the clients' read
// timeout of two thirds of the session timeout, though the server hears
// every ping in time) for f.length. Checked: its clients go SUSPENDED (one
// at least, or the fault did not happen; a client whose connection never
// lapses rides it out, with nothing to be told), are told within the notice
// bound and come back.
func (r *chaosRun) slowServer(ctx context.Context, f fault) (string, error) {
	i, cut, done := r.cutTarget(f.target)
	defer done()
	m, on, t0 := r.ens.Members()[i], cut.clients, cut.at
	for _, c := range r.clients {
		c.prox[i].SetDelay(f.delay)
	}
	cut.check(r, viaMember(i), fmt.Sprintf("on slow member %d", m.ID()), true)
	done()
	pause(ctx, time.Until(t0.Add(f.length)))
	restored := time.Now()
	for _, c := range r.clients {
		c.prox[i].SetDelay(0)
	}
	var told, rode []string
	for _, c := range on {
		if _, suspended := firstState(c, t0, "SUSPENDED"); suspended {
			r.awaitReconnect(ctx, c, t0, restored)
			told = append(told, c.name)
		} else {
			rode = append(rode, c.name)
		}
	}
	// It happened if a client went SUSPENDED; if none did (or none was on
	// the member), the run's check of faults that did not happen says so.
	if len(told) > 0 {
		r.count(r.faults, faultSlow)
	}
	return fmt.Sprintf("member %d by %v for %v; its clients [%s] suspended, [%s] rode it out", m.ID(), f.delay, f.length,
		strings.Join(told, " "), strings.Join(rode, " ")), nil
}
