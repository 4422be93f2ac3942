package framework

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/internal/listeners"
	"github.com/gocurator/curator/state"
)

// sessionMachine is the client's session machine: its current connection
// and session, and what follows them under one lock of its own (mu):
//
//   - the connection and giving a session up (session.go): the current
//     conn, and, when the clock posts LOST, a new one while the old session
//     is abandoned and closed on the servers;
//   - Curator's connection-state machine (connection.go), driven from
//     go-zookeeper's event callback and from the clock;
//   - the clock on the session (clock.go): the timer that posts SUSPENDED
//     while the connection is still open, the one that posts LOST, and the
//     one that warns when no server answers;
//   - the stretch of trust (trust.go);
//   - what a wait for a connection waits on (changed, and closed).
//
// The Client keeps the operations, the background work, the listeners, the
// outbox and the options, and asks the machine through the methods of this
// file: the current connection (zk, lock-free), the state, the session and
// its timeout, the trust, what a wait for a connection waits on (watch),
// and close. The machine tells the client's listeners each transition
// (states) and its hooks each event (emit); both only queue, so that no user
// code runs under mu. Nothing but the machine's own methods takes mu, and
// under it the machine takes no lock of the client's but those of the two
// queues (the states queue, and the outbox behind Emit and the logger).
type sessionMachine struct {
	// Given by init, read-only after.
	cfg     *config                                 // the client's options
	servers []string                                // the connect string's
	log     *zap.Logger                             // the client's
	emit    func(Event) (dropped bool)              // the client's Emit
	states  *listeners.Queue[state.ConnectionState] // transitions, to the client's listeners
	// connEvent hears every event of every connection before the state
	// machine does, on go-zookeeper's goroutine (the client's persistent
	// watches: persistent_watch.go); it must not block, nor take m.mu
	// but through isCurrent.
	connEvent func(z *conn, ev zk.Event)

	conn atomic.Pointer[conn] // the current connection; replaced when the session is given up

	// abandons are the goroutines that let given-up sessions go
	// (session.go): close ends abandonCtx, and Close waits for them (wait).
	abandons      sync.WaitGroup
	abandonCtx    context.Context
	abandonCancel context.CancelFunc

	mu           sync.Mutex
	cur          state.ConnectionState
	sessionID    int64
	sessionEnded chan struct{} // closed when the session sessionID ends (LOST or Close)
	negotiated   time.Duration // the granted session timeout, or the one asked for before any (for the timers)
	granted      time.Duration // the session timeout the servers last granted; 0 before they have (SessionTimeout)
	changed      chan struct{} // closed and replaced at every transition, and at close
	trust        stretch       // the current stretch of trust (trust.go)
	lostTimer    *time.Timer   // posts LOST (clock.go)
	lostGen      uint64
	silentTimer  *time.Timer // warns when no server has answered for the connection timeout (connection.go)
	silentGen    uint64
	clockTimer   *time.Timer // the clock's watch over the session (clock.go)
	clockGen     uint64
	// clockSuspended: the current SUSPENDED is the clock's, on a
	// connection go-zookeeper still holds open.
	clockSuspended bool
	closed         bool
}

// init makes m ready to start: no session yet, the trust's first stretch
// begun (in session 0).
func (m *sessionMachine) init(cfg *config, servers []string, log *zap.Logger, emit func(Event) bool, states *listeners.Queue[state.ConnectionState], connEvent func(*conn, zk.Event)) {
	m.cfg, m.servers, m.log, m.emit, m.states, m.connEvent = cfg, servers, log, emit, states, connEvent
	m.changed = make(chan struct{})
	m.sessionEnded = make(chan struct{})
	m.negotiated = cfg.sessionTimeout
	m.trust.begin(0)
	m.abandonCtx, m.abandonCancel = context.WithCancel(context.Background())
}

// isCurrent reports whether z is the current connection. A connection just
// made is current once the caller of connect, which holds m.mu, has made it
// so: isCurrent, called from its first events, waits until then.
func (m *sessionMachine) isCurrent(z *conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return z == m.zk()
}

// start opens the first connection. It does not wait for it.
func (m *sessionMachine) start() error {
	m.mu.Lock() // events may arrive before connect returns; they wait for m.conn
	defer m.mu.Unlock()
	z, err := m.connect()
	if err != nil {
		m.abandonCancel()
		return err
	}
	m.conn.Store(z)
	m.startSilentTimer()
	return nil
}

// close ends the machine, the first time: its timers stop, the trust and
// the session end, a wait for a connection wakes (and finds it closed).
// It returns the current connection, which the client closes once its
// background work is over, and false if the machine was closed already.
func (m *sessionMachine) close() (z *conn, first bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, false
	}
	m.closed = true
	m.stopTimers()
	m.trust.end(ErrClosed)
	m.endSession()
	close(m.changed)
	m.abandonCancel()
	return m.zk(), true
}

// wait waits, after close, until every abandoned session is let go.
func (m *sessionMachine) wait() { m.abandons.Wait() }

// zk returns the current connection.
func (m *sessionMachine) zk() *conn { return m.conn.Load() }

// State returns the current connection state (Client.State).
func (m *sessionMachine) State() state.ConnectionState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cur
}

// SessionID returns the current (or last) session's id (Client.SessionID).
func (m *sessionMachine) SessionID() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessionID
}

// Session returns the current session's id and a channel closed when it
// ends (Client.Session).
func (m *sessionMachine) Session() (id int64, ended <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessionID, m.sessionEnded
}

// SessionTimeout returns the session timeout the servers last granted
// (Client.SessionTimeout).
func (m *sessionMachine) SessionTimeout() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.granted
}

// Trust returns the current stretch of trust and its session (Client.Trust).
func (m *sessionMachine) Trust() (ctx context.Context, session int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.trust.ctx, m.trust.session
}

// IsClosed reports whether close has been called (Client.IsClosed).
func (m *sessionMachine) IsClosed() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// watch returns what a wait for a connection waits on, at one instant:
// whether the machine is closed, whether it is connected, and a channel
// closed at the next transition or at close.
func (m *sessionMachine) watch() (closed, connected bool, changed <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed, m.cur.IsConnected(), m.changed
}
