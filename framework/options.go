package framework

import (
	"math"
	"time"

	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/internal/localaddr"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/state"
)

// Curator's defaults.
const (
	// DefaultSessionTimeout is the session timeout asked of the server
	// (curator-default-session-timeout). The server may negotiate it down.
	DefaultSessionTimeout = 60 * time.Second
	// DefaultConnectionTimeout bounds how long an operation waits for a
	// connection (curator-default-connection-timeout). Past it, the attempt
	// counts as a connection-loss failure for the retry policy.
	DefaultConnectionTimeout = 15 * time.Second
	// DefaultSimulatedSessionExpirationPercent is the default share of the
	// session timeout after which a SUSPENDED client declares the session
	// LOST. The share is of the negotiated timeout, counted from the last
	// renewal of the session the servers surely had (see
	// WithSimulatedSessionExpirationPercent).
	DefaultSimulatedSessionExpirationPercent = 100
)

// The range of the timeouts New accepts. A time.Duration counts
// nanoseconds where Curator counts milliseconds: Curator's
// sessionTimeoutMs of 30000 is 30*time.Second here, and
// WithSessionTimeout(30000) is 30µs, which no server can serve. New
// refuses a timeout out of its range with an error wrapping
// ErrInvalidArgument that names the likely mistake (for 30000: "did you
// mean 30000*time.Millisecond?").
const (
	// MinSessionTimeout is the shortest session timeout New accepts. The
	// servers never grant less than their minSessionTimeout, 2 ticks (4 s
	// at ZooKeeper's default tickTime of 2 s; 200 ms at the 100 ms tick of
	// a test server), and until one grants a session the client's own
	// timers run on the timeout asked for: each server must answer the
	// handshake, a session created and committed by its quorum, within
	// the timeout over the number of servers (Java's client's rule), or
	// the connection is closed and the next server tried. At 100 ms that
	// is 33 ms a server in an ensemble of three, already tight on a LAN;
	// a few milliseconds never connect, even to a server on the same host.
	MinSessionTimeout = 100 * time.Millisecond
	// MaxSessionTimeout is the longest session timeout New accepts: the
	// protocol carries it as a 32-bit count of milliseconds (about 24.8
	// days). The servers cap it far lower, at their maxSessionTimeout.
	MaxSessionTimeout = math.MaxInt32 * time.Millisecond
	// MinConnectionTimeout is the shortest connection timeout New accepts:
	// below it an operation would count as a connection loss before a
	// server could answer it across any network but a loopback.
	MinConnectionTimeout = 10 * time.Millisecond
)

// ACLProvider chooses the ACL of every node the client creates, as Curator's
// ACLProvider does.
type ACLProvider interface {
	// ACLForPath returns the ACL for a node created at path (the path as the
	// caller gave it, without the namespace).
	ACLForPath(path string) []zk.ACL
}

// ACLProviderFunc adapts a function to ACLProvider.
type ACLProviderFunc func(path string) []zk.ACL

// ACLForPath calls f(path).
func (f ACLProviderFunc) ACLForPath(path string) []zk.ACL { return f(path) }

// OpenACL is the default ACL: world:anyone with every permission
// (ZooKeeper's OPEN_ACL_UNSAFE), as Curator's default provider uses.
var OpenACL = zk.WorldACL(zk.PermAll)

// Option configures a Client made by New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type authInfo struct {
	scheme string
	auth   []byte
}

type config struct {
	sessionTimeout    time.Duration
	connectionTimeout time.Duration
	logger            *zap.Logger
	namespace         string
	aclProvider       ACLProvider
	auth              []authInfo
	defaultData       []byte
	defaultDataSet    bool
	expirationPercent int
	errorPolicy       state.ErrorPolicy
	containers        bool
	dialer            zk.Dialer
	listeners         []state.Listener
	eventHooks        []EventHook
	juteMaxBuffer     int

	// beforeParentCreate, when set (by tests only), runs before mkdirs
	// creates each missing parent: the place where the server may reap an
	// ancestor that is an empty container.
	beforeParentCreate func(serverPath string)
}

func defaultConfig() config {
	return config{
		sessionTimeout:    DefaultSessionTimeout,
		connectionTimeout: DefaultConnectionTimeout,
		logger:            zap.NewNop(),
		expirationPercent: DefaultSimulatedSessionExpirationPercent,
		errorPolicy:       state.StandardErrorPolicy{},
		containers:        true,
		juteMaxBuffer:     DefaultJuteMaxBuffer,
	}
}

// WithSessionTimeout sets the session timeout asked of the servers
// (default 60 s): Curator's sessionTimeoutMs, as a time.Duration (Curator's
// 30000 is 30*time.Second; WithSessionTimeout(30000) is 30µs). d must be
// from MinSessionTimeout (100 ms) to MaxSessionTimeout (about 24.8 days),
// else New fails with an error wrapping ErrInvalidArgument.
//
// The servers clamp what is asked into their [minSessionTimeout,
// maxSessionTimeout], by default 2 to 20 ticks (4 s to 40 s at ZooKeeper's
// default tickTime of 2 s), and the session runs on what they grant:
// Client.SessionTimeout tells it once they have, and the client logs a WARN
// naming both when it is shorter than asked (LOST then comes that much
// sooner). Until a session is granted, the client's own timers run on d:
// each server must answer the handshake within d over the number of
// servers.
func WithSessionTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.sessionTimeout = d })
}

// WithConnectionTimeout sets how long an operation waits for a connection
// before the attempt fails with connection loss (default 15 s): Curator's
// connectionTimeoutMs, as a time.Duration (Curator's 15000 is
// 15*time.Second). d below MinConnectionTimeout (10 ms) makes New fail
// with an error wrapping ErrInvalidArgument. The client also warns when no
// server has answered for d. The wait
// ends sooner once every server has refused a connection since it began
// (a *NoServerError names each server and its last dial); the retry policy
// then decides, as for any connection loss.
func WithConnectionTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.connectionTimeout = d })
}

// WithLogger sets the logger for the client and for go-zookeeper's own
// messages (at debug level). The default logs nothing. The client writes to
// it on a goroutine of its own, never under a lock of the library's (see
// Client.Logger), so a slow sink holds nothing up. Its core's Enabled is
// asked at the call, and must be quick; a line's fields are encoded at the
// call, and written by that goroutine a moment later.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(c *config) {
		if l != nil {
			c.logger = l
		}
	})
}

// WithNamespace makes every path the client is given relative to /ns. As
// with Curator's usingNamespace, "/locks/a" becomes "/ns/locks/a" on the
// server, and paths the client returns have "/ns" stripped. ns may contain
// "/" but must not start or end with it. The namespace node is created, as a
// container, on first use.
func WithNamespace(ns string) Option {
	return optionFunc(func(c *config) { c.namespace = ns })
}

// WithACLProvider sets the ACL of nodes the client creates, parents included.
// The default is OpenACL everywhere.
func WithACLProvider(p ACLProvider) Option {
	return optionFunc(func(c *config) { c.aclProvider = p })
}

// WithAuth adds authentication info sent on every connection, as Curator's
// authorization(scheme, auth). For digest, auth is "user:password".
func WithAuth(scheme string, auth []byte) Option {
	return optionFunc(func(c *config) {
		c.auth = append(c.auth, authInfo{scheme, append([]byte(nil), auth...)})
	})
}

// WithDefaultData sets the data of nodes created with nil data. Curator's
// default, and ours, is the local host's IP address as text.
func WithDefaultData(data []byte) Option {
	return optionFunc(func(c *config) {
		c.defaultData = append([]byte{}, data...)
		c.defaultDataSet = true
	})
}

// DefaultData returns a copy of the data of nodes created with nil data
// (WithDefaultData; by default the local host's IP address as text), for a
// recipe that writes it where Curator writes its client's default data (a
// setData().forPath(path) without data); nil for a nil or zero Client.
func (c *Client) DefaultData() []byte {
	if !c.usable() {
		return nil
	}
	return append([]byte{}, c.cfg.defaultData...)
}

// WithSimulatedSessionExpirationPercent sets when a client that has stayed
// SUSPENDED reports LOST without hearing from the server. p, from 1 to 100
// (default 100), is the share of the negotiated session timeout, counted
// from the last renewal of the session the servers surely had (as
// StateError.ExpiryBound: an answer followed by another a twentieth of the
// timeout later, or a handshake); LOST comes no later than a
// twentieth of the timeout before the servers could expire the session,
// whatever p. (Curator counts the share from SUSPENDED instead.) The client
// then gives that session up, as Curator does: it moves to a new session,
// and closes the old one on the servers once they could have expired it
// themselves and a server answers. A p outside 1 to 100 makes New fail with
// ErrInvalidArgument.
func WithSimulatedSessionExpirationPercent(p int) Option {
	return optionFunc(func(c *config) { c.expirationPercent = p })
}

// WithErrorPolicy sets which connection states end the trust in a held lock
// (default state.StandardErrorPolicy: SUSPENDED and LOST). LOST ends it
// whatever the policy says: the session is gone.
func WithErrorPolicy(p state.ErrorPolicy) Option {
	return optionFunc(func(c *config) { c.errorPolicy = p })
}

// WithContainerParents chooses whether missing parents created for recipes
// are containers or persistent nodes. Containers (true) are the default;
// false is Curator's dontUseContainerParents.
func WithContainerParents(on bool) Option {
	return optionFunc(func(c *config) { c.containers = on })
}

// WithListener registers a connection-state listener before the client starts
// connecting, so that it hears CONNECTED too. AddListener, called after New,
// may be too late for it. A nil listener (or a nil func as a
// state.ListenerFunc) makes New fail with ErrInvalidArgument.
func WithListener(l state.Listener) Option {
	return optionFunc(func(c *config) { c.listeners = append(c.listeners, l) })
}

// WithDialer sets the function go-zookeeper dials servers with.
func WithDialer(d zk.Dialer) Option {
	return optionFunc(func(c *config) { c.dialer = d })
}

func (c *config) validate() error {
	if err := checkTimeout("session timeout", "WithSessionTimeout", c.sessionTimeout, MinSessionTimeout, MaxSessionTimeout); err != nil {
		return err
	}
	if err := checkTimeout("connection timeout", "WithConnectionTimeout", c.connectionTimeout, MinConnectionTimeout, math.MaxInt64); err != nil {
		return err
	}
	switch {
	case c.expirationPercent < 1 || c.expirationPercent > 100:
		return invalidArgument("simulated session expiration percent %d must be 1 to 100", c.expirationPercent)
	case c.errorPolicy == nil:
		return invalidArgument("error policy must not be nil")
	case c.juteMaxBuffer < 1:
		return invalidArgument("jute.maxbuffer %d must be positive", c.juteMaxBuffer)
	}
	if reason := namespaceProblem(c.namespace); reason != "" {
		return invalidArgument("namespace %q: %s", c.namespace, reason)
	}
	for _, l := range c.listeners {
		if listeners.IsNil(l) {
			return invalidArgument("nil listener (WithListener)")
		}
	}
	for _, h := range c.eventHooks {
		if listeners.IsNil(h) {
			return invalidArgument("nil event hook (WithEventHook)")
		}
	}
	for _, a := range c.auth {
		if a.scheme == "" {
			return invalidArgument("auth scheme must not be empty")
		}
	}
	if !c.defaultDataSet {
		c.defaultData = localaddr.Bytes()
	}
	if c.aclProvider == nil {
		c.aclProvider = ACLProviderFunc(func(string) []zk.ACL { return OpenACL })
	}
	return nil
}

// checkTimeout refuses a timeout d (what, set by option) outside [lo, hi].
// One below lo that is not a whole number of milliseconds, and would be in
// range read as milliseconds, is most likely Curator's milliseconds passed
// as a time.Duration (30000 for 30 s), and the error says so.
func checkTimeout(what, option string, d, lo, hi time.Duration) error {
	switch {
	case d <= 0:
		return invalidArgument("%s %v must be positive", what, d)
	case d < lo && d%time.Millisecond != 0 && d <= hi/time.Millisecond && d*time.Millisecond >= lo:
		return invalidArgument("%s %v: did you mean %d*time.Millisecond? (%s takes a time.Duration, which counts nanoseconds, where Curator takes milliseconds; at least %v)",
			what, d, int64(d), option, lo)
	case d < lo:
		return invalidArgument("%s %v is below the least %s takes, %v", what, d, option, lo)
	case d > hi:
		return invalidArgument("%s %v is above the most %s takes, %v", what, d, option, hi)
	}
	return nil
}

// namespaceProblem says what is wrong with a namespace, or "".
func namespaceProblem(ns string) string {
	switch {
	case ns == "":
		return ""
	case ns[0] == '/':
		return "must not start with /"
	case ns[len(ns)-1] == '/':
		return "must not end with /"
	}
	return pathProblem("/" + ns)
}
