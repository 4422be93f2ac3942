package compat_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds the chaos suite's fault schedule: its generation from the
// seed, and the injection of each fault.

type faultKind string

const (
	faultFollower    faultKind = "follower-kill"     // kill a follower, restart it
	faultLeader      faultKind = "leader-kill"       // kill the leader, wait for a new one, restart it
	faultDrop        faultKind = "drop-connections"  // close a client's connections
	faultBlackHole   faultKind = "black-hole"        // partition a client past its session timeout
	faultLoseCreate  faultKind = "lose-create-reply" // the server creates, the client never hears
	faultLoseDelete  faultKind = "lose-delete-reply" // the server deletes, the client never hears
	faultCloseClient faultKind = "close-go-client"   // close a Go client while its handles wait; open a new one
	faultCancel      faultKind = "cancel-acquires"   // cancel a Go client's acquires under way
)

var faultKinds = []faultKind{faultFollower, faultLeader, faultDrop, faultBlackHole,
	faultLoseCreate, faultLoseDelete, faultCloseClient, faultCancel}

// fault is one planned fault.
type fault struct {
	kind faultKind
	gap  time.Duration // the pause before it
	// target is a client (index into the run's clients: Go ones first), a
	// Go client (close, cancel) or which follower (in member order).
	target int
	// length: how long a killed member stays down; how long past the
	// session timeout a black hole lasts.
	length time.Duration
}

func (f fault) describe(clients []string, goClients int) string {
	s := fmt.Sprintf("after %v: %s", f.gap, f.kind)
	switch f.kind {
	case faultFollower:
		s += fmt.Sprintf(" (follower %d), down %v", f.target+1, f.length)
	case faultLeader:
		s += fmt.Sprintf(", down %v", f.length)
	case faultBlackHole:
		s += fmt.Sprintf(" %s for the session timeout + %v", clients[f.target], f.length)
	case faultCloseClient, faultCancel:
		s += " " + clients[f.target%goClients]
	default:
		s += " " + clients[f.target]
	}
	return s
}

// estimate is how long the fault is planned to take, gap included: the
// schedule is as long as the duration asked for, by these estimates.
func (f fault) estimate() time.Duration {
	d := f.gap
	switch f.kind { // as measured in a 10-minute run with -race
	case faultFollower:
		d += f.length + 4500*time.Millisecond // holders inside, restart, quorum
	case faultLeader:
		d += f.length + 4*time.Second // holders inside, election, restart, quorum
	case faultBlackHole:
		d += chaosSessionTimeout + f.length + time.Second // holders inside, reconnect
	case faultLoseCreate:
		d += 300 * time.Millisecond
	default:
		d += 100 * time.Millisecond
	}
	return d
}

// chaosSchedule is the fault sequence of a seed and a duration: rounds in
// which every kind comes once, in an order drawn from the seed, with pauses,
// targets and lengths drawn from it too, until the estimates fill the
// duration.
func chaosSchedule(seed int64, d time.Duration, clients, goClients int) []fault {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73))
	var out []fault
	var planned time.Duration
	for planned < d {
		kinds := slices.Clone(faultKinds)
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, k := range kinds {
			if planned >= d {
				break
			}
			f := fault{kind: k, gap: 200*time.Millisecond + time.Duration(rng.Int64N(int64(1300*time.Millisecond)))}
			switch k {
			case faultFollower:
				f.target = rng.IntN(2)
				f.length = 500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
			case faultLeader:
				f.length = 500*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
			case faultBlackHole:
				f.target = rng.IntN(clients)
				f.length = 300*time.Millisecond + time.Duration(rng.Int64N(int64(1200*time.Millisecond)))
			case faultCloseClient, faultCancel:
				f.target = rng.IntN(goClients)
			default:
				f.target = rng.IntN(clients)
			}
			f.length = f.length.Round(time.Millisecond)
			f.gap = f.gap.Round(time.Millisecond)
			planned += f.estimate()
			out = append(out, f)
		}
	}
	return out
}

// lossNotice is how long a black-holed client took to tell its holders.
type lossNotice struct {
	client string
	delay  time.Duration
	detail string
}

// inject runs one fault; every wait in it has a deadline. It returns what
// happened, for the log.
func (r *chaosRun) inject(ctx context.Context, f fault) (string, error) {
	switch f.kind {
	case faultFollower, faultLeader:
		return r.killMember(ctx, f)
	case faultDrop:
		c := r.clients[f.target]
		inside, done, err := r.holdOn(ctx, c)
		defer done()
		if err != nil {
			return "", err
		}
		for _, p := range c.proxies() {
			p.DropConnections()
		}
		r.faultDone(f.kind)
		return fmt.Sprintf("%s, %d holders inside", c.name(), inside), nil
	case faultBlackHole:
		return r.blackHole(ctx, r.clients[f.target], chaosSessionTimeout+f.length)
	case faultLoseCreate:
		return r.loseReply(ctx, f.kind, r.clients[f.target], r.clients[f.target].createOpcode())
	case faultLoseDelete:
		return r.loseReply(ctx, f.kind, r.clients[f.target], zktest.OpDelete)
	case faultCloseClient:
		s := r.goSlots[f.target%len(r.goSlots)]
		inside, done, err := r.holdOn(ctx, s)
		defer done()
		if err != nil {
			return "", err
		}
		if err := s.replace(); err != nil {
			return "", fmt.Errorf("replace %s's client: %w", s.name(), err)
		}
		r.faultDone(f.kind)
		return fmt.Sprintf("%s, %d holders inside", s.name(), inside), nil
	case faultCancel:
		s := r.goSlots[f.target%len(r.goSlots)]
		n := s.cancelAcquires()
		r.faultDone(f.kind)
		return fmt.Sprintf("%s: %d acquires cancelled", s.name(), n), nil
	}
	return "", fmt.Errorf("unknown fault %q", f.kind)
}

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
		var followers []int
		for i := range members {
			if i != leader {
				followers = append(followers, i)
			}
		}
		victim = followers[f.target%len(followers)]
	}
	m := members[victim]
	inside, done, err := r.holdOn(ctx, r.clients...)
	if err != nil {
		done()
		return "", err
	}
	err = m.Kill()
	pause(ctx, 300*time.Millisecond) // for the disconnected holders to be told while they hold on
	done()
	if err != nil {
		return "", err
	}
	r.faultDone(f.kind)
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

// blackHole partitions c from every member for length: a holder of c is
// made to hold on until told, and its notice must come within the session
// timeout + 1 s of the partition's start.
func (r *chaosRun) blackHole(ctx context.Context, c chaosClient, length time.Duration) (string, error) {
	_, done, err := r.holdOn(ctx, c)
	defer done()
	if err != nil {
		return "", err
	}
	t0 := time.Now()
	notice := c.partitioned(t0)
	for _, p := range c.proxies() {
		p.BlackHole()
	}
	r.faultDone(faultBlackHole)
	delay, ok, detail := notice(t0.Add(chaosNoticeBound + time.Second))
	r.mu.Lock()
	if ok {
		r.notices = append(r.notices, lossNotice{client: c.name(), delay: delay, detail: detail})
	}
	if !ok || delay > chaosNoticeBound {
		r.lateNotices = append(r.lateNotices, fmt.Sprintf("%s black-holed at %s: %s (delay %v)",
			c.name(), t0.Format("15:04:05.000"), detail, delay))
	}
	r.mu.Unlock()
	pause(ctx, time.Until(t0.Add(length)))
	restored := time.Now()
	for _, p := range c.proxies() {
		p.Restore()
	}
	note := fmt.Sprintf("%s, loss notice after %v (%s)", c.name(), delay.Round(time.Millisecond), detail)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.waitConnected(cctx, restored); err != nil {
		r.t.Logf("chaos: %s did not reconnect within 30s of the restore at +%v: %v; its states since the partition: %s",
			c.name(), restored.Sub(t0).Round(time.Millisecond), err, c.statesSince(t0))
	}
	return note, nil
}

// holdOn makes the holders of cs hold on, once inside, until told (at most
// chaosLingerMax), and waits up to 3s for one to be inside, so that the
// fault to come cuts off a holder. It returns how many are inside, and the
// function that ends holding on.
func (r *chaosRun) holdOn(ctx context.Context, cs ...chaosClient) (int, func(), error) {
	done := func() {
		for _, c := range cs {
			if err := c.setLinger(false); err != nil {
				r.t.Errorf("chaos: %s: %v", c.name(), err)
			}
		}
	}
	for _, c := range cs {
		if err := c.setLinger(true); err != nil {
			return 0, done, err
		}
	}
	wait := time.Now().Add(3 * time.Second)
	for {
		inside := 0
		for _, c := range cs {
			n, err := c.holdersInside()
			if err != nil {
				return 0, done, err
			}
			inside += n
		}
		if inside > 0 || time.Now().After(wait) || ctx.Err() != nil {
			return inside, done, nil
		}
		pause(ctx, 10*time.Millisecond) // polling until a holder is inside
	}
}

// loseReply makes the server apply c's next request of opcode op while c
// never hears back: armed on the proxy c is connected through.
func (r *chaosRun) loseReply(ctx context.Context, kind faultKind, c chaosClient, op int32) (string, error) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	p, err := c.currentProxy(pctx)
	if err != nil {
		r.t.Logf("chaos: %s skipped: %v", kind, err)
		return "skipped: " + err.Error(), nil
	}
	fired := p.LoseNextReply(op)
	select {
	case <-fired:
		r.faultDone(kind)
		return c.name(), nil
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
	// Still armed: it fires at the client's next such request through that
	// proxy (if it reconnected elsewhere, maybe only when it comes back).
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		select {
		case <-fired:
			r.faultDone(kind)
		case <-r.done:
		}
	}()
	return c.name() + ", still armed after 5s", nil
}

func (r *chaosRun) faultDone(k faultKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[k]++
}

// faultSummary is "n (kind k, ...)" in faultKinds order.
func (r *chaosRun) faultSummary() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	total := 0
	var parts []string
	for _, k := range faultKinds {
		total += r.faults[k]
		parts = append(parts, fmt.Sprintf("%s %d", k, r.faults[k]))
	}
	return total, strings.Join(parts, ", ")
}

// A seed and a duration make one schedule; the first round has every kind.
func TestChaosScheduleReplays(t *testing.T) {
	a := chaosSchedule(42, time.Minute, 5, 3)
	if b := chaosSchedule(42, time.Minute, 5, 3); !slices.Equal(a, b) {
		t.Fatal("the same seed made two schedules")
	}
	if c := chaosSchedule(43, time.Minute, 5, 3); slices.Equal(a, c) {
		t.Fatal("two seeds made one schedule")
	}
	var planned time.Duration
	kinds := map[faultKind]bool{}
	for i, f := range a {
		planned += f.estimate()
		if i < len(faultKinds) {
			kinds[f.kind] = true
		}
	}
	if len(kinds) != len(faultKinds) || planned < time.Minute || planned-a[len(a)-1].estimate() >= time.Minute {
		t.Fatalf("schedule of %d faults planned for %v, first round's kinds %v", len(a), planned, kinds)
	}
}
