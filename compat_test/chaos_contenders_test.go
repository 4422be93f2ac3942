package compat_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

// This file holds what every chaos contender shares: the locks, how many
// contenders of each a client runs, and the client as the fault schedule
// sees it. The clients are of three sorts: Go clients in the test process
// (chaos_goclient_test.go), and Go contender processes (compat_test/gopeer)
// and Java Curator peers, both driven over the peer protocol
// (chaos_peerclient_test.go).

// chaosLock is one of the locks every client contends for, or one of the
// elections its candidates stand in: how a holder of it (a leader) enters
// the guard, and which resource it writes to ("" for none).
type chaosLock struct {
	name     string // the contender's role: mutex, write, read, sem
	guard    string // the guard's name: mutex, rw, sem
	kind     guardKind
	max      int
	resource string
}

var (
	chaosMutex = chaosLock{name: "mutex", guard: "mutex", kind: exclusive, max: 1, resource: "mutex"}
	chaosWrite = chaosLock{name: "write", guard: "rw", kind: exclusive, max: 1, resource: "write"}
	chaosRead  = chaosLock{name: "read", guard: "rw", kind: shared, max: 1}
	chaosSem   = chaosLock{name: "sem", guard: "sem", kind: counted, max: chaosLeases}
	// The elections: a LeaderLatch's and a LeaderSelector's leaders.
	chaosLatch    = chaosLock{name: "latch", guard: "latch", kind: exclusive, max: 1, resource: "latch"}
	chaosSelector = chaosLock{name: "selector", guard: "selector", kind: exclusive, max: 1, resource: "selector"}
)

// isElection reports whether the contender of lock is an election candidate.
func (l chaosLock) isElection() bool { return l == chaosLatch || l == chaosSelector }

// Each lane's clients contend in a family of locks of its own: a fault that
// cuts a client off blocks, until its session ends, the locks it holds or
// waits for; the other family goes on. Both have Go and Java contenders.
// A client's family is its number (g1, p1 and j1 make family 1).

// familyOf returns the family of the client named name.
func familyOf(name string) string { return strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyz") }

// path is the lock's, or the election's, path in family.
func (l chaosLock) path(family string) string {
	name := l.name
	if l == chaosWrite || l == chaosRead {
		name = "rw"
	}
	return chaosBase + "/" + family + "/" + name
}

// guardOf is the name of the lock's guard in family.
func (l chaosLock) guardOf(family string) string { return l.guard + "-" + family }

// resourceOf is the name of the resource the lock's holders write to in
// family, or "".
func (l chaosLock) resourceOf(family string) string {
	if l.resource == "" {
		return ""
	}
	return l.resource + "-" + family
}

// chaosContenders is how many contenders of each role every client runs:
// lock contenders and election candidates.
var chaosContenders = []struct {
	lock chaosLock
	n    int
}{{chaosMutex, 2}, {chaosWrite, 1}, {chaosRead, 1}, {chaosSem, 2}, {chaosLatch, 1}, {chaosSelector, 1}}

// chaosGuards names every guard.
var chaosGuards = []string{"mutex", "rw", "sem", "latch", "selector"}

// contenderLabels returns the labels of client's contenders: a holding of
// one is named <label>.<n>.
func contenderLabels(client string) []string {
	var out []string
	for _, cs := range chaosContenders {
		for i := 0; i < cs.n; i++ {
			out = append(out, contenderLabel(client, cs.lock, i))
		}
	}
	return out
}

func contenderLabel(client string, lock chaosLock, i int) string {
	return client + "-" + lock.name + "-" + strconv.Itoa(i)
}

// heldNow is a holding inside its guard, and the token it writes with (0 if
// it writes none).
type heldNow struct {
	id    string
	token int64
}

// chaosClient is a client as the fault schedule sees it.
type chaosClient interface {
	name() string
	proxies() []*zktest.Proxy
	// currentProxy returns the proxy the client is connected through.
	currentProxy(ctx context.Context) (*zktest.Proxy, error)
	// setLinger makes the client's holdings hold on inside until told (see
	// chaosRun.holdOn, which counts who asks).
	setLinger(on bool) error
	// holdings returns the holdings inside a guard, untold.
	holdings(ctx context.Context) ([]heldNow, error)
	// partitioned returns, once the client has been cut off at t0, a
	// function that waits (until deadline) for its loss signal and returns
	// the delay; ok is false if none came.
	partitioned(t0 time.Time) func(deadline time.Time) (delay time.Duration, ok bool, detail string)
	// waitConnected waits until the client is connected again after since.
	waitConnected(ctx context.Context, since time.Time) error
	// states lists the client's connection states since t.
	states(since time.Time) []stateEvent
	// sessionID returns the client's current session.
	sessionID(ctx context.Context) (int64, error)
	// curator reports whether the client is Java Curator's, whose loss
	// notice is Curator's to bound, not gocurator's (see checkNotice).
	curator() bool
	// createOpcode is the opcode of the client's creates: go-zookeeper
	// sends create, ZooKeeper's Java client (as Curator calls it) create2.
	createOpcode() int32
	// process is the client's own process, which a fault can pause; nil for
	// a client in the test's process.
	process() *peer
}

// stateEvent is a connection state a client heard, and when.
type stateEvent struct {
	state string // as Curator names it: CONNECTED, SUSPENDED, ...
	at    time.Time
}

// statesSince lists c's connection states since t, for logs.
func statesSince(c chaosClient, t time.Time) string {
	var out []string
	for _, ev := range c.states(t) {
		out = append(out, ev.state+" at +"+ev.at.Sub(t).Round(time.Millisecond).String())
	}
	return strings.Join(out, ", ")
}

// firstState returns the first of states c heard since t.
func firstState(c chaosClient, since time.Time, states ...string) (stateEvent, bool) {
	for _, ev := range c.states(since) {
		for _, s := range states {
			if ev.state == s {
				return ev, true
			}
		}
	}
	return stateEvent{}, false
}

// awaitLossState waits (until deadline) for c, cut off at t0, to hear
// SUSPENDED or LOST, and returns how long after t0 it did. A client that
// was not connected at t0 (its last state before it was SUSPENDED or LOST)
// had told its holders already: a delay of 0.
func awaitLossState(c chaosClient, t0, deadline time.Time) (time.Duration, bool, string) {
	if evs := c.states(time.Time{}); len(evs) > 0 {
		var last stateEvent
		for _, ev := range evs {
			if ev.at.Before(t0) {
				last = ev
			}
		}
		if last.state == "SUSPENDED" || last.state == "LOST" {
			return 0, true, "client " + last.state + " already, at -" + t0.Sub(last.at).Round(time.Millisecond).String()
		}
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	ev, err := waitState(ctx, c, t0, "SUSPENDED", "LOST")
	if err != nil {
		return 0, false, fmt.Sprintf("%s: no SUSPENDED or LOST: %v", c.name(), err)
	}
	return ev.at.Sub(t0), true, "client " + ev.state
}

// waitState polls c's states until one of states has come since t.
func waitState(ctx context.Context, c chaosClient, since time.Time, states ...string) (stateEvent, error) {
	for {
		if ev, ok := firstState(c, since, states...); ok {
			return ev, nil
		}
		select {
		case <-ctx.Done():
			return stateEvent{}, ctx.Err()
		case <-time.After(10 * time.Millisecond): // polling the recorded states
		}
	}
}

// connectedNow reports whether c's last state says connected.
func connectedNow(c chaosClient) bool {
	evs := c.states(time.Time{})
	if len(evs) == 0 {
		return false
	}
	last := evs[len(evs)-1].state
	return last == "CONNECTED" || last == "RECONNECTED"
}

func connectString(proxies []*zktest.Proxy) string {
	addrs := make([]string, len(proxies))
	for i, p := range proxies {
		addrs[i] = p.Addr()
	}
	return strings.Join(addrs, ",")
}

func proxyAt(proxies []*zktest.Proxy, addr string) *zktest.Proxy {
	for _, p := range proxies {
		if p.Addr() == addr {
			return p
		}
	}
	return nil
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
