package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	standaloneMain = "org.apache.zookeeper.server.ZooKeeperServerMain"
	quorumMain     = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
	loopback       = "127.0.0.1"
	startAttempts  = 3
)

// ErrClosed is returned by Restart on a closed Server.
var ErrClosed = errors.New("zktest: server closed")

// Server is one real ZooKeeper server process (a JVM) listening on a free
// loopback port, with its config, data and log in a temporary directory.
// It is either standalone (StartServer) or a member of an Ensemble.
//
// All methods are safe for concurrent use.
type Server struct {
	cfg        config
	dir        string // removed by Close
	dataDir    string
	cfgPath    string
	logPath    string
	mainClass  string
	clientPort int
	securePort int // 0 without TLS

	// Ensemble members only.
	ens          *Ensemble
	id           int // myid, 1-based
	quorumPort   int
	electionPort int

	opMu   sync.Mutex // serialises start/stop/close
	closed bool       // guarded by opMu

	mu   sync.Mutex
	proc *process // current JVM; nil when not running
}

// Available reports whether java and ZooKeeper can be found, so a test can
// t.Skip instead of failing where they are not installed. The error says how
// to install them.
func Available() error {
	if _, err := javaBinary(); err != nil {
		return err
	}
	_, err := classpath(false)
	return err
}

// StartServer starts a single ZooKeeper server on a free port of 127.0.0.1
// in a new temporary directory and returns once it serves clients. Close it
// when done.
//
// The server is a quorum of one (it reports Mode "leader"), unless
// WithStandaloneMode asks for ZooKeeper's standalone mode. With ZooKeeper
// 3.8.0 each has a bug of its own (see WithStandaloneMode): the quorum of
// one may keep a lone client's request, its handshake included, until the
// server's next request (ZOOKEEPER-4537); standalone mode leaves a
// connection made while it (re)starts hanging. A server that is never
// restarted is better standalone.
func StartServer(opts ...Option) (*Server, error) {
	cfg := newConfig(opts)
	if err := Available(); err != nil {
		return nil, err
	}
	dir, err := cfg.tempDir("zktest-")
	if err != nil {
		return nil, fmt.Errorf("zktest: %w", err)
	}
	var s *Server
	if cfg.standalone {
		s = newServer(cfg, dir, standaloneMain)
	} else {
		// A quorum of one: see WithStandaloneMode for why.
		s = newServer(cfg, dir, quorumMain)
		s.ens = &Ensemble{dir: dir, members: []*Server{s}, solo: true}
		s.id = 1
	}
	if err := os.MkdirAll(s.dataDir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("zktest: %w", err)
	}
	var lastErr error
	for attempt := 0; attempt < startAttempts; attempt++ {
		ports, err := freePorts(cfg.portsPerServer())
		if err != nil {
			lastErr = err
			break
		}
		s.setPorts(ports)
		if err := s.writeConfig(); err != nil {
			lastErr = err
			break
		}
		lastErr = s.startAndWait(time.Now().Add(cfg.startTimeout))
		if lastErr == nil {
			return s, nil
		}
		if !bindFailed(s.logPath) {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// NewServer is StartServer for tests: it fails t on error and closes the
// server when the test and its subtests finish.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := StartServer(opts...)
	if err != nil {
		t.Fatalf("zktest: start ZooKeeper: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zktest: ZooKeeper on %s; its log %s ends with:\n%s", s.Addr(), s.LogPath(), logTail(s.LogPath(), failureLogLines))
		}
		if err := s.Close(); err != nil {
			t.Errorf("zktest: close ZooKeeper: %v", err)
		}
	})
	return s
}

// failureLogLines is how much of a server's log NewServer and NewEnsemble
// print when the test failed.
var failureLogLines = 60

func newServer(cfg config, dir, mainClass string) *Server {
	return &Server{
		cfg:       cfg,
		dir:       dir,
		dataDir:   filepath.Join(dir, "data"),
		cfgPath:   filepath.Join(dir, "zoo.cfg"),
		logPath:   filepath.Join(dir, "zookeeper.log"),
		mainClass: mainClass,
	}
}

// setPorts gives the server its ports, as many as portsPerServer: client,
// quorum, election, and the secure client port with TLS.
func (s *Server) setPorts(ports []int) {
	s.clientPort, s.quorumPort, s.electionPort = ports[0], ports[1], ports[2]
	if len(ports) > 3 {
		s.securePort = ports[3]
	}
}

// ConnectString returns "127.0.0.1:PORT", for zk.Connect and friends.
func (s *Server) ConnectString() string { return s.Addr() }

// Addr returns the client address, "127.0.0.1:PORT" (its WithHosts address
// instead of 127.0.0.1 if it has one).
func (s *Server) Addr() string { return net.JoinHostPort(s.host(), strconv.Itoa(s.clientPort)) }

// host returns the address the server listens on: its WithHosts address,
// else 127.0.0.1.
func (s *Server) host() string {
	if i := max(s.id, 1) - 1; i < len(s.cfg.hosts) {
		return s.cfg.hosts[i]
	}
	return loopback
}

// Port returns the client port.
func (s *Server) Port() int { return s.clientPort }

// LogPath returns the path of the server's log (stdout and stderr of every
// run, appended). It is removed by Close.
func (s *Server) LogPath() string { return s.logPath }

// Dir returns the server's temporary directory (config, data, log).
func (s *Server) Dir() string { return s.dir }

// DataDir returns ZooKeeper's dataDir.
func (s *Server) DataDir() string { return s.dataDir }

// ID returns the server's myid: 1-based in an Ensemble, 1 for a server from
// StartServer, 0 in standalone mode.
func (s *Server) ID() int { return s.id }

// PID returns the pid of the running JVM, or 0 if it is not running.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return 0
	}
	return s.proc.cmd.Process.Pid
}

// Running reports whether the JVM is running.
func (s *Server) Running() bool { return s.PID() != 0 }

// Stop sends SIGTERM to the server's JVM and waits for it to exit (SIGKILL
// after 5s). It is a no-op if the server is not running.
func (s *Server) Stop() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.stopLocked(true)
	return nil
}

// Kill sends SIGKILL to the server's JVM and waits for it to exit, like a
// crash: no clean shutdown. It is a no-op if the server is not running.
func (s *Server) Kill() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	s.stopLocked(false)
	return nil
}

// Restart stops the server (SIGTERM) if it is running and starts it again,
// with the same ports, config and data directory. It waits until the server
// serves clients. An ensemble member waits until it has rejoined the quorum;
// when too few other members run for a quorum, it waits only until the JVM
// answers "ruok".
func (s *Server) Restart() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.stopLocked(true)
	deadline := time.Now().Add(s.cfg.startTimeout)
	for {
		err := s.startAndWait(deadline)
		if err == nil {
			return nil
		}
		// The port may be briefly held by someone else: try again until the
		// deadline. Anything else is final.
		if !bindFailed(s.logPath) || !time.Now().Before(deadline) {
			return err
		}
	}
}

// Close stops the server if it is running and removes its temporary
// directory. It is idempotent.
func (s *Server) Close() error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.stopLocked(true)
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("zktest: remove %s: %w", s.dir, err)
	}
	return nil
}

func (s *Server) stopLocked(graceful bool) {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.terminate(graceful)
	}
}

// startAndWait launches the JVM and polls until it is ready or the deadline
// passes or the JVM exits. On failure the JVM is killed and the error carries
// the tail of the log. Callers hold opMu (or own s exclusively).
func (s *Server) startAndWait(deadline time.Time) error {
	p, err := launch(&s.cfg, s.id, s.mainClass, s.dir, s.cfgPath, s.logPath)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	if err := s.waitReady(p, deadline); err != nil {
		s.stopLocked(false)
		return err
	}
	return nil
}

// waitReady polls the server with four-letter words until it serves, with
// a bounded deadline.
func (s *Server) waitReady(p *process, deadline time.Time) error {
	interval := 10 * time.Millisecond
	var last string
	for {
		ok, state := s.ready()
		if ok {
			return nil
		}
		last = state
		if p.exited() {
			return s.startError(fmt.Sprintf("exited during startup (%v)", p.waitErr))
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return s.startError(fmt.Sprintf("not serving after %v (last answer: %q)", s.cfg.startTimeout, last))
		}
		if wait > interval {
			wait = interval
		}
		t := time.NewTimer(wait)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
		if interval < 200*time.Millisecond {
			interval *= 2
		}
	}
}

// ready reports whether the server serves clients. An ensemble member that
// cannot currently be part of a quorum is ready once it answers ruok.
func (s *Server) ready() (bool, string) {
	if s.ens != nil && !s.ens.quorumPossible() {
		out, err := fourLetterWord(s.Addr(), "ruok", time.Second)
		if err != nil {
			return false, err.Error()
		}
		return out == "imok", out
	}
	out, err := fourLetterWord(s.Addr(), "srvr", time.Second)
	if err != nil {
		return false, err.Error()
	}
	mode := srvrMode(out)
	if s.ens != nil {
		return mode == "leader" || mode == "follower", out
	}
	return mode != "", out
}

func (s *Server) startError(what string) error {
	return fmt.Errorf("zktest: ZooKeeper %s on %s %s; log %s ends with:\n%s",
		s.describe(), s.Addr(), what, s.logPath, logTail(s.logPath, 40))
}

func (s *Server) describe() string {
	if s.ens != nil && !s.ens.solo {
		return fmt.Sprintf("member %d", s.id)
	}
	return "server"
}

// writeConfig writes zoo.cfg (and myid for an ensemble member).
func (s *Server) writeConfig() error {
	c := &s.cfg
	tickMs := c.tickTime.Milliseconds()
	if tickMs < 1 {
		tickMs = 1
	}
	ticks := func(d time.Duration, min int64) int64 {
		n := (d.Milliseconds() + tickMs - 1) / tickMs
		if n < min {
			n = min
		}
		return n
	}
	var b strings.Builder
	kv := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	b.WriteString("# written by github.com/gocurator/curator/framework/zktest\n")
	kv("tickTime", tickMs)
	kv("initLimit", ticks(10*time.Second, 10))
	kv("syncLimit", ticks(2*time.Second, 5))
	kv("dataDir", s.dataDir)
	kv("minSessionTimeout", c.minSession.Milliseconds())
	kv("maxSessionTimeout", c.maxSession.Milliseconds())
	kv("maxClientCnxns", 0)
	kv("4lw.commands.whitelist", "*")
	kv("admin.enableServer", "false")
	kv("forceSync", "no")
	kv("preAllocSize", 1024)
	kv("autopurge.purgeInterval", 0)
	if s.ens == nil {
		kv("clientPort", s.clientPort)
		kv("clientPortAddress", s.host())
	} else {
		kv("standaloneEnabled", "false")
		kv("reconfigEnabled", "false")
		kv("quorumListenOnAllIPs", "false")
		for _, m := range s.ens.members {
			quorum, election := s.ens.peerPorts(s, m)
			host := m.host()
			if m == s && s.ens.links != nil {
				// A member tells the peers it dials its own election
				// address, and a peer with a higher id dials back there,
				// around the links; a wildcard one it does not tell, and the
				// peer dials back through its link, which a partition cuts.
				host = "0.0.0.0"
			}
			kv("server."+strconv.Itoa(m.id), fmt.Sprintf("%s:%d:%d;%s:%d",
				host, quorum, election, m.host(), m.clientPort))
		}
		if err := os.WriteFile(filepath.Join(s.dataDir, "myid"), []byte(strconv.Itoa(s.id)+"\n"), 0o644); err != nil {
			return fmt.Errorf("zktest: write myid: %w", err)
		}
	}
	if s.securePort != 0 {
		kv("secureClientPort", s.securePort)
		kv("secureClientPortAddress", s.host())
	}
	for _, e := range c.extra {
		kv(e[0], e[1])
	}
	if err := os.WriteFile(s.cfgPath, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("zktest: write zoo.cfg: %w", err)
	}
	return nil
}

// FourLetterWord sends a four-letter command ("ruok", "srvr", "mntr",
// "cons", "wchc", "dump", ...) to the server and returns its answer.
func (s *Server) FourLetterWord(cmd string) (string, error) {
	return fourLetterWord(s.Addr(), cmd, 5*time.Second)
}

// Mntr returns the server's "mntr" output as a map, e.g.
// m["zk_server_state"] == "leader", m["zk_ephemerals_count"] == "1".
func (s *Server) Mntr() (map[string]string, error) {
	out, err := s.FourLetterWord("mntr")
	if err != nil {
		return nil, err
	}
	m := parseMntr(out)
	if len(m) == 0 {
		return nil, fmt.Errorf("zktest: unexpected mntr answer from %s: %q", s.Addr(), out)
	}
	return m, nil
}

// Mode returns the server's mode from "srvr": "leader" or "follower" (or
// "standalone" with WithStandaloneMode), or "" when it is not serving.
func (s *Server) Mode() (string, error) {
	out, err := s.FourLetterWord("srvr")
	if err != nil {
		return "", err
	}
	return srvrMode(out), nil
}

func fourLetterWord(addr, cmd string, timeout time.Duration) (string, error) {
	if len(cmd) != 4 {
		return "", fmt.Errorf("zktest: four-letter word must have 4 letters: %q", cmd)
	}
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	if err != nil && len(b) == 0 {
		return "", err
	}
	return string(b), nil
}

func srvrMode(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Mode:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func parseMntr(out string) map[string]string {
	m := make(map[string]string)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok && k != "" {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
