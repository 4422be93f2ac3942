package zktest

import (
	"io"
	"os"
	"time"
)

// Default settings of a test server. They favour fast failure detection:
// sessions from 200ms up to 60s are accepted, and empty containers are
// reaped within half a second.
const (
	DefaultTickTime               = 100 * time.Millisecond
	DefaultMaxSessionTimeout      = 60 * time.Second
	DefaultContainerCheckInterval = 500 * time.Millisecond
	DefaultStartTimeout           = 45 * time.Second
)

// Option configures a Server or an Ensemble.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	tickTime       time.Duration
	minSession     time.Duration // 0: 2 × tickTime
	maxSession     time.Duration
	containerCheck time.Duration
	startTimeout   time.Duration
	logOutput      io.Writer
	jvmFlags       []string
	extra          [][2]string
	standalone     bool
	tmpfs          bool      // WithTmpfs: the temporary directory on tmpfsDir when it can be
	tls            *TLSFiles // nil: no secureClientPort
	peerLinks      bool      // members reach each other through raw proxies
	hosts          []string  // WithHosts: the servers' addresses; none: loopback
	wrap           func(id int) []string
}

// tmpfsDir is where WithTmpfs puts a server's temporary directory: Linux's
// shared-memory tmpfs.
var tmpfsDir = "/dev/shm"

// tempDir makes the temporary directory of a server or ensemble: on
// tmpfsDir with WithTmpfs when that is a writable directory, else in
// os.TempDir().
func (c *config) tempDir(pattern string) (string, error) {
	if c.tmpfs {
		if dir, err := os.MkdirTemp(tmpfsDir, pattern); err == nil {
			return dir, nil
		}
	}
	return os.MkdirTemp("", pattern)
}

// portsPerServer is how many ports each server takes: client, quorum and
// election, and the secure client port with TLS.
func (c *config) portsPerServer() int {
	if c.tls != nil {
		return 4
	}
	return 3
}

func newConfig(opts []Option) config {
	c := config{
		tickTime:       DefaultTickTime,
		maxSession:     DefaultMaxSessionTimeout,
		containerCheck: DefaultContainerCheckInterval,
		startTimeout:   DefaultStartTimeout,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.tickTime < time.Millisecond {
		c.tickTime = DefaultTickTime
	}
	if c.minSession <= 0 {
		c.minSession = 2 * c.tickTime
	}
	if c.maxSession < c.minSession {
		c.maxSession = c.minSession
	}
	if c.containerCheck <= 0 {
		c.containerCheck = DefaultContainerCheckInterval
	}
	if c.startTimeout <= 0 {
		c.startTimeout = DefaultStartTimeout
	}
	return c
}

// WithTickTime sets ZooKeeper's tickTime (default 100ms). Session expiry is
// checked once per tick, so a small tick makes expiry prompt.
func WithTickTime(d time.Duration) Option {
	return optionFunc(func(c *config) { c.tickTime = d })
}

// WithSessionTimeoutRange sets minSessionTimeout and maxSessionTimeout: the
// server clamps every session timeout a client asks for into [min, max].
// The defaults are [2×tickTime, 60s].
func WithSessionTimeoutRange(min, max time.Duration) Option {
	return optionFunc(func(c *config) { c.minSession, c.maxSession = min, max })
}

// WithContainerCheckInterval sets how often the server reaps empty container
// nodes (default 500ms). It sets the JVM property
// znode.container.checkIntervalMs, whose ZooKeeper default is 60s.
func WithContainerCheckInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.containerCheck = d })
}

// WithLogOutput copies the server's log to w as well as to LogPath. w must be
// safe to use until the server is closed.
func WithLogOutput(w io.Writer) Option {
	return optionFunc(func(c *config) { c.logOutput = w })
}

// WithStartTimeout bounds how long StartServer, StartEnsemble and Restart wait
// for the server to serve (default 45s).
func WithStartTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.startTimeout = d })
}

// WithJVMFlags appends flags (for example "-Dzookeeper.foo=bar") to the java
// command line, after the defaults, so they override them.
func WithJVMFlags(flags ...string) Option {
	return optionFunc(func(c *config) { c.jvmFlags = append(c.jvmFlags, flags...) })
}

// WithConfig adds a key=value line to zoo.cfg (later lines override earlier
// ones, including the defaults written by this package).
func WithConfig(key, value string) Option {
	return optionFunc(func(c *config) { c.extra = append(c.extra, [2]string{key, value}) })
}

// WithStandaloneMode makes StartServer run ZooKeeper's standalone mode
// (ZooKeeperServerMain). The default is a quorum of one member
// (QuorumPeerMain with standaloneEnabled=false, which reports itself as
// "leader").
//
// Beware: in ZooKeeper 3.8.0's standalone mode, a client connection that
// arrives while the server is starting (after it binds its port, before it
// serves) is neither answered nor closed, because of a NullPointerException
// in ZooKeeperServer.removeCnxn. A client reconnecting during Restart can
// then hang until its own connect timeout (go-zookeeper: 20/3 of the session
// timeout). A one-member quorum closes such connections, so clients retry
// promptly. Ensembles ignore this option.
//
// The quorum of one has a 3.8.0 bug of its own, which standalone mode (no
// CommitProcessor) has not: ZOOKEEPER-4537 (fixed in 3.8.1), a lost
// wake-up in the CommitProcessor, strands a committed request until the
// server's next request of any client. A lone client's write then waits
// for its next ping (a third of the session timeout); a lone client's
// handshake (its createSession) for another client's request, as the
// client sends nothing else meanwhile. It strikes about one write or
// handshake in a few thousand, more often on a loaded machine. Ensembles
// have it too.
func WithStandaloneMode() Option {
	return optionFunc(func(c *config) { c.standalone = true })
}

// WithPeerLinks routes the traffic between an ensemble's members through
// proxies, for Ensemble.Partition. A test can then cut a member off from the
// others while its clients still reach it. Each direction of each pair gets a
// raw proxy for its quorum and election traffic. Servers that are not
// ensemble members ignore it.
func WithPeerLinks() Option {
	return optionFunc(func(c *config) { c.peerLinks = true })
}

// WithTmpfs puts the server's temporary directory on /dev/shm, a tmpfs on
// Linux, when that is a writable directory. The directory holds zoo.cfg, the
// server's log and ZooKeeper's dataDir (snapshots and the transaction log);
// on tmpfs no disk stall (writeback, a busy device) delays a request. Where
// /dev/shm is not a writable directory, the option does nothing and the
// directory stays in os.TempDir(). DataDir says where it went. The data lives
// in memory until Close removes it.
func WithTmpfs() Option {
	return optionFunc(func(c *config) { c.tmpfs = true })
}

// WithHosts makes the servers listen on the given addresses instead of
// 127.0.0.1, on every port (client, quorum, election, secure): hosts[i] for
// the ensemble member whose myid is i+1, hosts[0] for a server. Addr
// returns them, and the test process checks readiness through them, so it
// must reach them. With WithCommandWrapper it puts members in network
// namespaces of their own (the partition suite's internal/netpart). An
// ensemble needs a host per member, and cannot have WithPeerLinks, whose
// proxies listen on loopback.
func WithHosts(hosts ...string) Option {
	return optionFunc(func(c *config) { c.hosts = append([]string(nil), hosts...) })
}

// WithCommandWrapper runs each server's JVM under a command: wrap(id) (the
// member's myid; 1 for a server, 0 in standalone mode), then the java
// command line, for example `ip netns exec <namespace>`. The wrapper must
// exec the JVM in its own process, as ip(8) does, so that PID is the JVM's
// and Kill reaches it. A nil wrap, or an empty command, runs java itself.
func WithCommandWrapper(wrap func(id int) []string) Option {
	return optionFunc(func(c *config) { c.wrap = wrap })
}
