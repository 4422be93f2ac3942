package compat_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/testutil"
)

// This file holds the chaos suite's clients in processes of their own: Java
// Curator clients in CuratorPeer JVMs, and gocurator clients in Go contender
// processes (compat_test/gopeer), both driven over the peer protocol with the
// same verbs ("chaos" runs a contender loop), so that a fault can pause
// either as a whole process.

// peerClient is one client in a peer process, with its contender loops.
type peerClient struct {
	clientName string
	p          *peer
	lang       string // "go" or "java"
	prox       []*zktest.Proxy
	labels     []string
	calls      []*call

	mu      sync.Mutex
	lingers []*call // linger requests, answered in order by one worker
}

func (j *peerClient) name() string             { return j.clientName }
func (j *peerClient) proxies() []*zktest.Proxy { return j.prox }
func (j *peerClient) process() *peer           { return j.p }

// buildGoPeer builds the Go contender process and returns the binary's
// path. It is built as a service would be, without the race detector (the
// Go clients in the test's own process run under it when the test does):
// the processes are the suite's production-like contenders.
func buildGoPeer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gopeer")
	build := exec.CommandContext(testutil.Context(t), filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./gopeer")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the Go contender process: %v\n%s", err, out)
	}
	return bin
}

// startGoPeer starts the Go contender process bin as a peer, stopped by its
// pid when the test ends.
func startGoPeer(t testing.TB, bin, name string) *peer {
	t.Helper()
	pp, err := curatorpeer.StartProcess(testutil.Context(t), name, exec.Command(bin),
		curatorpeer.Options{LogPath: filepath.Join(t.TempDir(), name+".log")})
	if err != nil {
		t.Fatalf("Go contender process %s did not start: %v", name, err)
	}
	p := &peer{t: t, Peer: pp}
	t.Cleanup(p.stop)
	return p
}

// startPeerClient opens the client in p and makes its locks.
func startPeerClient(t testing.TB, p *peer, lang, name string, prox []*zktest.Proxy) *peerClient {
	t.Helper()
	j := &peerClient{clientName: name, p: p, lang: lang, prox: prox}
	ms := strconv.FormatInt(chaosSessionTimeout.Milliseconds(), 10)
	// tracker=false: Curator would otherwise learn the members' own
	// addresses from /zookeeper/config and reconnect around the proxies.
	p.client(t, name, connectString(prox), "session="+ms, "connection="+ms, "maxsleep=1000", "stamp=true", "tracker=false")
	fam := familyOf(name)
	p.do(t, "-", "mutex", name+"-mutex", name, chaosMutex.path(fam))
	p.do(t, "-", "rwlock", name+"-rw", name, chaosWrite.path(fam))
	p.do(t, "-", "semaphore", name+"-sem", name, chaosSem.path(fam), strconv.Itoa(chaosLeases))
	return j
}

// start starts the client's chaos loops: a lock contender's ("chaos") or an
// election candidate's ("elect") each.
func (j *peerClient) start(r *chaosRun) {
	for _, cs := range chaosContenders {
		ref := map[string]string{"mutex": "-mutex", "write": "-rw.write", "read": "-rw.read", "sem": "-sem"}[cs.lock.name]
		for i := 0; i < cs.n; i++ {
			label := contenderLabel(j.clientName, cs.lock, i)
			fam := familyOf(j.clientName)
			args := []string{"label=" + label, "guard=" + r.guards[cs.lock.guardOf(fam)].dir, "told=" + r.toldPath,
				"linger=" + strconv.FormatInt(chaosLingerMax.Milliseconds(), 10), "progress=" + r.resource.progressURL()}
			if res := cs.lock.resourceOf(fam); res != "" {
				args = append(args, "resource="+r.resource.url(res))
			}
			verb := "chaos"
			if cs.lock.isElection() {
				verb = "elect"
				args = append([]string{j.clientName, "kind=" + cs.lock.name, "path=" + cs.lock.path(fam),
					"hold=" + strconv.FormatInt(chaosTermHold.Milliseconds(), 10), "writes=" + strconv.Itoa(chaosWrites)}, args...)
			} else {
				args = append([]string{j.clientName + ref, "kind=" + string(cs.lock.kind), "max=" + strconv.Itoa(cs.lock.max),
					"hold=" + strconv.FormatInt(chaosHold.Milliseconds(), 10), "writes=" + strconv.Itoa(chaosWrites),
					"acquire=" + strconv.FormatInt(chaosAcquireMax.Milliseconds(), 10)}, args...)
			}
			j.labels = append(j.labels, label)
			j.calls = append(j.calls, j.p.send("w-"+label, verb, args...))
		}
	}
}

// stop asks every loop to stop and waits for their reports, and for the
// answers to every linger request.
func (j *peerClient) stop(ctx context.Context) (map[string]int64, error) {
	j.mu.Lock()
	lingers := j.lingers
	j.mu.Unlock()
	for _, c := range lingers {
		if _, err := c.wait(ctx); err != nil {
			return nil, err
		}
	}
	for _, l := range j.labels {
		if _, err := j.p.send("-", "chaos-stop", l).wait(ctx); err != nil && !strings.Contains(err.Error(), "no chaos loop") {
			return nil, err
		}
	}
	total := map[string]int64{}
	var errs []error
	for i, c := range j.calls {
		reply, err := c.wait(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, kv := range strings.Fields(reply) {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				errs = append(errs, fmt.Errorf("chaos loop reply %q", reply))
				break
			}
			if k == "acquisitions" && (strings.Contains(j.labels[i], "-latch-") || strings.Contains(j.labels[i], "-selector-")) {
				k = "terms" // an election candidate's acquisitions are its terms of leadership
			}
			total[k] += n
		}
	}
	return total, errors.Join(errs...)
}

// ask runs a quick request on the peer's pool, with a deadline.
func (j *peerClient) ask(ctx context.Context, verb string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return j.p.send("-", verb, args...).wait(ctx)
}

// setLinger sends the request without waiting, to a worker of its own so
// that requests are answered in order: a paused process answers only once
// resumed. stop checks the answers.
func (j *peerClient) setLinger(on bool) error {
	c := j.p.send("linger", "linger", j.clientName, map[bool]string{true: "on", false: "off"}[on])
	j.mu.Lock()
	j.lingers = append(j.lingers, c)
	j.mu.Unlock()
	return nil
}

func (j *peerClient) holdings(ctx context.Context) ([]heldNow, error) {
	r, err := j.ask(ctx, "holdings", j.clientName)
	if err != nil {
		return nil, err
	}
	var out []heldNow
	for _, f := range strings.Fields(r) {
		id, tok, _ := strings.Cut(f, "=")
		n, err := strconv.ParseInt(tok, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: bad holdings reply %q", j.clientName, r)
		}
		out = append(out, heldNow{id: id, token: n})
	}
	return out, nil
}

// spanBounds returns, for each of the process's contender loops, the
// highest number a holding of it can have that began before now: its count
// of acquisitions, plus one if it is acquiring (that one may be granted on
// the session about to be paused).
func (j *peerClient) spanBounds(ctx context.Context) (map[string]int64, error) {
	r, err := j.ask(ctx, "counts")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, f := range strings.Fields(r) {
		label, rest, _ := strings.Cut(f, "=")
		n, what, _ := strings.Cut(rest, ":")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || (what != "acquiring" && what != "holding") {
			return nil, fmt.Errorf("%s: bad counts reply %q", j.clientName, r)
		}
		if what == "acquiring" {
			v++
		}
		out[label] = v
	}
	return out, nil
}

func (j *peerClient) sessionID(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return j.p.SessionID(ctx, j.clientName)
}

func (j *peerClient) currentProxy(ctx context.Context) (*zktest.Proxy, error) {
	for {
		r, err := j.ask(ctx, "remote", j.clientName)
		if err != nil {
			return nil, err
		}
		if p := proxyAt(j.prox, r); p != nil {
			return p, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%s is connected to %q, none of its proxies: %w", j.clientName, r, ctx.Err())
		case <-time.After(20 * time.Millisecond): // polling until connected
		}
	}
}

// states returns the client's "state" events since t (by the µs the
// process's listener stamped them with).
func (j *peerClient) states(since time.Time) []stateEvent {
	var out []stateEvent
	for _, ev := range j.p.eventList() {
		f := strings.Fields(ev)
		if len(f) != 4 || f[0] != "state" || f[1] != j.clientName {
			continue
		}
		us, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil || us < since.UnixMicro() {
			continue
		}
		out = append(out, stateEvent{state: f[2], at: time.UnixMicro(us)})
	}
	return out
}

// partitioned: the client's loss signal is its listener hearing SUSPENDED
// or LOST (which tells its holdings in the same call); see awaitLossState.
func (j *peerClient) partitioned(t0 time.Time) func(time.Time) (time.Duration, bool, string) {
	return func(deadline time.Time) (time.Duration, bool, string) {
		return awaitLossState(j, t0, deadline)
	}
}

func (j *peerClient) curator() bool { return j.lang != "go" }

func (j *peerClient) createOpcode() int32 {
	if j.lang == "go" {
		return zktest.OpCreate
	}
	return zktest.OpCreate2
}

func (j *peerClient) waitConnected(ctx context.Context, since time.Time) error {
	_, err := waitState(ctx, j, since, "CONNECTED", "RECONNECTED")
	return err
}
