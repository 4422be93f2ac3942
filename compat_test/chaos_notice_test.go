package compat_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds the chaos suite's loss-notice check (G3): every client a
// fault cuts off from the servers (black hole, partition, slow member, lost
// quorum) tells its holders within the session timeout + 1 s of its last
// contact with them.

// check waits for every client's notice at once and checks it (see
// checkNotice), the servers cut off being member's (every member's if
// member < 0).
func (x *cut) check(r *chaosRun, member int, what string, silenceOK bool) {
	var wg sync.WaitGroup
	for _, c := range x.clients {
		via := c.prox
		if member >= 0 {
			via = c.prox[member : member+1]
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.checkNotice(c, x.at, via, x.inside[c], what, silenceOK)
		}()
	}
	wg.Wait()
}

// notice returns c's notice so far, cut off at t0: when it told the last
// of the holdings it had inside then (one may also have ended untold), or,
// with none inside, when it first came to a state in which its policy tells
// its holders (one it was in at t0 already counts as told then).
func (r *chaosRun) notice(c *chaosClient, t0 time.Time, inside []*holdingRecord) (delay time.Duration, ok bool, detail string) {
	if len(inside) > 0 {
		for _, h := range inside {
			told, left := r.ref.outcome(h)
			switch {
			case !told.IsZero():
				delay = max(delay, told.Sub(t0))
			case left.IsZero():
				return 0, false, "holding " + h.id + " was not told"
			}
		}
		return delay, true, fmt.Sprintf("%d holdings told", len(inside))
	}
	loss := []string{"SUSPENDED", "LOST"}
	if c.policy == "session" {
		loss = loss[1:]
	}
	var last stateEvent
	for _, ev := range c.states(time.Time{}) {
		if ev.at.Before(t0) {
			last = ev
		}
	}
	if slices.Contains(loss, last.state) {
		return 0, true, "client " + last.state + " already, at -" + t0.Sub(last.at).Round(time.Millisecond).String()
	}
	if ev, ok := firstState(c, t0, loss...); ok {
		return ev.at.Sub(t0), true, "client " + ev.state
	}
	return 0, false, fmt.Sprintf("no %v", loss)
}

// checkNotice waits for c's loss notice, cut off at t0 by what, records it,
// and records it as late unless it came within the notice bound of c's last
// contact with the servers of via (docs/guarantees.md, which also says who
// has nothing to be told; silenceOK: a slow server's client may not).
func (r *chaosRun) checkNotice(c *chaosClient, t0 time.Time, via []*zktest.Proxy, inside []*holdingRecord, what string, silenceOK bool) {
	contact := func() time.Time {
		last := t0
		for _, p := range via {
			if l := p.LastReply(); l.After(last) {
				last = l
			}
		}
		return last
	}
	var delay time.Duration
	var ok bool
	var detail string
	poll(context.Background(), t0.Add(time.Minute), 10*time.Millisecond, func() bool {
		delay, ok, detail = r.notice(c, t0, inside)
		return ok || time.Now().After(contact().Add(chaosNoticeBound+time.Second))
	})
	// Read at once: once told, the client has left these servers, and a
	// reply passed after its notice would be of a later connection.
	last := min(contact().Sub(t0), delay)
	// A client told nothing that heard from another member since t0 had
	// left the cut-off member before the cut (it was picked a moment
	// before): it was not cut off. Leaving would have been SUSPENDED.
	movedAway := false
	if _, suspended := firstState(c, t0, "SUSPENDED", "LOST"); !ok && !suspended {
		for _, p := range c.prox {
			if !slices.Contains(via, p) && p.LastReply().After(t0) {
				movedAway = true
			}
		}
	}
	// A Session-policy client back in its session before its notice (a
	// later loss is another outage's) kept its locks: nothing to be told.
	ev, _ := firstState(c, t0, "RECONNECTED", "LOST")
	back := c.policy == "session" && ev.state == "RECONNECTED" && (!ok || ev.at.Before(t0.Add(delay)))
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case movedAway:
		r.notCutOff++
		return
	case back || !ok && silenceOK && len(c.states(t0)) == 0:
		r.rodeOut++
		return
	}
	if ok {
		r.notices++
		r.worst[c.policy] = max(r.worst[c.policy], delay-last)
	}
	if !ok || delay-last > chaosNoticeBound {
		note := fmt.Sprintf("%s (%s policy) %s at %s: %s (delay %v, after a last reply at +%v; states since 5s before: %s)",
			c.name, c.policy, what, t0.Format("15:04:05.000"), detail, delay, last.Round(time.Millisecond), statesSince(c, t0.Add(-5*time.Second)))
		if c.curator() && ok {
			r.curatorLate = append(r.curatorLate, note)
		} else {
			r.lateNotices = append(r.lateNotices, note)
		}
	}
}

// awaitReconnect waits (30s at most) for c to be connected after since, and
// logs it if it is not.
func (r *chaosRun) awaitReconnect(ctx context.Context, c *chaosClient, t0, since time.Time) {
	if !c.waitConnected(ctx, since, time.Now().Add(30*time.Second)) {
		r.t.Logf("chaos: %s did not reconnect within 30s of +%v; its states since: %s",
			c.name, since.Sub(t0).Round(time.Millisecond), statesSince(c, t0))
	}
}
