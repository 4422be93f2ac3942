package compat_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/compat_test/chaoscontender"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/testutil"
)

// This file holds the chaos suite's clients and their contenders. A
// client's number is its family: the locks it contends for, and the client
// lane that faults it.

// chaosNames are the clients: Go clients in the test's own process (g1,
// g2), Go contender processes (p1, p2) and Java Curator peers (j1, j2).
var chaosNames = []string{"g1", "g2", "p1", "p2", "j1", "j2"}

// chaosRole is a kind of contender every client runs n of: what it contends
// for, how its holders enter their guard (<guard>-<family>), and whether
// they write their fencing token to a fenced resource (<role>-<family>).
type chaosRole struct {
	role   chaoscontender.Role
	n      int
	guard  string
	kind   guardKind
	max    int
	fenced bool
}

var chaosRoles = []chaosRole{
	{chaoscontender.Mutex, 2, "mutex", exclusive, 1, true},
	{chaoscontender.Write, 1, "rw", exclusive, 1, true},
	{chaoscontender.Read, 1, "rw", shared, 1, false},
	{chaoscontender.Semaphore, 2, "sem", counted, chaosLeases, false},
	{chaoscontender.Latch, 1, "latch", exclusive, 1, true},
	{chaoscontender.Selector, 1, "selector", exclusive, 1, true},
}

// election reports whether the role's contenders are election candidates,
// whose holdings are terms of leadership.
func (ro chaosRole) election() bool {
	return ro.role == chaoscontender.Latch || ro.role == chaoscontender.Selector
}

// familyOf returns the family of the client named name: its number.
func familyOf(name string) string { return strings.TrimLeft(name, "abcdefghijklmnopqrstuvwxyz") }

// chaosClient is one client of the run, on a host of contenders: in the
// test's own process (a chaoscontender.Host), or a process of its own that
// speaks the same verbs (gopeer, CuratorPeer).
type chaosClient struct {
	name string
	// policy is the client's error policy: "standard" (the Go clients of
	// family 1), "session" (those of family 2: their holders are told at
	// LOST only) or "curator" (the Java clients).
	policy  string
	prox    []*zktest.Proxy
	host    *chaoscontender.Host // in the test's process, else nil
	proc    *peer                // a process of its own, else nil
	labels  []string             // its contenders
	reports []func(context.Context) (string, error)
	paused  atomic.Bool // a process, while a fault has paused it

	mu    sync.Mutex
	heard []string // the host's events in the test's process
}

// stateEvent is a connection state a client heard, and when.
type stateEvent struct {
	state string // as Curator names it: CONNECTED, SUSPENDED, ...
	at    time.Time
}

func (c *chaosClient) curator() bool { return c.policy == "curator" }

// states lists the client's connection states since t, from its host's
// events: "state <client> <STATE> <µs>".
func (c *chaosClient) states(since time.Time) []stateEvent {
	var evs []string
	if c.proc != nil {
		evs = c.proc.EventTexts()
	} else {
		c.mu.Lock()
		evs = slices.Clone(c.heard)
		c.mu.Unlock()
	}
	var out []stateEvent
	for _, ev := range evs {
		f := strings.Fields(ev)
		if len(f) != 4 || f[0] != "state" || f[1] != c.name {
			continue
		}
		if us, err := strconv.ParseInt(f[3], 10, 64); err == nil && us >= since.UnixMicro() {
			out = append(out, stateEvent{state: f[2], at: time.UnixMicro(us)})
		}
	}
	return out
}

// send sends a request to the client's host, run by worker (a thread of a
// Java peer; "-" for any), and returns at once what waits for the reply.
func (c *chaosClient) send(worker, verb string, args ...string) func(context.Context) (string, error) {
	if c.proc != nil {
		return c.proc.send(worker, verb, args...).Wait
	}
	done := make(chan struct{})
	var reply string
	var err error
	go func() {
		defer close(done)
		reply, err = c.host.Handle(verb, args)
	}()
	return func(ctx context.Context) (string, error) {
		select {
		case <-done:
			return reply, err
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s %v: %w", verb, args, ctx.Err())
		}
	}
}

func (c *chaosClient) sessionID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	reply, err := c.send("-", "session", c.name)(ctx)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(reply, 10, 64)
}

// waitConnected waits until deadline for the last state c heard since
// since to be a connection (a process may not have noticed yet that the
// one before is gone), and reports whether it came.
func (c *chaosClient) waitConnected(ctx context.Context, since, deadline time.Time) bool {
	return poll(ctx, deadline, 20*time.Millisecond, func() bool {
		evs := c.states(since)
		return len(evs) > 0 && slices.Contains([]string{"CONNECTED", "RECONNECTED"}, evs[len(evs)-1].state)
	})
}

// firstState returns the first of states c heard since t.
func firstState(c *chaosClient, since time.Time, states ...string) (stateEvent, bool) {
	for _, ev := range c.states(since) {
		if slices.Contains(states, ev.state) {
			return ev, true
		}
	}
	return stateEvent{}, false
}

// statesSince lists c's states since t, for logs.
func statesSince(c *chaosClient, t time.Time) string {
	var out []string
	for _, ev := range c.states(t) {
		out = append(out, ev.state+" at +"+ev.at.Sub(t).Round(time.Millisecond).String())
	}
	return strings.Join(out, ", ")
}

// startClient starts the client named name (see chaosClient) behind
// proxies of its own to every member of ens, and waits for its session.
// Go processes run bin.
func startClient(t *testing.T, ens *zktest.Ensemble, name, bin, logs string) *chaosClient {
	c := &chaosClient{name: name, policy: "standard"}
	switch {
	case name[0] == 'j':
		c.policy = "curator"
	case familyOf(name) == "2":
		c.policy = "session"
	}
	var addrs []string
	for _, a := range ens.Addrs() {
		c.prox = append(c.prox, zktest.NewProxy(t, a))
		addrs = append(addrs, c.prox[len(c.prox)-1].Addr())
	}
	switch name[0] {
	case 'g':
		l, err := zap.Config{Level: zap.NewAtomicLevelAt(zap.InfoLevel), Encoding: "console", EncoderConfig: zap.NewDevelopmentEncoderConfig(),
			OutputPaths: []string{filepath.Join(logs, name+".log")}, ErrorOutputPaths: []string{"stderr"}}.Build()
		testutil.Must(t, err)
		c.host = chaoscontender.NewHost(l, func(ev string) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.heard = append(c.heard, ev)
		})
		t.Cleanup(c.host.Close)
	case 'p':
		pp, err := curatorpeer.StartProcess(testutil.Context(t), name, exec.Command(bin),
			curatorpeer.Options{LogPath: filepath.Join(logs, name+".log")})
		if err != nil {
			t.Fatalf("Go contender process %s did not start: %v", name, err)
		}
		c.proc = &peer{t: t, Peer: pp}
		t.Cleanup(c.proc.stop)
	default:
		c.proc = startPeer(t, "chaos-"+name)
	}
	// tracker=false: Curator would otherwise learn the members' own
	// addresses from /zookeeper/config and reconnect around the proxies.
	ms := strconv.FormatInt(chaosSessionTimeout.Milliseconds(), 10)
	_, err := c.send("-", "client", name, strings.Join(addrs, ","), "session="+ms, "connection="+ms, "maxsleep=1000",
		"stamp=true", "tracker=false", "policy="+c.policy)(testutil.Context(t))
	testutil.Must(t, err)
	return c
}

// startContenders starts the client's contenders of roles, each running
// until chaosRun.stopAll, answering to referee: a wait lasts acquire at
// most, and a holder holds on, while a fault wants it to, until it is told
// or for linger at most.
func (c *chaosClient) startContenders(referee string, roles []chaosRole, acquire, linger time.Duration) {
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	for _, ro := range roles {
		for i := range ro.n {
			hold := chaosHold
			if ro.election() {
				hold = chaosTermHold
			}
			label := fmt.Sprintf("%s-%s-%d", c.name, ro.role, i)
			c.labels = append(c.labels, label)
			c.reports = append(c.reports, c.send("w-"+label, "chaos", c.name, string(ro.role), label,
				"path="+chaosBase+"/"+familyOf(c.name)+"/"+ro.guard, "referee="+referee, "leases="+strconv.Itoa(chaosLeases),
				"fenced="+strconv.FormatBool(ro.fenced), "hold="+ms(hold), "writes="+strconv.Itoa(chaosWrites),
				"acquire="+ms(acquire), "linger="+ms(linger)))
		}
	}
}

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
}

// poll asks done every interval until it says yes, and reports whether it
// did before deadline and the end of ctx.
func poll(ctx context.Context, deadline time.Time, every time.Duration, done func() bool) bool {
	for !done() {
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return false
		}
		pause(ctx, every)
	}
	return true
}
