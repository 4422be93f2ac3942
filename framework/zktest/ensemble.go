package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Ensemble is a ZooKeeper quorum of real servers (QuorumPeerMain). Each
// member runs on three free loopback ports (client, quorum, election), and
// the members share one temporary directory. Members can be stopped, killed
// and restarted one by one.
type Ensemble struct {
	dir     string
	members []*Server
	solo    bool // the hidden one-member quorum of a StartServer server

	// links are the raw proxies between members (WithPeerLinks): the one
	// member from uses to reach member to's quorum or election port.
	links map[peerLink]*Proxy

	closeOnce sync.Once
	closeErr  error
}

// StartEnsemble starts n members (3 is usual for tests) concurrently and
// returns once a leader is elected and every member serves.
func StartEnsemble(n int, opts ...Option) (*Ensemble, error) {
	if n < 1 {
		return nil, fmt.Errorf("zktest: ensemble size must be at least 1, got %d", n)
	}
	cfg := newConfig(opts)
	switch {
	case len(cfg.hosts) > 0 && len(cfg.hosts) < n:
		return nil, fmt.Errorf("zktest: WithHosts gives %d addresses for %d members", len(cfg.hosts), n)
	case len(cfg.hosts) > 0 && cfg.peerLinks:
		return nil, errors.New("zktest: WithPeerLinks needs members on loopback, not WithHosts")
	}
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := cfg.tempDir("zktest-ensemble-")
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	e := &Ensemble{dir: dir}
	for i := 0; i < n; i++ {
		m := newServer(cfg, filepath.Join(dir, "member-"+strconv.Itoa(i+1)), quorumMain)
		m.ens = e
		m.id = i + 1
		if err := os.MkdirAll(m.dataDir, 0o755); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("zktest: %w", err)
		}
		e.members = append(e.members, m)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		lastErr = e.start(cfg.startTimeout)
		if lastErr == nil {
			return e, nil
		}
		bind := false
		for _, m := range e.members {
			bind = bind || bindFailed(m.logPath)
		}
		if !bind {
			break
		}
	}
	e.Close()
	return nil, lastErr
}

// NewEnsemble is StartEnsemble for tests: it fails t on error and closes the
// ensemble when the test finishes.
func NewEnsemble(t testing.TB, n int, opts ...Option) *Ensemble {
	t.Helper()
	e, err := StartEnsemble(n, opts...)
	if err != nil {
		t.Fatalf("zktest: start ZooKeeper ensemble: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range e.members {
				t.Logf("zktest: ensemble member %d on %s; its log %s ends with:\n%s",
					m.id, m.Addr(), m.LogPath(), logTail(m.LogPath(), failureLogLines))
			}
		}
		if err := e.Close(); err != nil {
			t.Errorf("zktest: close ZooKeeper ensemble: %v", err)
		}
	})
	return e
}

// start picks fresh ports, writes every member's config, launches all JVMs at
// once and waits for all to serve. On failure every member is killed.
func (e *Ensemble) start(timeout time.Duration) error {
	k := e.members[0].cfg.portsPerServer()
	ports, err := freePorts(k * len(e.members))
	if err != nil {
		return err
	}
	for i, m := range e.members {
		m.setPorts(ports[k*i : k*(i+1)])
	}
	if e.members[0].cfg.peerLinks {
		if err := e.startLinks(); err != nil {
			return err
		}
	}
	for _, m := range e.members {
		if err := m.writeConfig(); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(timeout)
	for _, m := range e.members {
		m.opMu.Lock()
		p, err := launch(&m.cfg, m.id, m.mainClass, m.dir, m.cfgPath, m.logPath)
		if err == nil {
			m.mu.Lock()
			m.proc = p
			m.mu.Unlock()
		}
		m.opMu.Unlock()
		if err != nil {
			e.killAll()
			return err
		}
	}
	errs := make([]error, len(e.members))
	var wg sync.WaitGroup
	for i, m := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.opMu.Lock()
			defer m.opMu.Unlock()
			m.mu.Lock()
			p := m.proc
			m.mu.Unlock()
			if p != nil {
				errs[i] = m.waitReady(p, deadline)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		e.killAll()
		return err
	}
	return nil
}

func (e *Ensemble) killAll() {
	e.each(func(m *Server) { _ = m.Kill() })
}

// each runs f on every member concurrently and waits.
func (e *Ensemble) each(f func(*Server)) {
	var wg sync.WaitGroup
	for _, m := range e.members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(m)
		}()
	}
	wg.Wait()
}

// quorumPossible reports whether a majority of members have a running JVM.
func (e *Ensemble) quorumPossible() bool {
	n := 0
	for _, m := range e.members {
		if m.Running() {
			n++
		}
	}
	return n > len(e.members)/2
}

// ConnectString returns all members' client addresses, comma separated.
func (e *Ensemble) ConnectString() string {
	return strings.Join(e.Addrs(), ",")
}

// Addrs returns all members' client addresses.
func (e *Ensemble) Addrs() []string {
	a := make([]string, len(e.members))
	for i, m := range e.members {
		a[i] = m.Addr()
	}
	return a
}

// Members returns the members, in myid order (member i has myid i+1).
func (e *Ensemble) Members() []*Server {
	return append([]*Server(nil), e.members...)
}

// Dir returns the ensemble's temporary directory.
func (e *Ensemble) Dir() string { return e.dir }

// Leader returns the index in Members of the member whose "srvr" says
// "Mode: leader", polling for up to 10 seconds while an election runs.
func (e *Ensemble) Leader() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return e.WaitForLeader(ctx)
}

// WaitForLeader polls until a member says it is the leader and returns its
// index in Members.
func (e *Ensemble) WaitForLeader(ctx context.Context) (int, error) {
	var leader int
	err := e.poll(ctx, func() (bool, string) {
		modes := e.modes()
		leader = -1
		for i, m := range modes {
			if m == "leader" {
				leader = i
				return true, ""
			}
		}
		return false, fmt.Sprintf("modes %q", modes)
	})
	if err != nil {
		return -1, err
	}
	return leader, nil
}

// WaitForQuorum polls until exactly one member is leader and every running
// member serves as leader or follower.
func (e *Ensemble) WaitForQuorum(ctx context.Context) error {
	return e.poll(ctx, func() (bool, string) {
		modes := e.modes()
		leaders := 0
		for _, mode := range modes {
			switch mode {
			case "leader":
				leaders++
			case "follower", "down":
			default:
				return false, fmt.Sprintf("modes %q", modes)
			}
		}
		return leaders == 1, fmt.Sprintf("modes %q", modes)
	})
}

// modes returns each member's srvr mode: "leader", "follower", "" when it
// runs but does not serve, "down" when its JVM is not running.
func (e *Ensemble) modes() []string {
	modes := make([]string, len(e.members))
	for i, m := range e.members {
		if !m.Running() {
			modes[i] = "down"
			continue
		}
		out, err := fourLetterWord(m.Addr(), "srvr", time.Second)
		if err == nil {
			modes[i] = srvrMode(out)
		}
	}
	return modes
}

func (e *Ensemble) poll(ctx context.Context, check func() (bool, string)) error {
	interval := 10 * time.Millisecond
	for {
		ok, state := check()
		if ok {
			return nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("zktest: ensemble: %w (%s)", ctx.Err(), state)
		case <-t.C:
		}
		if interval < 100*time.Millisecond {
			interval *= 2
		}
	}
}

// peerLink is one direction of the quorum or election traffic between two
// members (indexes into members).
type peerLink struct {
	from, to int
	election bool
}

// startLinks starts a raw proxy for every peerLink, to the members' current
// ports, closing those of an earlier attempt.
func (e *Ensemble) startLinks() error {
	e.closeLinks()
	e.links = map[peerLink]*Proxy{}
	for i := range e.members {
		for j, to := range e.members {
			if i == j {
				continue
			}
			for _, election := range []bool{false, true} {
				port := to.quorumPort
				if election {
					port = to.electionPort
				}
				p, err := StartProxy(net.JoinHostPort(loopback, strconv.Itoa(port)), WithRawStream())
				if err != nil {
					e.closeLinks()
					return err
				}
				e.links[peerLink{i, j, election}] = p
			}
		}
	}
	return nil
}

func (e *Ensemble) closeLinks() {
	for _, p := range e.links {
		_ = p.Close()
	}
	e.links = nil
}

// peerPorts returns the loopback ports member from reaches member to's
// quorum and election ports at: through the links when there are some.
func (e *Ensemble) peerPorts(from, to *Server) (quorum, election int) {
	if from != to && e.links != nil {
		return portOf(e.links[peerLink{from.id - 1, to.id - 1, false}].Addr()),
			portOf(e.links[peerLink{from.id - 1, to.id - 1, true}].Addr())
	}
	return to.quorumPort, to.electionPort
}

func portOf(addr string) int {
	_, port, _ := net.SplitHostPort(addr)
	n, _ := strconv.Atoi(port)
	return n
}

// Partition cuts member i (an index into Members) off from the others. It
// cuts both directions, as a network partition between servers would: its
// links drop their connections and pass nothing until heal is called. The
// member's clients still reach it; once it notices it has no quorum it stops
// serving them, and they move to other members. It needs WithPeerLinks. heal
// is idempotent.
func (e *Ensemble) Partition(i int) (heal func(), err error) {
	if e.links == nil {
		return nil, errors.New("zktest: Partition needs an ensemble started WithPeerLinks")
	}
	if i < 0 || i >= len(e.members) {
		return nil, fmt.Errorf("zktest: no member %d", i)
	}
	var cut []*Proxy
	for l, p := range e.links {
		if l.from == i || l.to == i {
			cut = append(cut, p)
		}
	}
	for _, p := range cut {
		p.BlackHole()
		p.DropConnections()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, p := range cut {
				p.Restore()
			}
		})
	}, nil
}

// Close stops every member and removes the ensemble's directory. It is
// idempotent.
func (e *Ensemble) Close() error {
	e.closeOnce.Do(func() {
		errs := make([]error, len(e.members))
		var wg sync.WaitGroup
		for i, m := range e.members {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = m.Close()
			}()
		}
		wg.Wait()
		e.closeLinks()
		errs = append(errs, os.RemoveAll(e.dir))
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}
