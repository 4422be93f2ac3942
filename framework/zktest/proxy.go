package zktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/zkwire"
)

// Proxy is a TCP fault-injection proxy between ZooKeeper clients and one
// server. Point a client at Proxy.Addr instead of the server; the proxy
// forwards ZooKeeper packets unchanged in both directions until told to
// misbehave (delay, drop connections, black-hole, lose a reply, expire a
// session).
//
// The proxy understands ZooKeeper's framing (a 4-byte big-endian length, then
// the packet) only as far as it must: it reads the session id and password of
// each ConnectResponse, and the xid and opcode of each request. A connection
// whose first four bytes are not a plausible length (a four-letter word such
// as "ruok") is forwarded as a plain byte stream.
//
// All methods are safe for concurrent use.
type Proxy struct {
	target string
	raw    bool // every connection is a plain byte stream (WithRawStream)
	ln     net.Listener
	delays [2]atomic.Int64 // time.Duration, by direction
	bh     atomic.Bool     // mirror of blackholed, read per packet
	armed  atomic.Int32    // len(arms), read per request
	toward atomic.Int64    // unix nanoseconds of the last write to a client (LastReply)

	requests      [countedOpcodes]atomic.Int64 // forwarded requests by opcode (see opcodeIndex)
	notifications atomic.Int64                 // watch notifications read from the server
	countWaits    atomic.Int32                 // len(waits), read per request

	mu         sync.Mutex
	closed     bool
	blackholed bool
	conns      map[*proxyConn]struct{}
	changed    chan struct{} // closed (and replaced) to wake held connections
	held       map[int64]int // sessions held (HoldSession) or being expired: their reconnects wait
	holdNew    int           // HoldNewSessions calls not yet released: connects asking for a new session wait
	arms       []*loseArm
	waits      []*requestWait
	sessions   map[int64]sessionCred
	order      []int64 // session ids in first-seen order

	wg sync.WaitGroup
}

type sessionCred struct {
	timeout int32
	passwd  []byte
}

type loseArm struct {
	opcode int32
	fired  chan struct{}
	once   sync.Once
}

func (a *loseArm) fire() { a.once.Do(func() { close(a.fired) }) }

// maxCountedOpcode bounds the opcodes Requests counts: every request that
// gets a reply has a small non-negative opcode, but for closeSession, which
// is counted in the slot after them.
const (
	maxCountedOpcode = 128
	countedOpcodes   = maxCountedOpcode + 1
)

// opcodeIndex returns the slot of requests that counts opcode.
func opcodeIndex(opcode int32) (int, bool) {
	switch {
	case opcode == OpCloseSession:
		return maxCountedOpcode, true
	case opcode < 0 || opcode >= maxCountedOpcode:
		return 0, false
	}
	return int(opcode), true
}

// requestWait is one WaitRequests call.
type requestWait struct {
	opcode int32
	n      int64
	done   chan struct{}
}

// Requests returns how many requests with opcode (OpGetChildren2, ...,
// OpCloseSession, OpPing, OpSetAuth, OpSetWatches) the proxy has forwarded
// to the server, over all its connections. The connect request, which has
// no opcode, is not counted.
func (p *Proxy) Requests(opcode int32) int64 {
	i, ok := opcodeIndex(opcode)
	if !ok {
		return 0
	}
	return p.requests[i].Load()
}

// Notifications returns how many watch notifications (the server's
// packets with xid -1) the proxy has read from the server, over all its
// connections: with Requests, whose replies are the server's other
// packets but pings', what the server sent.
func (p *Proxy) Notifications() int64 { return p.notifications.Load() }

// WaitRequests waits until Requests(opcode) is at least n, or ctx ends.
func (p *Proxy) WaitRequests(ctx context.Context, opcode int32, n int64) error {
	if _, ok := opcodeIndex(opcode); !ok {
		return fmt.Errorf("zktest: opcode %d is not counted", opcode)
	}
	w := &requestWait{opcode: opcode, n: n, done: make(chan struct{})}
	p.mu.Lock()
	p.waits = append(p.waits, w)
	p.countWaits.Store(int32(len(p.waits)))
	p.mu.Unlock()
	defer p.dropWait(w)
	if p.Requests(opcode) >= n {
		return nil
	}
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("zktest: %d of %d requests with opcode %d: %w", p.Requests(opcode), n, opcode, ctx.Err())
	}
}

func (p *Proxy) dropWait(w *requestWait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.waits = slices.DeleteFunc(p.waits, func(x *requestWait) bool { return x == w })
	p.countWaits.Store(int32(len(p.waits)))
}

// countRequest counts one forwarded request and wakes the waits it
// satisfies.
func (p *Proxy) countRequest(op int32) {
	i, ok := opcodeIndex(op)
	if !ok {
		return
	}
	n := p.requests[i].Add(1)
	if p.countWaits.Load() == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.waits {
		if w.opcode == op && n >= w.n {
			select {
			case <-w.done:
			default:
				close(w.done)
			}
		}
	}
}

// ProxyOption configures a Proxy.
type ProxyOption interface{ apply(*Proxy) }

type proxyOptionFunc func(*Proxy)

func (f proxyOptionFunc) apply(p *Proxy) { f(p) }

// WithRawStream makes the proxy forward plain byte streams, for traffic that
// is not ZooKeeper's client protocol. The proxy then dials the target as soon
// as a connection is accepted. Such traffic is, for example, the quorum and
// election traffic between ensemble members (WithPeerLinks). SetDelay,
// DropConnections, BlackHole and Restore work as for client traffic; what
// needs the client protocol (LoseNextReply, HoldSession, ExpireSession,
// Requests) does not.
func WithRawStream() ProxyOption { return proxyOptionFunc(func(p *Proxy) { p.raw = true }) }

// StartProxy starts a proxy to target ("host:port") on a free port of
// 127.0.0.1. It forwards every accepted connection to target, which it dials
// when the client's first packet arrives (at once WithRawStream). Close it
// when done (or use NewProxy in a test).
func StartProxy(target string, opts ...ProxyOption) (*Proxy, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(loopback, "0"))
	if err != nil {
		return nil, fmt.Errorf("zktest: proxy listen: %w", err)
	}
	p := &Proxy{
		target:   target,
		ln:       ln,
		conns:    make(map[*proxyConn]struct{}),
		changed:  make(chan struct{}),
		held:     make(map[int64]int),
		sessions: make(map[int64]sessionCred),
	}
	for _, o := range opts {
		if o != nil {
			o.apply(p)
		}
	}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// NewProxy is StartProxy for tests: it fails t on error and closes the proxy
// when the test finishes.
func NewProxy(t testing.TB, target string, opts ...ProxyOption) *Proxy {
	t.Helper()
	p, err := StartProxy(target, opts...)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Addr returns the proxy's address, "127.0.0.1:PORT"; give it to clients as
// the connect string.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// ConnectString is Addr, for symmetry with Server.
func (p *Proxy) ConnectString() string { return p.Addr() }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() string { return p.target }

// SetDelay delays every forwarded packet, in both directions, by d from the
// moment the proxy read it (0 = no delay): SetDelays(d, d). Order is
// preserved. Packets already queued keep the delay they were read with.
func (p *Proxy) SetDelay(d time.Duration) { p.SetDelays(d, d) }

// SetDelays sets a one-way delay for each direction: every packet (every
// chunk of a raw stream) on its way to the server is held for toServer
// from the moment the proxy read it, and every one on its way to the
// client for toClient (0 = none; a negative delay is 0). A round trip
// then grows by toServer + toClient, as across a network whose one-way
// latencies they are: SetDelays(250*time.Microsecond,
// 250*time.Microsecond) stands for a round trip of 0.5 ms, a datacenter's.
//
// Each direction of each connection is a queue: packets keep their order,
// and are held concurrently, not one after the other (a burst of packets
// read together is written together, d later). Packets already queued
// keep the delay they were read with. A packet is held at least its delay,
// and a little more: below a few milliseconds, on Linux, the kernel's
// wake-up, some tens of microseconds (the proxy sleeps in the kernel for
// them: Go's timers wake up to a millisecond late on an idle process);
// elsewhere, and above that, Go's timers' lateness.
func (p *Proxy) SetDelays(toServer, toClient time.Duration) {
	p.delays[upstream].Store(int64(max(toServer, 0)))
	p.delays[downstream].Store(int64(max(toClient, 0)))
}

// direction is which way a packet goes through the proxy.
type direction int

const (
	upstream   direction = iota // client → server
	downstream                  // server → client
)

// due is when a packet going dir, read now, may be written.
func (p *Proxy) due(dir direction) time.Time {
	return time.Now().Add(time.Duration(p.delays[dir].Load()))
}

// LastReply returns when the proxy last passed bytes from the server to one
// of its clients, or the zero Time if it never has. That is a client's last
// contact with the server through this proxy, from which a test can time how
// soon the client noticed that the contact stopped.
func (p *Proxy) LastReply() time.Time {
	if n := p.toward.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// DropConnections closes every current connection, client and server side,
// at once. New connections are accepted and forwarded as usual.
func (p *Proxy) DropConnections() {
	p.mu.Lock()
	conns := p.snapshotLocked(func(*proxyConn) bool { return true })
	p.mu.Unlock()
	closeAll(conns)
}

// BlackHole stops forwarding in both directions, like a network partition.
// Existing connections stay open but nothing passes (what arrives is
// discarded), and new connections are accepted and held, with nothing
// forwarded or answered. Clients notice only through their own timeouts.
func (p *Proxy) BlackHole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blackholed = true
	p.bh.Store(true)
	for c := range p.conns {
		c.tainted = true
	}
}

// Restore ends a black hole and forwards normally again. It closes every
// connection that lived through it, so that clients reconnect promptly
// instead of waiting for their own timeouts.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.blackholed = false
	p.bh.Store(false)
	conns := p.snapshotLocked(func(c *proxyConn) bool { return c.tainted })
	p.signalLocked()
	p.mu.Unlock()
	closeAll(conns)
}

// LoseNextReply arms the proxy to lose the reply to the next client request
// with this opcode. That request (AnyOpcode: any request that gets a reply,
// i.e. xid >= 0) is forwarded to the server, which applies it, but the
// server's reply (same xid) is swallowed and the connection is then closed on
// both sides. The client sees a connection loss without knowing the outcome.
// Each call arms once; arms are matched in call order.
//
// The returned channel is closed once the reply has been swallowed and the
// connection closed (or when the connection carrying the request was closed
// for another reason before the reply came). It stays open if no such request
// is ever forwarded.
func (p *Proxy) LoseNextReply(opcode int32) <-chan struct{} {
	a := &loseArm{opcode: opcode, fired: make(chan struct{})}
	p.mu.Lock()
	p.arms = append(p.arms, a)
	p.armed.Store(int32(len(p.arms)))
	p.mu.Unlock()
	return a.fired
}

// Disarm takes back the arm of the LoseNextReply call that returned fired,
// if no request has taken it yet, and reports whether it did. An arm a
// request has taken is left to fire: its reply will be lost.
func (p *Proxy) Disarm(fired <-chan struct{}) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, a := range p.arms {
		if a.fired == fired {
			p.arms = append(p.arms[:i:i], p.arms[i+1:]...)
			p.armed.Store(int32(len(p.arms)))
			return true
		}
	}
	return false
}

// Sessions returns the ids of the sessions established through this proxy
// (from the servers' connect responses), in the order first seen.
func (p *Proxy) Sessions() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]int64(nil), p.order...)
}

// ExpireSession makes the server end a session that was established through
// this proxy, for real. It closes the proxy's connections of that session,
// holds the client's reconnects, opens its own connection to the server,
// attaches to the session with its id and password, and closes it. When
// ExpireSession returns, the server has deleted the session's ephemeral
// nodes; the client, once its held reconnect is released, is told its session
// expired. It returns nil if the server already considered it expired.
func (p *Proxy) ExpireSession(sessionID int64) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.New("zktest: proxy closed")
	}
	cred, ok := p.sessions[sessionID]
	if !ok {
		p.mu.Unlock()
		return fmt.Errorf("zktest: session 0x%x was not seen by this proxy", sessionID)
	}
	p.mu.Unlock()
	release := p.HoldSession(sessionID)
	defer release()
	return closeSessionDirect(p.target, sessionID, cred.timeout, cred.passwd, time.Now().Add(10*time.Second))
}

// HoldSession cuts one session off from the server, as a partition would that
// session alone. It closes the proxy's connections of that session and holds
// its reconnects (accepted, with nothing forwarded or answered), while other
// sessions, new ones included, pass as usual. The server keeps the session
// until it expires it. The returned function ends the hold (it is
// idempotent): a held reconnect then goes through to the server.
func (p *Proxy) HoldSession(sessionID int64) (release func()) {
	p.mu.Lock()
	p.held[sessionID]++
	victims := p.snapshotLocked(func(c *proxyConn) bool {
		return c.session == sessionID || c.reqSession == sessionID
	})
	p.mu.Unlock()
	closeAll(victims)
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.held[sessionID]--; p.held[sessionID] <= 0 {
				delete(p.held, sessionID)
			}
			p.signalLocked()
		})
	}
}

// HoldNewSessions holds every connection that asks for a new session (a
// ConnectRequest with session id 0: a client's first, or its next after
// its session expired), accepted with nothing forwarded or answered, while
// reconnects to live sessions pass as usual. The returned function ends the
// hold (it is idempotent): a held connection then goes through.
func (p *Proxy) HoldNewSessions() (release func()) {
	p.mu.Lock()
	p.holdNew++
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.holdNew--
			p.signalLocked()
		})
	}
}

// Close stops listening, closes every connection and waits for all of the
// proxy's goroutines to end. It is idempotent.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return nil
	}
	p.closed = true
	conns := p.snapshotLocked(func(*proxyConn) bool { return true })
	p.signalLocked()
	p.mu.Unlock()
	err := p.ln.Close()
	closeAll(conns)
	p.wg.Wait()
	return err
}

func (p *Proxy) snapshotLocked(keep func(*proxyConn) bool) []*proxyConn {
	var out []*proxyConn
	for c := range p.conns {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}

func closeAll(conns []*proxyConn) {
	for _, c := range conns {
		c.close()
	}
}

// signalLocked wakes every connection waiting in waitForwardable.
func (p *Proxy) signalLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		cl, err := p.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed (or broken beyond repair)
		}
		c := &proxyConn{p: p, client: cl, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			cl.Close()
			return
		}
		c.tainted = p.blackholed
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go c.run()
	}
}

// takeArm removes and returns the first armed LoseNextReply matching op.
func (p *Proxy) takeArm(op int32) *loseArm {
	if p.armed.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, a := range p.arms {
		if a.opcode == AnyOpcode || a.opcode == op {
			p.arms = append(p.arms[:i:i], p.arms[i+1:]...)
			p.armed.Store(int32(len(p.arms)))
			return a
		}
	}
	return nil
}

// rearm puts back an arm whose request never reached the server.
func (p *Proxy) rearm(a *loseArm) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.arms = append([]*loseArm{a}, p.arms...)
	p.armed.Store(int32(len(p.arms)))
}

func (p *Proxy) recordSession(c *proxyConn, frame []byte) {
	timeout, sid, passwd, ok := zkwire.ParseConnectResponse(frame)
	if !ok || sid == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	c.session = sid
	if _, seen := p.sessions[sid]; !seen {
		p.order = append(p.order, sid)
	}
	p.sessions[sid] = sessionCred{timeout: timeout, passwd: passwd}
}

// proxyConn is one client connection and, once dialled, its server
// connection.
type proxyConn struct {
	p      *Proxy
	client net.Conn
	done   chan struct{} // closed by close
	once   sync.Once

	raw bool // a plain byte stream, set before its readers and writers start

	// Guarded by p.mu.
	tainted    bool  // lived through a black hole: Restore closes it
	reqSession int64 // session id in the client's ConnectRequest
	session    int64 // session id in the server's ConnectResponse

	mu      sync.Mutex
	server  net.Conn
	pending map[int32]*loseArm // xid → arm whose reply is to be lost
}

// chunk is a unit handed from a reader to a writer: a packet (or, for raw
// connections, some bytes), or an end marker.
type chunk struct {
	data []byte
	at   time.Time // when it may be written
	kind chunkKind
	arm  *loseArm // kindLose
}

type chunkKind int

const (
	kindData    chunkKind = iota
	kindConnect           // the ConnectRequest: no request header
	kindEOF               // the reader's peer closed: flush, then close
	kindLose              // swallow point of LoseNextReply: close, then fire arm
)

func (c *proxyConn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.mu.Lock()
		srv, pending := c.server, c.pending
		c.pending = nil
		c.mu.Unlock()
		if srv != nil {
			srv.Close()
		}
		for _, a := range pending {
			a.fire()
		}
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
}

func (c *proxyConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *proxyConn) setServer(s net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed() {
		return false
	}
	c.server = s
	return true
}

func (c *proxyConn) run() {
	defer c.p.wg.Done()
	defer c.close()

	var hdr [zkwire.FrameHeaderLen]byte
	var first []byte
	raw := c.p.raw
	if !raw {
		if _, err := io.ReadFull(c.client, hdr[:]); err != nil {
			return
		}
		_, isFrame := zkwire.FrameLen(hdr)
		raw = !isFrame // e.g. a four-letter word
		if raw {
			first = hdr[:]
		}
	}
	if !raw {
		f, err := zkwire.ReadFrameBody(c.client, hdr)
		if err != nil {
			return
		}
		first = f
	}
	at := c.p.due(upstream)
	var sid int64
	if !raw {
		sid = zkwire.ConnectRequestSession(first)
	}
	if !c.waitForwardable(sid, raw) {
		return
	}
	srv, err := net.DialTimeout("tcp", c.p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !c.setServer(srv) {
		srv.Close()
		return
	}

	up := make(chan chunk, 64)   // client → server
	down := make(chan chunk, 64) // server → client
	kind := kindConnect
	if raw {
		kind = kindData
		c.raw = true
	}
	if len(first) > 0 {
		up <- chunk{data: first, at: at, kind: kind}
	}

	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); c.writeServer(srv, up) }()
	go func() { defer wg.Done(); c.readServer(srv, down, raw) }()
	go func() { defer wg.Done(); c.writeClient(down) }()
	c.readClient(up, raw)
	wg.Wait()
}

// waitForwardable holds a new connection while the proxy is black-holed or
// while its session is held (HoldSession, ExpireSession). It reports false if the connection
// was closed meanwhile.
func (c *proxyConn) waitForwardable(sid int64, raw bool) bool {
	p := c.p
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return false
		}
		c.reqSession = sid
		held := p.blackholed || (!raw && sid != 0 && p.held[sid] > 0) || (!raw && sid == 0 && p.holdNew > 0)
		ch := p.changed
		p.mu.Unlock()
		if !held {
			return !c.closed()
		}
		select {
		case <-ch:
		case <-c.done:
			return false
		}
	}
}

// send hands ch to a writer, unless the connection is closed.
func (c *proxyConn) send(q chan<- chunk, ch chunk) bool {
	select {
	case q <- ch:
		return true
	case <-c.done:
		return false
	}
}

// readPackets reads packets (or raw bytes) from r into q until r fails; then
// it queues an EOF marker so the writer flushes what is queued and closes.
func (c *proxyConn) readPackets(r net.Conn, q chan<- chunk, dir direction, raw bool, inspect func([]byte) (stop bool, lose *loseArm)) {
	buf := make([]byte, 32<<10)
	for {
		var data []byte
		if raw {
			n, err := r.Read(buf)
			if err != nil {
				c.send(q, chunk{at: c.p.due(dir), kind: kindEOF})
				return
			}
			data = append([]byte(nil), buf[:n]...)
		} else {
			f, err := zkwire.ReadFrame(r)
			if err != nil {
				c.send(q, chunk{at: c.p.due(dir), kind: kindEOF})
				return
			}
			data = f
		}
		at := c.p.due(dir)
		if inspect != nil {
			if stop, arm := inspect(data); stop {
				c.send(q, chunk{at: at, kind: kindLose, arm: arm})
				return
			}
		}
		if !c.send(q, chunk{data: data, at: at, kind: kindData}) {
			return
		}
	}
}

func (c *proxyConn) readClient(up chan<- chunk, raw bool) {
	c.readPackets(c.client, up, upstream, raw, nil)
}

func (c *proxyConn) readServer(srv net.Conn, down chan<- chunk, raw bool) {
	if raw {
		c.readPackets(srv, down, downstream, true, nil)
		return
	}
	first := true
	c.readPackets(srv, down, downstream, false, func(f []byte) (bool, *loseArm) {
		if first {
			first = false
			c.p.recordSession(c, f)
			return false, nil
		}
		xid, ok := zkwire.ReplyXid(f)
		if ok && xid == zkwire.NotificationXid {
			c.p.notifications.Add(1)
		}
		if !ok || xid < 0 {
			return false, nil
		}
		c.mu.Lock()
		a := c.pending[xid]
		if a != nil {
			delete(c.pending, xid)
		}
		c.mu.Unlock()
		return a != nil, a
	})
}

// waitUntil waits for t unless the connection closes first.
func (c *proxyConn) waitUntil(t time.Time) bool {
	wait := time.Until(t)
	if kernelSleeps {
		wait -= kernelSleepWithin // the rest in sleepUntil
	}
	if wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-c.done:
			timer.Stop()
			return false
		}
	}
	sleepUntil(t)
	return !c.closed()
}

// kernelSleepWithin is how far ahead of a packet's time the proxy stops
// waiting on Go's timers, which wake up to about a millisecond late (an
// idle Go process waits for its next timer in epoll, whose timeout is in
// milliseconds), and sleeps in the kernel instead (sleepInKernelUntil),
// where the platform allows.
const kernelSleepWithin = 2 * time.Millisecond

// sleepUntil sleeps until t, a short time ahead (at most
// kernelSleepWithin), in the kernel: a packet is held for its delay and
// the kernel's wake-up latency, some tens of microseconds.
func sleepUntil(t time.Time) {
	if !kernelSleeps {
		return
	}
	if time.Until(t) > 0 {
		sleepInKernelUntil(t)
	}
}

func (c *proxyConn) writeServer(srv net.Conn, up <-chan chunk) {
	for {
		var ch chunk
		select {
		case ch = <-up:
		case <-c.done:
			return
		}
		if !c.waitUntil(ch.at) {
			return
		}
		if ch.kind == kindEOF {
			c.close()
			return
		}
		if c.p.bh.Load() {
			continue // black hole: discard
		}
		var arm *loseArm
		var xid int32
		if ch.kind == kindData && !c.raw {
			x, op, ok := zkwire.RequestHeader(ch.data)
			if ok {
				c.p.countRequest(op) // pings (xid -2), auth and setWatches too
			}
			if ok && x >= 0 {
				if arm = c.p.takeArm(op); arm != nil {
					xid = x
					c.mu.Lock()
					if c.closed() {
						c.mu.Unlock()
						c.p.rearm(arm)
						return
					}
					if c.pending == nil {
						c.pending = make(map[int32]*loseArm)
					}
					c.pending[xid] = arm
					c.mu.Unlock()
				}
			}
		}
		if _, err := srv.Write(ch.data); err != nil {
			if arm != nil {
				c.mu.Lock()
				unsent := c.pending[xid] == arm
				if unsent {
					delete(c.pending, xid)
				}
				c.mu.Unlock()
				if unsent {
					c.p.rearm(arm)
				}
			}
			c.close()
			return
		}
	}
}

func (c *proxyConn) writeClient(down <-chan chunk) {
	for {
		var ch chunk
		select {
		case ch = <-down:
		case <-c.done:
			return
		}
		if !c.waitUntil(ch.at) {
			return
		}
		switch ch.kind {
		case kindEOF:
			c.close()
			return
		case kindLose:
			c.close()
			ch.arm.fire()
			return
		}
		if c.p.bh.Load() {
			continue
		}
		// Recorded before the write: once the client has the bytes (and
		// its caller may look), LastReply already says so.
		c.p.toward.Store(time.Now().UnixNano())
		if _, err := c.client.Write(ch.data); err != nil {
			c.close()
			return
		}
	}
}
