package compat_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds the running of the chaos suite's lanes, and the faults
// made to one client; those made to the ensemble are in
// chaos_server_faults_test.go.

// runLane injects a lane's faults in order, and counts each that happened.
// A fault that failed, or did not happen, ends the lane; so does running
// over twice the duration and a minute.
func (r *chaosRun) runLane(ctx context.Context, l *lane, d time.Duration, start time.Time) {
	for i, f := range l.faults {
		if over := time.Since(start); over > 2*d+time.Minute {
			r.t.Errorf("chaos: lane %s ran %v, over twice its %v; stopped before fault %d of %d", l.name, over, d, i+1, len(l.faults))
			return
		}
		pause(ctx, f.gap)
		if ctx.Err() != nil {
			return
		}
		at := time.Since(start)
		note, err := r.inject(ctx, f)
		if err != nil {
			r.t.Errorf("chaos: lane %s, fault %d (%s): %v", l.name, i+1, f.describe(), err)
			return
		}
		r.mu.Lock()
		r.faults[f.kind]++
		r.mu.Unlock()
		r.t.Logf("chaos: +%v %s %d/%d %s: %s", at.Round(time.Millisecond), l.name, i+1, len(l.faults), f.kind, note)
	}
}

// inject runs one fault; every wait in it has a deadline. It returns what
// happened, for the log. Client faults hold the run's gate shared, so that
// a quorum loss can run alone.
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
	case faultBlackHole:
		return r.blackHole(ctx, c, f.length)
	case faultLoseCreate: // go-zookeeper sends create, ZooKeeper's Java client create2
		op := zktest.OpCreate
		if c.curator() {
			op = zktest.OpCreate2
		}
		return r.loseReply(ctx, f.kind, c, op)
	case faultLoseDelete:
		return r.loseReply(ctx, f.kind, c, zktest.OpDelete)
	case faultCancel:
		n, err := c.send("-", "cancel-acquires", c.name)(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s: %s acquires cancelled", c.name, n), nil
	case faultPause:
		return r.pauseHolder(ctx, c)
	}
	x := r.holdOn(c)
	defer x.done()
	switch f.kind {
	case faultDrop:
		for _, p := range c.prox {
			p.DropConnections()
		}
	case faultCloseClient:
		if _, err := c.send("-", "replace", c.name)(ctx); err != nil {
			return "", fmt.Errorf("replace %s's client: %w", c.name, err)
		}
	default:
		return "", fmt.Errorf("unknown fault %q", f.kind)
	}
	return fmt.Sprintf("%s, %d holders inside", c.name, x.held), nil
}

// blackHole partitions c from every member for length: a holder of c is
// made to hold on until told, and its notice must come within the notice
// bound of the partition's start.
func (r *chaosRun) blackHole(ctx context.Context, c *chaosClient, length time.Duration) (string, error) {
	x := r.holdOn(c)
	defer x.done()
	for _, p := range c.prox {
		p.BlackHole()
	}
	x.check(r, -1, "black-holed", false)
	x.done()
	pause(ctx, time.Until(x.at.Add(length)))
	restored := time.Now()
	for _, p := range c.prox {
		p.Restore()
	}
	r.awaitReconnect(ctx, c, x.at, restored)
	return fmt.Sprintf("%s, states: %s", c.name, statesSince(c, x.at)), nil
}

// A cut is the holding on of clients' holders before a fault cuts them off
// (or disturbs them): when it began, and the holdings each client had
// inside then, which it must tell.
type cut struct {
	at      time.Time
	clients []*chaosClient
	inside  map[*chaosClient][]*holdingRecord
	held    int    // holdings inside, in all
	done    func() // ends holding on; idempotent
}

// holdOn makes the holders of cs hold on, once inside, until told (at most
// chaosLingerMax), and waits up to 3s for one to be inside, so that the
// fault to come cuts off a holder. A paused client is left out. A fault
// calls done as soon as its holders have been told, for a holder that
// holds on blocks every other contender of its lock.
func (r *chaosRun) holdOn(cs ...*chaosClient) *cut {
	x := &cut{inside: map[*chaosClient][]*holdingRecord{}}
	for _, c := range cs {
		if !c.paused.Load() {
			x.clients = append(x.clients, c)
			r.ref.linger(c.name, 1)
		}
	}
	on := slices.Clone(x.clients)
	x.done = sync.OnceFunc(func() {
		for _, c := range on {
			r.ref.linger(c.name, -1)
		}
	})
	poll(context.Background(), time.Now().Add(3*time.Second), 10*time.Millisecond, func() bool {
		x.at, x.held = time.Now(), 0
		for _, c := range on {
			x.inside[c] = r.ref.insideOf(c.name)
			x.held += len(x.inside[c])
		}
		return x.held > 0
	})
	return x
}

// loseReply makes the server apply c's next request of opcode op while c
// never hears back: armed on every proxy of c, so that it fires wherever c
// is connected; the arms that did not fire are then taken back.
func (r *chaosRun) loseReply(ctx context.Context, kind faultKind, c *chaosClient, op int32) (string, error) {
	var fired []<-chan struct{}
	for _, p := range c.prox {
		fired = append(fired, p.LoseNextReply(op))
	}
	hit := -1
	poll(ctx, time.Now().Add(30*time.Second), 5*time.Millisecond, func() bool {
		for i, ch := range fired {
			select {
			case <-ch:
				hit = i
			default:
			}
		}
		return hit >= 0
	})
	for i, p := range c.prox {
		if i != hit && !p.Disarm(fired[i]) {
			hit = i // fired meanwhile: lost too
		}
	}
	if hit < 0 {
		return "", fmt.Errorf("%s: no %s request in 30s", c.name, kind)
	}
	return c.name + " through " + c.prox[hit].Target(), nil
}

// pauseHolder is the fault every lock paper starts from: it pauses c's
// process (SIGSTOP) while a holding of c that writes is inside, past the
// session timeout until another holder has written, then resumes it
// (SIGCONT) and waits for the holder's due write to be refused.
func (r *chaosRun) pauseHolder(ctx context.Context, c *chaosClient) (string, error) {
	x := r.holdOn(c)
	defer x.done()
	var writer *holdingRecord
	if !poll(ctx, time.Now().Add(20*time.Second), 10*time.Millisecond, func() bool {
		for _, h := range r.ref.insideOf(c.name) {
			// Not one that another holder has superseded already (it was
			// told, and the referee has yet to hear it).
			if h.resource != "" && h.token > 0 && h.token >= r.ref.highestNow(h.resource) {
				writer = h
			}
		}
		return writer != nil
	}) {
		return "", fmt.Errorf("%s: no holder that writes was inside within 20s", c.name)
	}
	c.paused.Store(true)
	w := pauseWindow{client: c.name, from: time.Now()}
	if err := c.proc.Pause(); err != nil {
		c.paused.Store(false)
		return "", err
	}
	// Paused past the session timeout, until another holder has written;
	// whatever happens, resumed, and the pause recorded: its holdings
	// spanned it.
	var takeover time.Time
	poll(ctx, w.from.Add(chaosSessionTimeout+20*time.Second), 20*time.Millisecond, func() bool {
		if takeover.IsZero() && r.ref.highestNow(writer.resource) > writer.token {
			takeover = time.Now()
		}
		return !takeover.IsZero() && time.Since(w.from) > chaosSessionTimeout+time.Second
	})
	err := c.proc.Resume()
	w.to = time.Now()
	r.ref.addPause(w)
	c.paused.Store(false)
	x.done()
	what := fmt.Sprintf("%s paused %v while %s held %s (token %d)", c.name, w.to.Sub(w.from).Round(time.Millisecond),
		writer.id, writer.resource, writer.token)
	switch {
	case err != nil:
		return "", err
	case takeover.IsZero():
		return "", fmt.Errorf("%s: nobody else wrote to it", what)
	}
	refused := 0
	if !poll(ctx, time.Now().Add(10*time.Second), 10*time.Millisecond, func() bool {
		refused = r.ref.refusedOf(writer)
		return refused > 0
	}) {
		r.mu.Lock()
		r.unrefused++
		r.mu.Unlock()
	}
	r.awaitReconnect(ctx, c, w.from, w.to)
	return fmt.Sprintf("%s; taken over after %v; %d stale writes refused", what, takeover.Sub(w.from).Round(time.Millisecond), refused), nil
}
