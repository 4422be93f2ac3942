package chaoscontender

import (
	"fmt"
	"sync"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
)

// balance is an event hook that keeps what a metrics backend builds on a
// client's events (every generation of a client position hears the same
// one): waiters (acquires started less ended), holders (granted less
// released or lost) and leaders (terms gained less lost); and, by node, that
// each acquisition is granted once and then ends once.
type balance struct {
	mu                        sync.Mutex
	waiters, holders, leaders int
	open                      map[string]bool // granted and not yet ended, by node
	granted                   int
	endWithoutGrant, twice    int
	heard                     chan struct{} // a token after each event
}

func newBalance() *balance { return &balance{open: map[string]bool{}, heard: make(chan struct{}, 1)} }

// Event keeps e.
func (b *balance) Event(e framework.Event) {
	if _, ok := recipes.LockEventOf(e); !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	defer func() {
		select {
		case b.heard <- struct{}{}:
		default:
		}
	}()
	switch e.Kind {
	case recipes.AcquireStarted:
		b.waiters++
	case recipes.AcquireFailed:
		b.waiters--
	case recipes.Acquired:
		b.waiters--
		b.holders++
		b.granted++
		if b.open[e.Node] {
			b.twice++
		}
		b.open[e.Node] = true
	case recipes.Released, recipes.Lost:
		b.holders--
		if !b.open[e.Node] {
			b.endWithoutGrant++
		}
		delete(b.open, e.Node)
	case recipes.LeadershipGained:
		b.leaders++
	case recipes.LeadershipLost:
		b.leaders--
	}
}

// settled reports whether every gauge is back at zero and every
// acquisition has ended once.
func (b *balance) settled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters == 0 && b.holders == 0 && b.leaders == 0 && len(b.open) == 0 && b.endWithoutGrant == 0 && b.twice == 0
}

// String reports the gauges and the faults, as the events verb answers.
func (b *balance) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("granted=%d waiters=%d holders=%d leaders=%d unended=%d ended-ungranted=%d granted-twice=%d",
		b.granted, b.waiters, b.holders, b.leaders, len(b.open), b.endWithoutGrant, b.twice)
}

// eventsSettleWait bounds how long the events verb waits, once the client is
// closed, for the ends its close makes: a grant lost at Close is told on a
// goroutine of its own, a moment later.
const eventsSettleWait = 10 * time.Second

// events closes the client (its contenders must have stopped) and reports
// its balance once it has settled (looked at again after each event), or
// once eventsSettleWait has passed.
func (c *Client) events() string {
	c.Close()
	bound := time.NewTimer(eventsSettleWait)
	defer bound.Stop()
	for !c.bal.settled() {
		select {
		case <-c.bal.heard:
		case <-bound.C:
			return c.bal.String()
		}
	}
	return c.bal.String()
}
