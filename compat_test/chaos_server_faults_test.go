package compat_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds the chaos suite's faults made to the ensemble: a member
// killed (a follower or the leader), the quorum lost for longer than the
// session timeout, a member partitioned from the others, a member slowed.

// leader waits (up to a minute) for a leader and returns its index.
func (r *chaosRun) leader(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return r.ens.WaitForLeader(ctx)
}

// restore restarts the members ms (none: it only waits), then waits (up to
// a minute) for the quorum.
func (r *chaosRun) restore(ctx context.Context, ms ...*zktest.Server) error {
	for _, m := range ms {
		if err := m.Restart(); err != nil { // bounded by the ensemble's start timeout
			return fmt.Errorf("restart member %d: %w", m.ID(), err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return r.ens.WaitForQuorum(ctx)
}

// killMember kills a follower or the leader (SIGKILL), leaves it down for
// f.length and restarts it, then waits for the quorum.
func (r *chaosRun) killMember(ctx context.Context, f fault) (string, error) {
	leader, err := r.leader(ctx)
	if err != nil {
		return "", err
	}
	members := r.ens.Members()
	m := members[leader]
	if f.kind == faultFollower {
		m = members[(leader+1+f.target%2)%len(members)]
	}
	x := r.holdOn(r.clients...)
	err = m.Kill()
	pause(ctx, 300*time.Millisecond) // for the disconnected holders to be told while they hold on
	x.done()
	if err != nil {
		return "", err
	}
	note := fmt.Sprintf("member %d, %d holders inside", m.ID(), x.held)
	if f.kind == faultLeader {
		start := time.Now()
		next, err := r.leader(ctx)
		if err != nil {
			return note, fmt.Errorf("no new leader: %w", err)
		}
		note += fmt.Sprintf(", member %d led after %v", members[next].ID(), time.Since(start).Round(time.Millisecond))
	}
	pause(ctx, f.length)
	start := time.Now()
	if err := r.restore(ctx, m); err != nil {
		return note, err
	}
	return note + fmt.Sprintf(", back after %v", time.Since(start).Round(time.Millisecond)), nil
}

// quorumLoss kills two of the three members for f.length, alone (the
// client lanes wait), then restarts them; checked as docs/guarantees.md
// says (no session expires without a quorum: each client gives it up).
func (r *chaosRun) quorumLoss(ctx context.Context, f fault) (string, error) {
	r.gate.Lock()
	defer r.gate.Unlock()
	before := map[string]int64{}
	for _, c := range r.clients {
		sid, err := c.sessionID(ctx)
		if err != nil {
			return "", err
		}
		before[c.name] = sid
	}
	x := r.holdOn(r.clients...)
	t0 := x.at
	var down []*zktest.Server
	for i, m := range r.ens.Members() {
		if i != f.target%3 {
			down = append(down, m)
			if err := m.Kill(); err != nil {
				x.done()
				return "", err
			}
		}
	}
	x.check(r, -1, "lost the quorum", false)
	x.done()
	pause(ctx, time.Until(t0.Add(f.length)))

	var findings []string
	gaveUp := map[int64]string{}
	for _, c := range r.clients {
		if _, ok := firstState(c, t0, "LOST"); ok {
			gaveUp[before[c.name]] = c.name
		} else {
			findings = append(findings, fmt.Sprintf("%s did not declare its session LOST in %v without a quorum (states: %s)",
				c.name, time.Since(t0).Round(time.Millisecond), statesSince(c, t0)))
		}
	}
	// The quorum is back once one killed member is: then the other.
	if err := down[0].Restart(); err != nil {
		return "", fmt.Errorf("restart member %d: %w", down[0].ID(), err)
	}
	if _, err := r.leader(ctx); err != nil {
		return "", fmt.Errorf("no leader after the restart of member %d: %w", down[0].ID(), err)
	}
	q := time.Now()
	restored := make(chan error, 1)
	go func() { restored <- r.restore(ctx, down[1]) }()

	// Nodes of the sessions given up must go by the server's own expiry:
	// the session timeout from the quorum's return, which a second election
	// soon after (up to initLimit later) starts again; + 1 s.
	left, err := r.ephemeralsLeft(ctx, func(s int64) bool { return gaveUp[s] != "" }, q.Add(chaosSessionTimeout+chaosInitLimit+time.Second))
	expiry := time.Since(q)
	if err != nil {
		findings = append(findings, fmt.Sprintf("listing %s: %v", chaosBase, err))
	}
	for _, n := range left {
		findings = append(findings, fmt.Sprintf("%s of session 0x%x, which %s gave up, still there %v after the quorum came back",
			n.path, n.owner, gaveUp[n.owner], expiry.Round(time.Millisecond)))
	}
	var recovery time.Duration
	var stuck []string
	if !poll(ctx, q.Add(chaosRecoveryBound), 50*time.Millisecond, func() bool {
		recovery, stuck = r.ref.progress(r.labels(), q)
		return len(stuck) == 0
	}) {
		slices.Sort(stuck)
		recovery = time.Since(q)
		findings = append(findings, fmt.Sprintf("contenders %s did not hold their locks within %v of the quorum's return (%s)",
			strings.Join(stuck, ","), chaosRecoveryBound, dumpStacks("stuck")))
	}
	if err := <-restored; err != nil {
		return "", err
	}
	r.mu.Lock()
	r.quorumFindings = append(r.quorumFindings, findings...)
	r.nodeExpiry = max(r.nodeExpiry, expiry)
	r.recovery = max(r.recovery, recovery)
	r.mu.Unlock()
	return fmt.Sprintf("members %d and %d down, %d holders inside; quorum back at +%v; nodes of %d sessions given up gone %v "+
		"after it; every contender held again %v after it", down[0].ID(), down[1].ID(), x.held, q.Sub(t0).Round(time.Millisecond),
		len(gaveUp), expiry.Round(time.Millisecond), recovery.Round(time.Millisecond)), nil
}

// clientsOn returns the clients (not paused) connected to each member:
// through the proxy that passed them a reply last, within half a session
// timeout (a connected client hears from its server every third of it).
func (r *chaosRun) clientsOn() [][]*chaosClient {
	on := make([][]*chaosClient, len(r.ens.Members()))
	for _, c := range r.clients {
		i := 0
		for k, p := range c.prox {
			if p.LastReply().After(c.prox[i].LastReply()) {
				i = k
			}
		}
		if time.Since(c.prox[i].LastReply()) <= chaosSessionTimeout/2 && !c.paused.Load() {
			on[i] = append(on[i], c)
		}
	}
	return on
}

// cutTarget picks, by pick, a member that clients are connected to, for a
// fault that cuts it off, and makes their holders hold on (holdOn). That
// can take seconds, in which a client may move to another member, so the
// cut keeps the clients still on the member then; if none is left, it
// picks again (5 times at most). The caller cuts the member off at once.
func (r *chaosRun) cutTarget(pick int) (int, *cut) {
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
		x := r.holdOn(on[i]...)
		still := r.clientsOn()[i]
		x.clients = slices.DeleteFunc(x.clients, func(c *chaosClient) bool { return !slices.Contains(still, c) })
		if len(x.clients) > 0 || attempt == 5 {
			return i, x
		}
		x.done()
	}
}

// partitionMember cuts a member that clients are connected to off from the
// other two (on the quorum and election ports) for at least f.length.
// Checked: the member stops serving; its clients are told (as checkNotice
// says) and move to another member while the partition lasts.
func (r *chaosRun) partitionMember(ctx context.Context, f fault) (string, error) {
	i, x := r.cutTarget(f.target)
	defer x.done()
	m, t0 := r.ens.Members()[i], x.at
	heal, err := r.ens.Partition(i)
	if err != nil {
		return "", err
	}
	defer heal()
	var mode string
	if !poll(ctx, t0.Add(20*time.Second), 20*time.Millisecond, func() bool {
		mode, err = m.Mode()
		return err == nil && mode != "leader" && mode != "follower"
	}) {
		return "", fmt.Errorf("member %d still serves (%q, %v) 20s after its partition", m.ID(), mode, err)
	}
	stopped := time.Since(t0)
	x.check(r, i, fmt.Sprintf("on partitioned member %d", m.ID()), false)
	x.done()
	moveBy := time.Now().Add(20 * time.Second)
	var names []string
	var stuck []error
	for _, c := range x.clients {
		names = append(names, c.name)
		if ev, left := firstState(c, t0, "SUSPENDED", "LOST"); left && !c.waitConnected(ctx, ev.at, moveBy) {
			stuck = append(stuck, fmt.Errorf("%s did not move on from partitioned member %d in 20s (states: %s)",
				c.name, m.ID(), statesSince(c, t0)))
		}
	}
	pause(ctx, time.Until(t0.Add(f.length)))
	heal()
	if err := r.restore(ctx); err != nil {
		return "", fmt.Errorf("after healing member %d: %w", m.ID(), err)
	}
	if err := errors.Join(stuck...); err != nil {
		return "", err
	}
	return fmt.Sprintf("member %d, stopped serving after %v; its clients [%s] moved on; partitioned %v",
		m.ID(), stopped.Round(time.Millisecond), strings.Join(names, " "), time.Since(t0).Round(time.Millisecond)), nil
}

// slowServer delays every packet between the clients and a member they are
// connected to by f.delay each way for f.length. Checked: its clients go
// SUSPENDED (one at least, or the fault did not happen), are told (as
// checkNotice says) and come back.
func (r *chaosRun) slowServer(ctx context.Context, f fault) (string, error) {
	i, x := r.cutTarget(f.target)
	defer x.done()
	m, t0 := r.ens.Members()[i], x.at
	for _, c := range r.clients {
		c.prox[i].SetDelay(f.delay)
	}
	x.check(r, i, fmt.Sprintf("on slow member %d", m.ID()), true)
	x.done()
	pause(ctx, time.Until(t0.Add(f.length)))
	for _, c := range r.clients {
		c.prox[i].SetDelay(0)
	}
	var told, rode []string
	for _, c := range x.clients {
		if ev, suspended := firstState(c, t0, "SUSPENDED"); suspended {
			r.awaitReconnect(ctx, c, t0, ev.at)
			told = append(told, c.name)
		} else {
			rode = append(rode, c.name)
		}
	}
	note := fmt.Sprintf("member %d by %v for %v; its clients [%s] suspended, [%s] rode it out", m.ID(), f.delay, f.length,
		strings.Join(told, " "), strings.Join(rode, " "))
	if len(told) == 0 { // none went SUSPENDED (or none was on the member)
		return "", fmt.Errorf("the fault did not happen: %s", note)
	}
	return note, nil
}
