package compat_test

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// This file holds the fault every lock paper starts from: a holder's whole
// process paused (SIGSTOP) for longer than its session timeout while it
// writes under the lock; its session expires, another holder takes the lock
// and writes; then the process resumes (SIGCONT) believing it holds, and the
// write it had due goes out. The fenced resource must refuse it.

// pauseHolder pauses c's process while a holding of c that writes to a
// fenced resource is inside, until its session timeout has passed and
// another holder has written with a higher token, then resumes it and waits
// for the stale write to be refused.
func (r *chaosRun) pauseHolder(ctx context.Context, c *peerClient) (string, error) {
	r.linger(c, true)
	lingering := true
	done := func() {
		if lingering {
			r.linger(c, false)
			lingering = false
		}
	}
	defer done()
	// A writer inside, and the highest number of a holding of each
	// contender of c that began before the pause.
	var writer heldNow // a lock holder or a leader: both write
	deadline := time.Now().Add(20 * time.Second)
	for writer.id == "" {
		hs, err := c.holdings(ctx)
		if err != nil {
			return "", err
		}
		for _, h := range hs {
			if h.token > 0 {
				writer = h
				break
			}
		}
		if writer.id == "" {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return "", fmt.Errorf("%s: no holder that writes was inside within 20s", c.name())
			}
			pause(ctx, 10*time.Millisecond) // polling until a writer is inside
		}
	}
	bounds, err := c.spanBounds(ctx)
	if err != nil {
		return "", err
	}
	// <client>-<role>-<i>.<n>: the role and the client's family name the resource.
	resource := strings.Split(writer.id, "-")[1] + "-" + familyOf(c.name())
	w := pauseWindow{client: c.name(), bounds: bounds}

	r.setPaused(c, true)
	w.from = time.Now()
	if err := c.process().Pause(); err != nil {
		r.setPaused(c, false)
		return "", err
	}
	// Whatever happens now, the process is resumed and the pause recorded:
	// its holdings spanned it.
	resumed := false
	resume := func() error {
		if resumed {
			return nil
		}
		resumed = true
		err := c.process().Resume()
		w.to = time.Now()
		r.setPaused(c, false)
		r.mu.Lock()
		r.pauses = append(r.pauses, w)
		r.mu.Unlock()
		done()
		return err
	}
	defer resume()
	// Paused past the session timeout, until another holder has written.
	var takeover time.Time
	for wait := w.from.Add(chaosSessionTimeout + 20*time.Second); ; {
		if takeover.IsZero() && r.resource.highestNow(resource) > writer.token {
			takeover = time.Now()
		}
		if !takeover.IsZero() && time.Since(w.from) > chaosSessionTimeout+time.Second {
			break
		}
		if time.Now().After(wait) || ctx.Err() != nil {
			break
		}
		pause(ctx, 20*time.Millisecond) // polling the resource
	}
	if err := resume(); err != nil {
		return "", err
	}
	if takeover.IsZero() {
		return "", fmt.Errorf("%s paused for %v while %s held %s (token %d): nobody else wrote to %s",
			c.name(), w.to.Sub(w.from).Round(time.Millisecond), writer.id, resource, writer.token, resource)
	}
	r.faultDone(faultPause)

	// The holder resumes believing it holds: its due write must be refused.
	var refused int
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for refused == 0 && sctx.Err() == nil {
		_, rejected := r.resource.writesOf(writer.id)
		refused = len(rejected)
		if refused == 0 {
			pause(sctx, 10*time.Millisecond) // polling the resource
		}
	}
	r.awaitReconnect(ctx, c, w.from, w.to)
	note := fmt.Sprintf("%s paused %v while %s held %s (token %d); taken over after %v; %d stale writes refused",
		c.name(), w.to.Sub(w.from).Round(time.Millisecond), writer.id, resource, writer.token,
		takeover.Sub(w.from).Round(time.Millisecond), refused)
	if refused == 0 {
		r.mu.Lock()
		r.pausesUnrefused++
		r.mu.Unlock()
	}
	return note, nil
}

func (r *chaosRun) setPaused(c chaosClient, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.paused[c.name()] = on
}

func (r *chaosRun) isPaused(c chaosClient) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.paused[c.name()]
}
