package compat_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gocurator/curator/internal/netpart"
)

// This file holds the partition suite's cuts: where the clients are, what
// each kind of fault cuts, and one fault's course from the holders' holding
// on to the recovery after the heal.

// consEntry is one client connection a member's "cons" lists.
type consEntry struct {
	addr  string // the client's address
	lresp int64  // when the member last answered it, in ms since the epoch
	lop   string // the last operation it answered: PING, GETD, ...
}

// consOf returns the client connections member m lists (none if it does
// not answer).
func consOf(r *partitionRun, m int) []consEntry {
	out, err := r.ens.Members()[m].FourLetterWord("cons")
	if err != nil {
		return nil
	}
	var es []consEntry
	for _, line := range strings.Split(out, "\n") {
		// " /198.19.201.20:40514[1](queued=0,...,lop=PING,...,lresp=1764000000000,...)"
		line = strings.TrimSpace(line)
		addr, rest, ok := strings.Cut(strings.TrimPrefix(line, "/"), ":")
		if !ok || !strings.HasPrefix(line, "/") {
			continue
		}
		e := consEntry{addr: addr}
		for _, kv := range strings.FieldsFunc(rest, func(r rune) bool { return r == ',' || r == '(' || r == ')' }) {
			switch k, v, _ := strings.Cut(kv, "="); k {
			case "lresp":
				e.lresp, _ = strconv.ParseInt(v, 10, 64)
			case "lop":
				e.lop = v
			}
		}
		es = append(es, e)
	}
	return es
}

// placement returns the clients connected to each member (an index into
// Members), as the members' "cons" lists them: the connection a member
// last answered, if two members list one client.
func (r *partitionRun) placement() [][]*chaosClient {
	on := make([][]*chaosClient, len(r.ens.Members()))
	type seen struct {
		member int
		lresp  int64
	}
	best := map[string]seen{}
	for i := range on {
		for _, e := range consOf(r, i) {
			if node := r.net.Node(e.addr); node != "" && (best[node] == seen{} || e.lresp > best[node].lresp) {
				best[node] = seen{i, e.lresp}
			}
		}
	}
	for _, c := range r.clients {
		if s, ok := best[c.name]; ok {
			on[s.member] = append(on[s.member], c)
		}
	}
	return on
}

// cutPlan is what one fault cuts, and whom it concerns.
type cutPlan struct {
	links []netpart.Link
	// hold are the clients whose holders hold on at the cut (those it
	// cuts off, or whose member it disturbs): their holdings are measured.
	hold []*chaosClient
	// noQuorum are the clients it leaves with no quorum to reach, which
	// must tell their holders within the notice bound.
	noQuorum []*chaosClient
	member   int // the member isolate-* cuts off
	what     string
}

// names returns the nodes of members (indexes) and clients.
func names(members []int, clients []*chaosClient) []string {
	var out []string
	for _, m := range members {
		out = append(out, memberNode(m))
	}
	for _, c := range clients {
		out = append(out, c.name)
	}
	return out
}

func clientNames(cs []*chaosClient) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.name)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// planCut plans fault f with the leader and the clients' placement now.
func (r *partitionRun) planCut(f pfault, leader int, on [][]*chaosClient) cutPlan {
	n := len(on)
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	// sides splits the clients by f.sides, one at least on each side.
	sides := func() (a, b []*chaosClient) {
		for i, c := range r.clients {
			if f.sides>>i&1 == 1 {
				a = append(a, c)
			} else {
				b = append(b, c)
			}
		}
		if len(a) == 0 || len(b) == 0 {
			k := f.pick % len(r.clients)
			a, b = r.clients[k:k+1], slices.Delete(slices.Clone(r.clients), k, k+1)
		}
		return a, b
	}
	rotated := append(slices.Clone(all[f.pick%n:]), all[:f.pick%n]...)
	switch f.kind {
	case pfLeader:
		return r.isolate(leader, "leader", on)
	case pfFollower:
		// The follower with the most clients; the pick among equals.
		followers := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == leader })
		most := 0
		for _, i := range followers {
			most = max(most, len(on[i]))
		}
		followers = slices.DeleteFunc(followers, func(i int) bool { return len(on[i]) < most })
		return r.isolate(followers[f.pick%len(followers)], "follower", on)
	case pfMinority, pfFlap:
		minority, majority := rotated[:n/2], rotated[n/2:]
		a, b := sides()
		p := cutPlan{links: netpart.Split(names(minority, a), names(majority, b)), hold: a,
			what: fmt.Sprintf("minority %v with %s | majority %v with %s (leader %s)", names(minority, nil), clientNames(a),
				names(majority, nil), clientNames(b), memberNode(leader))}
		if f.kind == pfMinority {
			p.noQuorum = a
		}
		return p
	case pfBridge:
		half := (n - 1) / 2
		left, bridge, right := rotated[:half], rotated[half], rotated[half+1:]
		a, b := sides()
		var hold []*chaosClient
		for i, cs := range on {
			if i != bridge {
				hold = append(hold, cs...)
			}
		}
		return cutPlan{links: netpart.Split(names(left, a), names(right, b)), hold: hold,
			what: fmt.Sprintf("%v with %s | bridge %s | %v with %s (leader %s)", names(left, nil), clientNames(a),
				memberNode(bridge), names(right, nil), clientNames(b), memberNode(leader))}
	case pfOneWay:
		x := rotated[0]
		others := slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i == x })
		role := "follower"
		if x == leader {
			role = "leader"
		}
		return cutPlan{links: netpart.OneWay(names([]int{x}, nil), names(others, nil)), hold: on[x],
			what: fmt.Sprintf("%s (%s, clients %s) sends to no other member; it hears them", memberNode(x), role, clientNames(on[x]))}
	}
	panic("unknown fault kind " + string(f.kind))
}

// isolate plans cutting member m (role: leader or follower) and its
// clients (as placed by on) off from the other members and clients.
func (r *partitionRun) isolate(m int, role string, on [][]*chaosClient) cutPlan {
	rest := slices.DeleteFunc(slices.Clone(r.clients), func(c *chaosClient) bool { return slices.Contains(on[m], c) })
	var others []int
	for i := range on {
		if i != m {
			others = append(others, i)
		}
	}
	return cutPlan{links: netpart.Split(names([]int{m}, on[m]), names(others, rest)), hold: on[m], noQuorum: on[m], member: m,
		what: fmt.Sprintf("%s (%s) with its clients %s cut off from the rest", memberNode(m), role, clientNames(on[m]))}
}

// steer moves client c onto member m before a cut that is to cut m off
// with clients: it cuts c off from every other member until m lists it
// (its connection lapses at its read timeout, two thirds of T, and it
// tries the members in turn), T + 5 s at most, then heals. It reports
// whether c moved.
func (r *partitionRun) steer(ctx context.Context, c *chaosClient, m int) (bool, error) {
	var others []int
	for i := range r.ens.Members() {
		if i != m {
			others = append(others, i)
		}
	}
	if err := r.net.Apply(netpart.Between([]string{c.name}, names(others, nil))); err != nil {
		return false, err
	}
	moved := poll(ctx, time.Now().Add(partitionsSession+5*time.Second), 50*time.Millisecond, func() bool {
		return slices.Contains(r.placement()[m], c)
	})
	return moved, r.net.Heal()
}

// pcut is one fault as it happened: when it cut and healed, the holders
// held on (and what they had inside at the cut), and what was measured.
type pcut struct {
	kind     pfaultKind
	plan     cutPlan
	x        *cut
	at       time.Time // when the cut was in place
	healed   time.Time
	recovery time.Duration // from the heal to the quorum and every client connected
}

// inject runs fault f: the leader and the clients' placement, the holders
// of the clients it concerns held on, the cut (made and healed in turn, for
// flapping) for its length, the notices awaited and measured, the heal, and
// the recovery (the quorum, every client connected), all bounded. It
// returns what happened, for the log.
func (r *partitionRun) inject(ctx context.Context, f pfault) (string, error) {
	leader, err := r.leader(ctx)
	if err != nil {
		return "", err
	}
	c := &pcut{kind: f.kind, plan: r.planCut(f, leader, r.placement())}
	if f.kind == pfFollower && len(c.plan.hold) == 0 { // no follower has a client: move one to the follower
		steered := r.clients[f.pick%len(r.clients)]
		moved, err := r.steer(ctx, steered, c.plan.member)
		if err != nil {
			return "", err
		}
		c.plan = r.isolate(c.plan.member, "follower", r.placement())
		c.plan.what += fmt.Sprintf(" (%s steered onto it first: moved %v)", steered.name, moved)
	}
	c.x = &cut{at: time.Now(), inside: map[*chaosClient][]*holdingRecord{}, done: func() {}}
	if len(c.plan.hold) > 0 {
		c.x = r.holdOn(c.plan.hold...)
	}
	defer c.x.done()
	if err := r.net.Apply(c.plan.links); err != nil {
		return "", err
	}
	c.at = time.Now()
	// What the clients held on have inside now is what the cut cut off:
	// more may have entered since holdOn looked.
	c.x.held = 0
	for _, cl := range c.plan.hold {
		c.x.inside[cl] = r.ref.insideOf(cl.name)
		c.x.held += len(c.x.inside[cl])
	}
	end := c.at.Add(f.length)
	flaps := slices.Clone(f.flaps)
	if len(flaps) > 0 { // the first cut, then heals and cuts in turn
		end = c.at.Add(flaps[0])
	}
	r.awaitNotices(ctx, c, end)
	c.x.done()
	pause(ctx, time.Until(end))
	for i := 1; i < len(flaps); i++ {
		links := c.plan.links
		if i%2 == 1 {
			links = nil
		}
		if err := r.net.Apply(links); err != nil {
			return "", err
		}
		pause(ctx, flaps[i])
	}
	if err := r.net.Heal(); err != nil {
		return "", err
	}
	c.healed = time.Now()
	if err := r.restore(ctx); err != nil {
		return "", fmt.Errorf("after the heal: %w", err)
	}
	if err := r.waitAllConnected(ctx); err != nil {
		return "", fmt.Errorf("after the heal: %w", err)
	}
	c.recovery = time.Since(c.healed)
	r.cuts = append(r.cuts, c)
	return fmt.Sprintf("%s; %d holders inside; %s; healed after %v, recovered %v later", c.plan.what, c.x.held,
		r.measure(c), c.healed.Sub(c.at).Round(time.Millisecond), c.recovery.Round(time.Millisecond)), nil
}
