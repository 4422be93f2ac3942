package compat_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds the chaos suite's fault schedule, its lanes, and the
// faults made to one client. The faults made to the ensemble are in
// chaos_server_faults_test.go, the paused holder in chaos_pause_test.go.
//
// Faults run in lanes, at once: the server lane (members killed, quorum
// lost, a member partitioned or slowed) and one lane per group of clients
// (a Go client in the test, a Go contender process, a Java peer), each with
// faults to its own clients only. A quorum loss runs alone: the client lanes
// wait for it, so that what it measures is its own doing.

type faultKind string

const (
	faultFollower    faultKind = "follower-kill"     // kill a follower, restart it
	faultLeader      faultKind = "leader-kill"       // kill the leader, wait for a new one, restart it
	faultQuorum      faultKind = "quorum-loss"       // kill two members for 2-3 session timeouts
	faultPartition   faultKind = "partition-member"  // cut a member off from the others, its clients on
	faultSlow        faultKind = "slow-server"       // delay a member's traffic past a third of the session timeout
	faultDrop        faultKind = "drop-connections"  // close a client's connections
	faultBlackHole   faultKind = "black-hole"        // partition a client past its session timeout
	faultLoseCreate  faultKind = "lose-create-reply" // the server creates, the client never hears
	faultLoseDelete  faultKind = "lose-delete-reply" // the server deletes, the client never hears
	faultCloseClient faultKind = "close-go-client"   // close a Go client while its handles wait; open a new one
	faultCancel      faultKind = "cancel-acquires"   // cancel a Go client's acquires under way
	faultPause       faultKind = "pause-holder"      // SIGSTOP a process holding a lock past its session, then SIGCONT
)

// faultKinds is every kind, in the summary's order.
var faultKinds = []faultKind{faultFollower, faultLeader, faultQuorum, faultPartition, faultSlow,
	faultDrop, faultBlackHole, faultLoseCreate, faultLoseDelete, faultCloseClient, faultCancel, faultPause}

// The rounds of a lane: each its kinds in an order the seed shuffles. The
// faults that end a session (a black hole, a pause) or the quorum block
// every lock the cut-off clients hold or wait for, until the session
// expires; so they come less often than the quick ones, which come twice a
// round: a client lane has a black hole in one round, a pause in the next;
// the server lane loses the quorum in its first round and then at most
// every chaosQuorumEvery of its plan.
var (
	serverRound = []faultKind{faultFollower, faultLeader, faultPartition, faultSlow}
	clientRound = []faultKind{faultDrop, faultDrop, faultLoseCreate, faultLoseCreate,
		faultLoseDelete, faultLoseDelete, faultCloseClient, faultCancel, faultCancel}
)

const chaosQuorumEvery = 2 * time.Minute

// roundKinds returns the kinds of round i of lane l (li is its index),
// sinceQuorum how much of the lane's plan has passed since its last quorum
// loss (or -1 for none yet).
func roundKinds(l *lane, li, i int, sinceQuorum time.Duration) []faultKind {
	kinds := slices.Clone(l.kinds)
	if l.name == "server" {
		if sinceQuorum < 0 || sinceQuorum >= chaosQuorumEvery {
			kinds = append(kinds, faultQuorum)
		}
		return kinds
	}
	if (i+li)%2 == 0 {
		return append(kinds, faultBlackHole)
	}
	return append(kinds, faultPause)
}

// lane is one sequence of faults; a client lane's faults go to its clients.
type lane struct {
	name    string
	kinds   []faultKind
	clients []int // indexes into the run's clients; none for the server lane
	faults  []fault
}

// fault is one planned fault.
type fault struct {
	kind faultKind
	gap  time.Duration // the pause before it
	// target is a client (an index into the run's clients) or, for the
	// server lane, a number that picks the member.
	target int
	// length: how long a killed member stays down, how long the quorum is
	// lost, a member partitioned or slowed, or how long past the session
	// timeout a black hole lasts.
	length time.Duration
	// delay: a slow server's delay.
	delay time.Duration
}

// eligible reports whether a fault of kind can go to the client named name:
// closing a client and cancelling its acquires need a Go client in the
// test, a pause a process of its own.
func eligible(kind faultKind, name string) bool {
	switch kind {
	case faultCloseClient, faultCancel:
		return strings.HasPrefix(name, "g")
	case faultPause:
		return !strings.HasPrefix(name, "g")
	}
	return true
}

func (f fault) describe(names []string) string {
	s := fmt.Sprintf("after %v: %s", f.gap, f.kind)
	switch f.kind {
	case faultFollower:
		s += fmt.Sprintf(" (follower %d), down %v", f.target%2+1, f.length)
	case faultLeader:
		s += fmt.Sprintf(", down %v", f.length)
	case faultQuorum:
		s += fmt.Sprintf(" (member %d survives), for %v", f.target%3+1, f.length)
	case faultPartition:
		s += fmt.Sprintf(" (pick %d), for %v", f.target, f.length)
	case faultSlow:
		s += fmt.Sprintf(" (pick %d), by %v for %v", f.target, f.delay, f.length)
	case faultBlackHole:
		s += fmt.Sprintf(" %s for the session timeout + %v", names[f.target], f.length)
	default:
		s += " " + names[f.target]
	}
	return s
}

// estimate is how long the fault is planned to take, gap included: a lane
// is as long as the duration asked for, by these estimates.
func (f fault) estimate() time.Duration {
	d := f.gap
	switch f.kind { // as measured in 10-minute runs with -race
	case faultFollower:
		d += f.length + 4500*time.Millisecond // holders inside, restart, quorum
	case faultLeader:
		d += f.length + 4*time.Second // holders inside, election, restart, quorum
	case faultQuorum:
		d += f.length + 8*time.Second // restart, quorum, expiry and progress checks
	case faultPartition:
		d += f.length + 3*time.Second // holders inside, rejoin
	case faultSlow:
		d += f.length + time.Second // holders inside, reconnect
	case faultBlackHole:
		d += chaosSessionTimeout + f.length + time.Second // holders inside, reconnect
	case faultPause:
		d += chaosSessionTimeout + 3*time.Second // a writer inside, take-over, stale write, reconnect
	case faultLoseCreate:
		d += 300 * time.Millisecond
	default:
		d += 100 * time.Millisecond
	}
	return d
}

// chaosLanes returns the lanes for the clients named: the server lane, then
// one lane per client number (g1, p1 and j1 make lane 1).
func chaosLanes(names []string) []*lane {
	lanes := []*lane{{name: "server", kinds: serverRound}}
	byNumber := map[string]*lane{}
	for i, n := range names {
		num := strings.TrimLeft(n, "abcdefghijklmnopqrstuvwxyz")
		l, ok := byNumber[num]
		if !ok {
			l = &lane{name: "clients-" + num, kinds: clientRound}
			byNumber[num] = l
			lanes = append(lanes, l)
		}
		l.clients = append(l.clients, i)
	}
	return lanes
}

// chaosSchedule plans each lane's faults for a seed and a duration: rounds
// (see roundKinds) in an order drawn from the seed, with pauses, targets
// and lengths drawn from it too, until the estimates fill the duration, but
// whole first rounds (the server lane's first, a client lane's first two),
// so that every kind comes however short the run. Kinds no client of a lane
// can take are left out.
func chaosSchedule(seed int64, d time.Duration, names []string) []*lane {
	lanes := chaosLanes(names)
	for li, l := range lanes {
		rng := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73+uint64(li)))
		var planned time.Duration
		lastQuorum := time.Duration(-1)
		minRounds := 2
		if l.name == "server" {
			minRounds = 1
		}
		for round := 0; planned < d || round < minRounds; round++ {
			since := time.Duration(-1)
			if lastQuorum >= 0 {
				since = planned - lastQuorum
			}
			kinds := roundKinds(l, li, round, since)
			rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
			for _, k := range kinds {
				if planned >= d && round >= minRounds {
					break
				}
				f, ok := planFault(rng, k, l, names)
				if !ok {
					continue
				}
				if k == faultQuorum {
					lastQuorum = planned
				}
				planned += f.estimate()
				l.faults = append(l.faults, f)
			}
		}
	}
	return lanes
}

// planFault draws one fault of kind k for lane l.
func planFault(rng *rand.Rand, k faultKind, l *lane, names []string) (fault, bool) {
	ms := func(lo, hi int64) time.Duration {
		return time.Duration(lo+rng.Int64N(hi-lo)) * time.Millisecond
	}
	f := fault{kind: k, gap: ms(100, 1000)}
	T := chaosSessionTimeout.Milliseconds()
	switch k {
	case faultFollower, faultLeader:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(2)
		f.length = ms(500, 3000)
	case faultQuorum:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(3)
		f.length = ms(2*T, 3*T)
	case faultPartition:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(6)
		f.length = ms(1000, 4000)
	case faultSlow:
		f.gap = ms(200, 1500)
		f.target = rng.IntN(6)
		f.delay = ms(7*T/10, 9*T/10) // a round trip of two delays: past the clients' read timeouts (2/3 of it)
		f.length = ms(T, 3*T/2)
	default:
		var ok []int
		for _, c := range l.clients {
			if eligible(k, names[c]) {
				ok = append(ok, c)
			}
		}
		if len(ok) == 0 {
			return f, false
		}
		f.target = ok[rng.IntN(len(ok))]
		if k == faultBlackHole {
			f.length = ms(300, 1500)
		}
	}
	return f, true
}

// lossNotice is how long a cut-off client took to tell its holders.
type lossNotice struct {
	client  string
	curator bool // a Java Curator client's
	delay   time.Duration
	detail  string
}

// runLane injects a lane's faults in order. A failed fault ends the lane;
// so does running over twice the duration and a minute. Client faults hold
// the run's gate shared, so that a quorum loss can run alone.
func (r *chaosRun) runLane(ctx context.Context, l *lane, d time.Duration, start time.Time) {
	names := r.names()
	for i, f := range l.faults {
		if over := time.Since(start); over > 2*d+time.Minute {
			r.t.Errorf("chaos: lane %s ran %v, over twice its %v; stopped before fault %d of %d", l.name, over, d, i+1, len(l.faults))
			return
		}
		pause(ctx, f.gap)
		if ctx.Err() != nil {
			return
		}
		r.injectedOne(f.kind)
		at := time.Since(start)
		note, err := r.inject(ctx, f)
		if err != nil {
			r.t.Errorf("chaos: lane %s, fault %d (%s): %v", l.name, i+1, f.describe(names), err)
			return
		}
		r.t.Logf("chaos: +%v %s %d/%d %s: %s", at.Round(time.Millisecond), l.name, i+1, len(l.faults), f.kind, note)
	}
}

// inject runs one fault; every wait in it has a deadline. It returns what
// happened, for the log.
func (r *chaosRun) inject(ctx context.Context, f fault) (string, error) {
	switch f.kind {
	case faultFollower, faultLeader:
		return r.killMember(ctx, f)
	case faultQuorum:
		return r.quorumLoss(ctx, f)
	case faultPartition:
		return r.partitionMember(ctx, f)
	case faultSlow:
		return r.slowServer(ctx, f)
	}
	r.gate.RLock()
	defer r.gate.RUnlock()
	c := r.clients[f.target]
	switch f.kind {
	case faultDrop:
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
		return r.blackHole(ctx, c, chaosSessionTimeout+f.length)
	case faultLoseCreate:
		return r.loseReply(ctx, f.kind, c, c.createOpcode())
	case faultLoseDelete:
		return r.loseReply(ctx, f.kind, c, zktest.OpDelete)
	case faultCloseClient:
		s := c.(*goSlot)
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
		s := c.(*goSlot)
		n := s.cancelAcquires()
		r.faultDone(f.kind)
		return fmt.Sprintf("%s: %d acquires cancelled", s.name(), n), nil
	case faultPause:
		return r.pauseHolder(ctx, c.(*peerClient))
	}
	return "", fmt.Errorf("unknown fault %q", f.kind)
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
	delay, _ := r.checkNotice(c, t0, c.proxies(), notice, "black-holed", false)
	done()
	pause(ctx, time.Until(t0.Add(length)))
	restored := time.Now()
	for _, p := range c.proxies() {
		p.Restore()
	}
	note := fmt.Sprintf("%s, loss notice after %v", c.name(), delay.Round(time.Millisecond))
	r.awaitReconnect(ctx, c, t0, restored)
	return note, nil
}

// checkNotice waits for c's loss notice (see chaosClient.partitioned), cut
// off at t0 by what, records it, and records it as late unless it came
// within the bound of c's last contact with the servers it was cut off
// from: the last reply that one of via passed it, or t0 if that was
// earlier. A client may hear from them after t0: a slow member's replies
// arrive late, and a partitioned member answers until it notices. With
// silenceOK (a slow server), a client that heard nothing at all, its
// connection never lapsing, had nothing to be told: it is counted as having
// ridden the fault out. It returns the notice's delay from t0.
func (r *chaosRun) checkNotice(c chaosClient, t0 time.Time, via []*zktest.Proxy, notice func(time.Time) (time.Duration, bool, string), what string, silenceOK bool) (time.Duration, bool) {
	contact := func() time.Time {
		last := t0
		for _, p := range via {
			if l := p.LastReply(); l.After(last) {
				last = l
			}
		}
		return last
	}
	deadline := t0.Add(chaosNoticeBound + time.Second)
	delay, ok, detail := notice(deadline)
	for !ok {
		later := contact().Add(chaosNoticeBound + time.Second)
		if !later.After(deadline) {
			break
		}
		deadline = later
		delay, ok, detail = notice(deadline)
	}
	// Read at once: once told, the client has left these servers, and a
	// reply passed after its notice would be of a later connection.
	last := min(contact().Sub(t0), delay)
	// A client told nothing that heard from another member since t0 had
	// left the cut-off member before the cut (it was picked a moment
	// before): it was not cut off. Leaving would have been SUSPENDED.
	movedAway := false
	if _, lost := firstState(c, t0, "SUSPENDED", "LOST"); !ok && !lost {
		for _, p := range c.proxies() {
			if !slices.Contains(via, p) && p.LastReply().After(t0) {
				movedAway = true
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case movedAway:
		r.notCutOff++
		return 0, false
	case !ok && silenceOK && len(c.states(t0)) == 0:
		r.rodeOut++
		return 0, false
	}
	if ok {
		r.notices = append(r.notices, lossNotice{client: c.name(), curator: c.curator(), delay: delay - last, detail: detail})
	}
	if !ok || delay-last > chaosNoticeBound {
		note := fmt.Sprintf("%s %s at %s: %s (delay %v, after a last reply at +%v; states since 5s before: %s)",
			c.name(), what, t0.Format("15:04:05.000"), detail, delay, last.Round(time.Millisecond), statesSince(c, t0.Add(-5*time.Second)))
		if c.curator() && ok {
			r.curatorLate = append(r.curatorLate, note)
		} else {
			r.lateNotices = append(r.lateNotices, note)
		}
	}
	return delay, ok
}

// awaitReconnect waits (30s at most) for c to be connected after since, and
// logs it if it is not.
func (r *chaosRun) awaitReconnect(ctx context.Context, c chaosClient, t0, since time.Time) {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.waitConnected(cctx, since); err != nil {
		r.t.Logf("chaos: %s did not reconnect within 30s of +%v: %v; its states since: %s",
			c.name(), since.Sub(t0).Round(time.Millisecond), err, statesSince(c, t0))
	}
}

// holdOn makes the holders of cs hold on, once inside, until told (at most
// chaosLingerMax), and waits up to 3s for one to be inside, so that the
// fault to come cuts off a holder. A paused client is left out. It returns
// how many are inside, and the function (idempotent) that ends holding on:
// a fault calls it as soon as its holders have been told, for a holder that
// holds on blocks every other contender of its lock.
func (r *chaosRun) holdOn(ctx context.Context, cs ...chaosClient) (int, func(), error) {
	var on []chaosClient
	for _, c := range cs {
		if !r.isPaused(c) {
			on = append(on, c)
			r.linger(c, true)
		}
	}
	var once sync.Once
	done := func() {
		once.Do(func() {
			for _, c := range on {
				r.linger(c, false)
			}
		})
	}
	wait := time.Now().Add(3 * time.Second)
	for {
		inside := 0
		for _, c := range on {
			hs, err := r.holdingsOf(ctx, c)
			if err != nil {
				return 0, done, err
			}
			inside += len(hs)
		}
		if inside > 0 || time.Now().After(wait) || ctx.Err() != nil {
			return inside, done, nil
		}
		pause(ctx, 10*time.Millisecond) // polling until a holder is inside
	}
}

// holdingsOf returns c's holdings inside, or none if c is paused or does
// not answer within 2s (it may have been paused meanwhile).
func (r *chaosRun) holdingsOf(ctx context.Context, c chaosClient) ([]heldNow, error) {
	if r.isPaused(c) {
		return nil, nil
	}
	hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	hs, err := c.holdings(hctx)
	if err != nil && (r.isPaused(c) || hctx.Err() != nil) {
		return nil, nil
	}
	return hs, err
}

// linger counts who wants c's holders to hold on, and tells c when that
// count leaves or reaches zero.
func (r *chaosRun) linger(c chaosClient, on bool) {
	r.lingerMu.Lock()
	defer r.lingerMu.Unlock()
	n := r.lingering[c.name()]
	if on {
		n++
	} else {
		n--
	}
	r.lingering[c.name()] = n
	if (on && n == 1) || (!on && n == 0) {
		if err := c.setLinger(on); err != nil {
			r.t.Errorf("chaos: %s: %v", c.name(), err)
		}
	}
}

// loseReply makes the server apply c's next request of opcode op while c
// never hears back: armed on every proxy of c, so that it fires wherever c
// is connected; the arms that did not fire are then taken back.
func (r *chaosRun) loseReply(ctx context.Context, kind faultKind, c chaosClient, op int32) (string, error) {
	var fired []<-chan struct{}
	for _, p := range c.proxies() {
		fired = append(fired, p.LoseNextReply(op))
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hit := -1
	for hit < 0 && wctx.Err() == nil {
		for i, ch := range fired {
			select {
			case <-ch:
				hit = i
			default:
			}
		}
		if hit < 0 {
			pause(wctx, 5*time.Millisecond) // polling the arms
		}
	}
	for i, p := range c.proxies() {
		if i != hit && !p.Disarm(fired[i]) {
			hit = i // fired meanwhile: lost too
		}
	}
	if hit < 0 {
		return "", fmt.Errorf("%s: no %s request in 30s", c.name(), kind)
	}
	r.faultDone(kind)
	return c.name() + " through " + c.proxies()[hit].Target(), nil
}

func (r *chaosRun) injectedOne(k faultKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.injected[k]++
}

func (r *chaosRun) faultDone(k faultKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[k]++
}

// faultSummary is the total of faults that happened and "kind n, ..." in
// faultKinds order; missing lists each kind that was injected and never
// happened, or happened fewer times than injected.
func (r *chaosRun) faultSummary() (total int, byKind string, missing []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var parts []string
	for _, k := range faultKinds {
		total += r.faults[k]
		parts = append(parts, fmt.Sprintf("%s=%d", k, r.faults[k]))
		if r.faults[k] < r.injected[k] {
			missing = append(missing, fmt.Sprintf("%s: %d injected, %d happened", k, r.injected[k], r.faults[k]))
		}
	}
	return total, strings.Join(parts, " "), missing
}

// A seed and a duration make one schedule; every kind comes in each lane's
// first rounds (a 40s run has them all), each fault goes to a client of its
// lane that can take it, and the quorum is lost at most every
// chaosQuorumEvery of a lane's plan.
func TestChaosScheduleReplays(t *testing.T) {
	names := []string{"g1", "g2", "p1", "p2", "j1", "j2"}
	a := chaosSchedule(42, 40*time.Second, names)
	b := chaosSchedule(42, 40*time.Second, names)
	c := chaosSchedule(43, 40*time.Second, names)
	if len(a) != 3 || a[0].name != "server" || !slices.Equal(a[1].clients, []int{0, 2, 4}) || !slices.Equal(a[2].clients, []int{1, 3, 5}) {
		t.Fatalf("lanes: %+v", a)
	}
	same := true
	for i := range a {
		if !slices.Equal(a[i].faults, b[i].faults) {
			t.Fatalf("lane %s: the same seed made two schedules", a[i].name)
		}
		same = same && slices.Equal(a[i].faults, c[i].faults)
		var planned time.Duration
		for _, f := range a[i].faults {
			planned += f.estimate()
			if a[i].name != "server" && (!slices.Contains(a[i].clients, f.target) || !eligible(f.kind, names[f.target])) {
				t.Fatalf("lane %s: %s", a[i].name, f.describe(names))
			}
		}
		if planned < 40*time.Second {
			t.Fatalf("lane %s: %d faults planned for %v", a[i].name, len(a[i].faults), planned)
		}
	}
	if same {
		t.Fatal("two seeds made one schedule")
	}
	for seed := int64(0); seed < 100; seed++ {
		kinds := map[faultKind]bool{}
		for _, l := range chaosSchedule(seed, 40*time.Second, names) {
			for _, f := range l.faults {
				kinds[f.kind] = true
			}
		}
		if len(kinds) != len(faultKinds) {
			t.Fatalf("seed %d: a 40s schedule has the kinds %v, want all %d", seed, kinds, len(faultKinds))
		}
	}
	long := chaosSchedule(42, 10*time.Minute, names)
	var planned, last time.Duration
	quorums := 0
	for _, f := range long[0].faults {
		if f.kind == faultQuorum {
			if quorums > 0 && planned-last < chaosQuorumEvery {
				t.Fatalf("quorum lost again %v after the last time", planned-last)
			}
			quorums++
			last = planned
		}
		planned += f.estimate()
	}
	if quorums < 3 {
		t.Fatalf("%d quorum losses in 10 minutes", quorums)
	}
}
