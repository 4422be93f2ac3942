package framework

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// Client is a connection to a ZooKeeper ensemble, in the manner of Curator's
// CuratorFramework. It tracks the session and Curator's connection states,
// runs every operation in the retry loop, applies the namespace, creates
// parents and protected nodes, and finishes guaranteed deletes in the
// background. One Client per process is the rule; it is safe for concurrent
// use. Its zero value is not usable: make one with New.
type Client struct {
	cfg     config
	log     *zap.Logger
	policy  retry.Policy
	ns      namespace
	servers []string
	conn    atomic.Pointer[conn] // the current connection; replaced when the session is given up

	mu           sync.Mutex
	cur          state.ConnectionState
	sessionID    int64
	sessionEnded chan struct{} // closed when the session sessionID ends (LOST or Close)
	negotiated   time.Duration // the granted session timeout, or the one asked for before any (for the timers)
	granted      time.Duration // the session timeout the servers last granted; 0 before they have (SessionTimeout)
	changed      chan struct{} // closed and replaced at every transition
	trust        stretch       // the current stretch of trust (trust.go)
	lostTimer    *time.Timer   // posts LOST (connection.go)
	lostGen      uint64
	silentTimer  *time.Timer // warns when no server has answered for the connection timeout
	silentGen    uint64
	closed       bool

	listeners listeners.Registry[state.Listener]
	states    *listeners.Queue[state.ConnectionState] // transitions, to the listeners (connection.go)
	bgCtx     context.Context
	bgCancel  context.CancelFunc
	bg        sync.WaitGroup
	later     laterDeletes // deletes waiting for their time (background.go)
	hooks     []EventHook  // in the order added; none: nil
	sink      *zap.Logger  // the user's logger, named: written to on the outbox's goroutine only
	out       *outbox      // hands events and log lines to the hook and the sink (outbox.go)
	runners   runners      // the goroutines that run calls a caller's context may cut short (runner.go)

	watches watchRegistry // the persistent watches, and their keeper (persistent_watch.go)
}

// New returns a client for connectString ("host:port,host:port") that runs
// every operation under policy. It starts connecting in the background and
// does not wait for a connection (see BlockUntilConnected). A bad argument
// is an error wrapping ErrInvalidArgument.
func New(connectString string, policy retry.Policy, opts ...Option) (*Client, error) {
	servers, err := parseConnectString(connectString)
	if err != nil {
		return nil, err
	}
	if policy == nil {
		return nil, invalidArgument("retry policy must not be nil")
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:          cfg,
		sink:         cfg.logger.Named("gocurator"),
		policy:       policy,
		servers:      servers,
		changed:      make(chan struct{}),
		sessionEnded: make(chan struct{}),
		negotiated:   cfg.sessionTimeout,
		hooks:        cfg.eventHooks,
	}
	if cfg.namespace != "" {
		c.ns = namespace("/" + cfg.namespace)
	}
	for _, l := range cfg.listeners {
		c.listeners.Add(l)
	}
	c.out = newOutbox(c.deliver, maxQueuedEvents)
	c.log = c.sink.WithOptions(zap.WrapCore(func(core zapcore.Core) zapcore.Core { return outboxCore{core, c.out} }))
	c.states = listeners.NewQueue(c.tell, nil, nil)
	c.trust.begin(0)
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	c.mu.Lock() // events may arrive before connect returns; they wait for c.conn
	z, err := c.connect()
	if err == nil {
		c.conn.Store(z)
		c.startSilentTimer()
	}
	c.mu.Unlock()
	if err != nil {
		c.bgCancel()
		c.states.Close()
		c.out.close()
		return nil, invalidArgument("connect string %q: %w", connectString, err)
	}
	return c, nil
}

// parseConnectString accepts "host:port[,host:port...]"; a missing port means 2181.
func parseConnectString(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, invalidArgument("connect string is empty")
	}
	if strings.Contains(s, "/") {
		return nil, invalidArgument("connect string %q: chroot suffixes are not supported; use WithNamespace", s)
	}
	var servers []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, invalidArgument("connect string %q has an empty server", s)
		}
		host, port, err := net.SplitHostPort(part)
		if err != nil {
			if !strings.Contains(err.Error(), "missing port") {
				return nil, invalidArgument("connect string %q: %w", s, err)
			}
			host, port = strings.Trim(part, "[]"), "2181"
		}
		if host == "" {
			return nil, invalidArgument("connect string %q: server %q has no host", s, part)
		}
		if strings.IndexFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return nil, invalidArgument("connect string %q: host %q has a space or control character", s, host)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, invalidArgument("connect string %q: bad port %q", s, port)
		}
		servers = append(servers, net.JoinHostPort(host, port))
	}
	return servers, nil
}

// usable reports whether c was made by New (a nil or zero Client is not).
func (c *Client) usable() bool { return c != nil && c.states != nil }

// errUnusable is the error of a call on a nil or zero Client.
var errUnusable = invalidArgument("nil or zero Client: make one with New")

// State returns the current connection state; zero before the first
// connection (and for a nil or zero Client).
func (c *Client) State() state.ConnectionState {
	if !c.usable() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// SessionID returns the id of the current (or last) session, 0 before the first.
func (c *Client) SessionID() int64 {
	if !c.usable() {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sessionID
}

// Servers returns the servers of the connect string, "host:port", as given.
func (c *Client) Servers() []string {
	if !c.usable() {
		return nil
	}
	return append([]string(nil), c.servers...)
}

// Namespace returns the namespace given by WithNamespace, or "".
func (c *Client) Namespace() string {
	if !c.usable() {
		return ""
	}
	return c.cfg.namespace
}

// ErrorPolicy returns the policy that decides which states end the trust in a held lock.
func (c *Client) ErrorPolicy() state.ErrorPolicy {
	if !c.usable() {
		return state.StandardErrorPolicy{}
	}
	return c.cfg.errorPolicy
}

// RetryPolicy returns the policy operations run under.
func (c *Client) RetryPolicy() retry.Policy {
	if !c.usable() {
		return retry.NewNTimes(0, 0)
	}
	return c.policy
}

// Logger returns the client's logger, for recipes built on the client. Its
// lines go to the logger given WithLogger on a goroutine of the client's,
// as events do (see EventHook): they are written a little later, in order,
// and dropped, DEBUG first, when the sink is too slow (EventsDropped counts
// them); its Sync does nothing (call the sink's own).
func (c *Client) Logger() *zap.Logger {
	if !c.usable() {
		return zap.NewNop()
	}
	return c.log
}

// BlockUntilConnected waits until the client is connected (CONNECTED,
// RECONNECTED or READ_ONLY) or ctx ends, as Curator's blockUntilConnected:
// the error of an ended ctx is a *NoServerError naming each server and its
// last dial (see Unreachable to give up sooner). A nil ctx is an error
// wrapping ErrInvalidArgument.
func (c *Client) BlockUntilConnected(ctx context.Context) error {
	if ctx == nil {
		return invalidArgument("nil context")
	}
	if !c.usable() {
		return errUnusable
	}
	start := time.Now()
	err := c.awaitConnected(ctx, 0)
	if err != nil && !errors.Is(err, ErrClosed) {
		return errs.Errorf("waiting for a connection: %w", c.noServer(err, start)) // names each server's last dial
	}
	return err
}

// AddListener registers l to hear every later connection state change.
// l hears the changes in their order, on a goroutine of the client's own;
// listeners are called in the order they were added. It returns a function
// that removes l again. A nil l (or a nil func as a state.ListenerFunc) is
// ignored: nothing is added, and remove does nothing. A listener that
// panics is logged (at ERROR) and the others are still called.
func (c *Client) AddListener(l state.Listener) (remove func()) {
	if !c.usable() || listeners.IsNil(l) {
		return func() {}
	}
	return c.listeners.Add(l)
}

// Close ends the session and stops the client. The session's ephemeral
// nodes, and so its locks, go at once (when a server answers, see below); the trust context (Trust) ends,
// background work stops, and Close waits for the client's goroutines and
// go-zookeeper's to end. Listeners hear every change posted before Close,
// and Close waits for them, but for one case: if a listener call is under
// way when Close is called, Close does not wait for it (it may be the
// caller: a listener may close its client, as in Curator's "on LOST, close
// and build a new client"); the changes still queued are delivered after
// that call returns. Close is idempotent.
//
// The session is closed on the servers only if a server answers Close's
// closeSession, which go-zookeeper sends on the connection it has: a
// client closed while SUSPENDED (no server answering) leaves its session,
// and its ephemeral nodes, to the servers, which expire it a session
// timeout after they last heard from the client.
func (c *Client) Close() error {
	if !c.usable() {
		return errUnusable
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.stopTimers()
	c.trust.end(ErrClosed)
	c.endSession()
	close(c.changed)
	z := c.zk()
	c.mu.Unlock()

	c.bgCancel()
	c.later.stop()
	c.bg.Wait()
	z.Close() // every call under way on a runner ends now
	c.runners.close()
	c.runners.wait()
	c.states.Close() // what was posted before Close is still told
	c.watches.close()
	c.out.close()
	return nil
}

// IsClosed reports whether Close has been called. Every operation of a
// closed client fails with an error wrapping ErrClosed.
func (c *Client) IsClosed() bool {
	if !c.usable() {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// logZK sends go-zookeeper's own messages to zap, at debug level.
func (c *Client) logZK(format string, args ...any) {
	if c.log.Core().Enabled(zap.DebugLevel) { // the message is built only to be logged
		c.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
	}
}
