package compat_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/compat_test/chaoscontender"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/state"
)

// This file holds the chaos suite's clients and their contenders: Go
// clients in the test's own process (g1, g2), Go contender processes
// (compat_test/gopeer: p1, p2) and Java Curator peers (j1, j2), all running
// the same contenders (chaoscontender, and CuratorPeer's chaos verb). A
// client's number is its family: the locks it contends for, and the client
// lane that faults it.

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

// chaosClient is one client of the run.
type chaosClient struct {
	name string
	// policy is the client's error policy: "standard" (the Go clients of
	// family 1), "session" (those of family 2: their holders are told at
	// LOST only) or "curator" (the Java clients).
	policy string
	prox   []*zktest.Proxy
	goc    *chaoscontender.Client // a Go client in the test's process, else nil
	proc   *peer                  // a process of its own, else nil
	labels []string               // its contenders
	calls  []*call                // a process's contenders

	mu    sync.Mutex
	heard []stateEvent // an in-process client's states
}

// stateEvent is a connection state a client heard, and when.
type stateEvent struct {
	state string // as Curator names it: CONNECTED, SUSPENDED, ...
	at    time.Time
}

func (c *chaosClient) curator() bool { return c.policy == "curator" }

// lossStates are the states at which the client's holders are told.
func (c *chaosClient) lossStates() []string {
	if c.policy == "session" {
		return []string{"LOST"}
	}
	return []string{"SUSPENDED", "LOST"}
}

// createOpcode is the opcode of the client's creates: go-zookeeper sends
// create, ZooKeeper's Java client (as Curator calls it) create2.
func (c *chaosClient) createOpcode() int32 {
	if c.curator() {
		return zktest.OpCreate2
	}
	return zktest.OpCreate
}

// states lists the client's connection states since t.
func (c *chaosClient) states(since time.Time) []stateEvent {
	var out []stateEvent
	if c.proc == nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, ev := range c.heard {
			if !ev.at.Before(since) {
				out = append(out, ev)
			}
		}
		return out
	}
	for _, ev := range c.proc.EventTexts() { // "state <client> <STATE> <µs>"
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

func (c *chaosClient) sessionID(ctx context.Context) (int64, error) {
	if c.goc != nil {
		return c.goc.Framework().SessionID(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.proc.SessionID(ctx, c.name)
}

// currentProxy returns the proxy the client is connected through, or nil:
// the one that passed it a reply last, within half a session timeout (a
// connected client hears from its server at least every third of it).
func (c *chaosClient) currentProxy() *zktest.Proxy {
	var best *zktest.Proxy
	for _, p := range c.prox {
		if best == nil || p.LastReply().After(best.LastReply()) {
			best = p
		}
	}
	if time.Since(best.LastReply()) > chaosSessionTimeout/2 {
		return nil
	}
	return best
}

// waitConnected waits until the client is connected; a process, by a
// connection it heard of after since (it may not have noticed yet that the
// one before is gone).
func (c *chaosClient) waitConnected(ctx context.Context, since time.Time) error {
	if c.goc != nil {
		return c.goc.Framework().BlockUntilConnected(ctx)
	}
	for {
		if evs := c.states(since); len(evs) > 0 && slices.Contains([]string{"CONNECTED", "RECONNECTED"}, evs[len(evs)-1].state) {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		pause(ctx, 20*time.Millisecond) // polling the process's events
	}
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

// waitState polls c's states until one of states has come since t.
func waitState(ctx context.Context, c *chaosClient, since time.Time, states ...string) (stateEvent, error) {
	for {
		if ev, ok := firstState(c, since, states...); ok {
			return ev, nil
		}
		if ctx.Err() != nil {
			return stateEvent{}, ctx.Err()
		}
		pause(ctx, 10*time.Millisecond) // polling the recorded states
	}
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
	connect := strings.Join(addrs, ",")
	ms := strconv.FormatInt(chaosSessionTimeout.Milliseconds(), 10)
	switch name[0] {
	case 'g':
		l, err := zap.Config{Level: zap.NewAtomicLevelAt(zap.InfoLevel), Encoding: "console", EncoderConfig: zap.NewDevelopmentEncoderConfig(),
			OutputPaths: []string{filepath.Join(logs, name+".log")}, ErrorOutputPaths: []string{"stderr"}}.Build()
		if err != nil {
			t.Fatal(err)
		}
		c.goc, err = chaoscontender.Open(chaoscontender.Config{Connect: connect, SessionTimeout: chaosSessionTimeout, Session: c.policy == "session",
			Logger: l.With(zap.String("client", name)), Listener: state.ListenerFunc(func(s state.ConnectionState) {
				c.mu.Lock()
				defer c.mu.Unlock()
				c.heard = append(c.heard, stateEvent{s.String(), time.Now()})
			})})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.goc.Close() })
		if err := c.goc.Framework().BlockUntilConnected(testutil.Context(t)); err != nil {
			t.Fatal(err)
		}
		return c
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
	c.proc.client(t, name, connect, "session="+ms, "connection="+ms, "maxsleep=1000", "stamp=true", "tracker=false", "policy="+c.policy)
	return c
}

// buildGoPeer builds the Go contender process and returns the binary's
// path. It is built as a service would be, without the race detector (the
// Go clients in the test's own process run under it when the test does).
func buildGoPeer(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "gopeer")
	build := exec.CommandContext(testutil.Context(t), "go", "build", "-o", bin, "./gopeer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go contender process: %v\n%s", err, out)
	}
	return bin
}

// startContenders starts every contender of the client: goroutines running
// until ctx ends, or a process's chaos verbs. A contender's report goes to
// report once it stops.
func (c *chaosClient) startContenders(ctx context.Context, wg *sync.WaitGroup, ref string, report func(label, reply string)) {
	for _, ro := range chaosRoles {
		for i := range ro.n {
			hold := chaosHold
			if ro.election() {
				hold = chaosTermHold
			}
			ct := chaoscontender.Contender{Label: fmt.Sprintf("%s-%s-%d", c.name, ro.role, i), Role: ro.role,
				Path: chaosBase + "/" + familyOf(c.name) + "/" + ro.guard, Leases: chaosLeases, Referee: ref, Fenced: ro.fenced,
				Hold: hold, Writes: chaosWrites, Acquire: chaosAcquire, Linger: chaosLingerMax}
			c.labels = append(c.labels, ct.Label)
			if c.goc != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					report(ct.Label, c.goc.Run(ctx, ct).String())
				}()
				continue
			}
			ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
			c.calls = append(c.calls, c.proc.send("w-"+ct.Label, "chaos", c.name, string(ct.Role), ct.Label, "path="+ct.Path,
				"referee="+ct.Referee, "leases="+strconv.Itoa(ct.Leases), "fenced="+strconv.FormatBool(ct.Fenced), "hold="+ms(ct.Hold),
				"writes="+strconv.Itoa(ct.Writes), "acquire="+ms(ct.Acquire), "linger="+ms(ct.Linger)))
		}
	}
}

// stopContenders stops a process's contenders and waits for their reports.
func (c *chaosClient) stopContenders(ctx context.Context, report func(label, reply string)) error {
	var errs []error
	for _, l := range c.labels {
		if _, err := c.proc.send("-", "chaos-stop", l).Wait(ctx); err != nil && !strings.Contains(err.Error(), "no chaos loop") {
			errs = append(errs, err)
		}
	}
	for i, call := range c.calls {
		reply, err := call.Wait(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		report(c.labels[i], reply)
	}
	return errors.Join(errs...)
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
