package framework

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
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
	sm      sessionMachine // the connection, the session, its states, its clock and the trust (session_machine.go)

	listeners listeners.Registry[state.Listener]
	states    *listeners.Queue[state.ConnectionState] // transitions, to the listeners (tell)
	bgCtx     context.Context
	bgCancel  context.CancelFunc
	bgMu      sync.Mutex // orders inBackground's bg.Add before Close's bg.Wait
	bgClosed  bool       // Close has begun waiting for bg: no more work starts
	bg        sync.WaitGroup
	later     laterDeletes  // deletes waiting for their time (background.go)
	hooks     []EventHook   // in the order added; none: nil
	sink      *zap.Logger   // the user's logger, named: written to on the outbox's goroutine only
	out       *outbox       // hands events and log lines to the hook and the sink (outbox.go)
	told      chan struct{} // closed once closed and all is told (Closed, outbox.go)
	runners   runners       // the goroutines that run calls a caller's context may cut short (runner.go)

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
		cfg:     cfg,
		sink:    cfg.logger.Named("gocurator"),
		policy:  policy,
		servers: servers,
		told:    make(chan struct{}),
		hooks:   cfg.eventHooks,
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
	c.sm.init(&c.cfg, c.servers, c.log, c.Emit, c.states, func(z *conn, ev zk.Event) { c.watches.event(c, z, ev) })
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	if err := c.sm.start(); err != nil {
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
	return c.sm.State()
}

// SessionID returns the id of the current (or last) session, 0 before the first.
func (c *Client) SessionID() int64 {
	if !c.usable() {
		return 0
	}
	return c.sm.SessionID()
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
// them); its Sync does nothing (call the sink's own). The fields of a line
// are encoded when it is logged, before it is queued: a Stringer's String,
// an object's MarshalLogObject, an array's MarshalLogArray and an error's
// Error run on the caller's goroutine, a value zap.Any reflects over is
// encoded to JSON then, and bytes are copied; so the caller may change what
// it logged as soon as the call returns, and the line shows what was true
// at the call.
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
// nodes, and so its locks, go at once (when a server answers, see below);
// the trust context (Trust) ends, background work stops, and Close waits
// for the client's goroutines and go-zookeeper's to end (a WithDialer
// dialer's call under way included), but never for user code it calls
// back: not for a connection-state listener, an event hook or the log sink.
// A listener may close its client (as in Curator's "on LOST, close and
// build a new client"), or wait for the goroutine that does. Listeners
// still hear every change posted before Close, and the hooks every event,
// those that come after Close included (a holder's loss at Close), in
// order, on the client's goroutines, which end once nothing is left to
// tell: perhaps after Close has returned (Closed tells when). Close is
// idempotent.
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
	z, first := c.sm.close()
	if !first {
		return nil
	}
	c.bgMu.Lock()
	c.bgClosed = true
	c.bgMu.Unlock()
	c.bgCancel()
	c.later.stop()
	c.bg.Wait()
	c.sm.wait()
	z.Close() // every call under way on a runner ends now
	c.runners.close()
	c.runners.wait()
	c.states.Close() // what was posted before Close is still told, Close not waiting
	c.watches.close()
	c.out.close()
	go c.tellClosed()
	return nil
}

// IsClosed reports whether Close has been called. Every operation of a
// closed client fails with an error wrapping ErrClosed.
func (c *Client) IsClosed() bool {
	if !c.usable() {
		return true
	}
	return c.sm.IsClosed()
}

// tell gives a transition to the listeners, in the order they were added,
// on the states queue's goroutine, so that the connection goroutine never
// waits for a listener.
func (c *Client) tell(s state.ConnectionState) {
	for _, l := range c.listeners.Snapshot() {
		if err := listeners.Safe(func() { l.StateChanged(s) }); err != nil {
			c.log.Error("connection state listener", zap.Stringer("state", s), zap.Error(err))
		}
	}
}
