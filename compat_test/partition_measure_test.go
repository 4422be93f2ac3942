package compat_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// This file holds what the partition suite measures of each cut: when each
// client it cut off from every quorum told its holders (bounded, G3), and,
// per holder inside at the cut, the time from the cut to its loss notice
// against the time another client first held its lock after the cut: the
// window in which two believed they held it.

// holderWindow is one holding inside at a cut, as measured, each time
// from the cut (-1: never, as far as the run saw).
type holderWindow struct {
	kind   pfaultKind
	id     string
	policy string
	// cutOff: its client was left with no quorum to reach, so that its
	// lock could pass on only once the servers ended its session.
	cutOff bool
	// notice is its loss notice: when it was told, or, if it ended untold
	// (fenced, or done holding on), when its client came to a state its
	// policy tells holders at.
	notice time.Duration
	// gone is when it ended untold: it acted no more from then.
	gone time.Duration
	// takeover is when another client's holder first entered its lock
	// (its guard, in a role that excludes its own).
	takeover time.Duration
}

// inside reports whether the holder had not ended untold when another
// client took its lock over: it believed it held the lock until its
// notice, the other from the takeover.
func (w holderWindow) inside() bool {
	return w.takeover >= 0 && (w.gone < 0 || w.gone > w.takeover)
}

// open reports whether the holder learned of its loss only after another
// client held its lock (or never, while another did), still inside.
func (w holderWindow) open() bool {
	return w.inside() && (w.notice < 0 || w.notice > w.takeover)
}

func (w holderWindow) String() string {
	d := func(x time.Duration) string {
		if x < 0 {
			return "never"
		}
		return "+" + x.Round(time.Millisecond).String()
	}
	s := fmt.Sprintf("%s (%s) told %s, another client held %s", w.id, w.policy, d(w.notice), d(w.takeover))
	if w.gone >= 0 {
		s += ", ended untold " + d(w.gone)
	}
	return s
}

// noticeBound is how soon after a cut a client it left with no quorum to
// reach tells its holders, at the latest: its member may answer it until
// it notices it is cut off (the lag), and from its last answer the client
// has the session timeout and a second (G3, as the chaos suite bounds it).
func (r *partitionRun) noticeBound() time.Duration {
	return r.set.lag() + partitionsSession + time.Second
}

// lossState returns when c first came, since since, to a state its policy
// tells its holders at (SUSPENDED or LOST; LOST under the Session policy),
// or zero.
func lossState(c *chaosClient, since time.Time) time.Time {
	loss := []string{"SUSPENDED", "LOST"}
	if c.policy == "session" {
		loss = loss[1:]
	}
	if ev, ok := firstState(c, since, loss...); ok {
		return ev.at
	}
	return time.Time{}
}

// holdingNotice returns when holding h of c, inside at the cut at, learned
// that its lock could no longer be trusted: when it was told, or, if it
// ended first (fenced, or done holding on), when its client came to a loss
// state; zero if neither has come.
func (r *partitionRun) holdingNotice(c *chaosClient, h *holdingRecord, at time.Time) time.Time {
	if told, _ := r.ref.outcome(h); !told.IsZero() {
		return told
	}
	return lossState(c, at)
}

// clientNotice returns when c, cut off at x.at, had told every holding it
// had inside then (holdingNotice), or, with none inside, when it came to a
// loss state; zero if it has not yet.
func (r *partitionRun) clientNotice(c *chaosClient, x *cut, at time.Time) time.Time {
	if len(x.inside[c]) == 0 {
		return lossState(c, at)
	}
	var last time.Time
	for _, h := range x.inside[c] {
		n := r.holdingNotice(c, h, at)
		if n.IsZero() {
			return n
		}
		if n.After(last) {
			last = n
		}
	}
	return last
}

// awaitNotices waits, until end and the notice bound after the cut at the
// latest, for every client the cut left with no quorum to have told its
// holders, and for every holding held on to have been told or to have
// ended; its holders then stop holding on.
func (r *partitionRun) awaitNotices(ctx context.Context, c *pcut, end time.Time) {
	deadline := c.at.Add(r.noticeBound() + time.Second)
	if end.Before(deadline) {
		deadline = end
	}
	poll(ctx, deadline, 20*time.Millisecond, func() bool {
		for _, cl := range c.plan.noQuorum {
			if r.clientNotice(cl, c.x, c.at).IsZero() {
				return false
			}
		}
		for _, hs := range c.x.inside {
			for _, h := range hs {
				if told, left := r.ref.outcome(h); told.IsZero() && left.IsZero() {
					return false
				}
			}
		}
		return true
	})
}

// takeover returns when a holding of another client than h's first
// entered h's guard after at, in a role that excludes h's; zero if none.
func (r *partitionRun) takeover(h *holdingRecord, at time.Time) time.Time {
	var labels []string
	for _, c := range r.clients {
		if c.name == h.client {
			continue
		}
		for _, l := range c.labels {
			if o := holdingOf(l + ".0"); o.guard == h.guard && (h.role.kind == exclusive || o.role.kind == exclusive) {
				labels = append(labels, l)
			}
		}
	}
	return r.ref.firstEntry(labels, at)
}

// firstEntry returns when a holding of a contender of labels first entered
// its guard at or after since; zero if none has.
func (r *referee) firstEntry(labels []string, since time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for _, l := range labels {
		if i, _ := slices.BinarySearchFunc(r.entered[l], since, time.Time.Compare); i < len(r.entered[l]) {
			if e := r.entered[l][i]; first.IsZero() || e.Before(first) {
				first = e
			}
		}
	}
	return first
}

// measure records what cut c brought about, once it has healed: the
// notices of the clients it left with no quorum (late ones apart, a Java
// client's as Curator's), and the window of each holding inside at the
// cut. It returns a line for the log.
func (r *partitionRun) measure(c *pcut) string {
	since := func(t time.Time) time.Duration {
		if t.IsZero() {
			return -1
		}
		return t.Sub(c.at)
	}
	var parts []string
	for _, cl := range c.plan.noQuorum {
		n := r.clientNotice(cl, c.x, c.at)
		delay := since(n)
		if delay >= 0 {
			r.worst[cl.policy] = max(r.worst[cl.policy], delay)
		}
		if delay < 0 || delay > r.noticeBound() {
			note := fmt.Sprintf("%s (%s policy), %s at %s: told %v after the cut (bound %v; states since 5s before: %s)", cl.name,
				cl.policy, c.kind, c.at.Format("15:04:05.000"), delay, r.noticeBound(), statesSince(cl, c.at.Add(-5*time.Second)))
			if cl.curator() && delay >= 0 {
				r.curatorLate = append(r.curatorLate, note)
			} else {
				r.lateNotices = append(r.lateNotices, note)
			}
		}
		parts = append(parts, fmt.Sprintf("%s told %v", cl.name, delay.Round(time.Millisecond)))
	}
	for _, cl := range r.clients {
		for _, h := range c.x.inside[cl] {
			w := holderWindow{kind: c.kind, id: h.id, policy: cl.policy, cutOff: slices.Contains(c.plan.noQuorum, cl),
				notice: since(r.holdingNotice(cl, h, c.at)), gone: -1, takeover: since(r.takeover(h, c.at))}
			if told, left := r.ref.outcome(h); told.IsZero() && !left.IsZero() {
				w.gone = max(0, left.Sub(c.at)) // it may have left as the holding on began
			}
			r.windows = append(r.windows, w)
			parts = append(parts, w.String())
		}
	}
	if len(parts) == 0 {
		return "nothing to measure"
	}
	return strings.Join(parts, "; ")
}

// windowStats returns the open windows of ws, the longest of them
// (worst-window: "none", or "never-told" if a holder never was), and the
// least time from a notice to the takeover among holders cut off from
// every quorum, whose lock passed on only when the servers ended their
// session (least-margin, "none" if none was taken over).
func windowStats(ws []holderWindow) (open []holderWindow, worst, margin string) {
	worst, margin = "none", "none"
	var worstD, marginD time.Duration
	for _, w := range ws {
		switch {
		case w.open():
			open = append(open, w)
			d := w.notice - w.takeover
			if w.notice < 0 {
				d = math.MaxInt64
			}
			if len(open) == 1 || d > worstD {
				worstD = d
			}
		case w.cutOff && w.takeover >= 0 && w.notice >= 0:
			if d := w.takeover - w.notice; margin == "none" || d < marginD {
				marginD, margin = d, d.Round(time.Millisecond).String()
			}
		}
	}
	switch {
	case worstD == math.MaxInt64:
		worst = "never-told"
	case len(open) > 0:
		worst = worstD.Round(time.Millisecond).String()
	}
	return open, worst, margin
}
