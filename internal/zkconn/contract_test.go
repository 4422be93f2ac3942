package zkconn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/internal/zkwire"
)

// The contract test: what the door assumes of go-zookeeper (the numbered
// list of doc.go), checked against a real server. A failure names the
// assumption and where in go-zookeeper to look.

var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 5*time.Second)))
}

// pinned is the go-zookeeper release the door was written against.
const pinned = "v1.0.4"

func broken(t *testing.T, n int, what, where string, args ...any) {
	t.Helper()
	t.Fatalf("go-zookeeper no longer does what internal/zkconn assumes (doc.go, assumption %d: %s); look at %s: "+
		"the door must change with it. Details: %v", n, what, where, args)
}

// The go-zookeeper built in is the one pinned: another release may keep
// every assumption below, or break one that no test here can see (the data
// race of assumption 7). Read doc.go's list against its conn.go, then move
// the pin.
func TestPinnedRelease(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod") // the test runs in its package's directory
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "require" {
			f = f[1:]
		}
		if len(f) >= 2 && f[0] == "github.com/go-zookeeper/zk" {
			v := f[1]
			if v != pinned {
				t.Fatalf("go-zookeeper is %s, the door (internal/zkconn) was written against %s: read every assumption "+
					"of internal/zkconn/doc.go against its conn.go (authenticate, sendData, sendLoop, recvLoop, "+
					"CreateContainer, the HostProvider calls), then change the pin in contract_test.go", v, pinned)
			}
			if strings.Contains(string(mod), "replace github.com/go-zookeeper/zk") {
				t.Fatal("go-zookeeper is replaced (a fork?): read every assumption of internal/zkconn/doc.go against it")
			}
			return
		}
	}
	t.Fatal("go.mod does not require go-zookeeper")
}

// wireCheck sits below the tap (the Dial of Config) and records what
// go-zookeeper writes and reads, frame by frame.
type wireCheck struct {
	mu       sync.Mutex
	dials    []string
	timeouts []time.Duration // each dial's timeout
	writes   [][]byte        // each Write's bytes
	writeAt  []time.Time     // when each Write began
	reads    []byte          // every byte read, in order
	lastRead time.Time       // when bytes were last read
}

func (w *wireCheck) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	w.mu.Lock()
	w.dials = append(w.dials, addr)
	w.timeouts = append(w.timeouts, timeout)
	w.mu.Unlock()
	nc, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &checkedConn{Conn: nc, w: w}, nil
}

type checkedConn struct {
	net.Conn
	w *wireCheck
}

func (c *checkedConn) Write(p []byte) (int, error) {
	c.w.mu.Lock()
	c.w.writes = append(c.w.writes, append([]byte(nil), p...))
	c.w.writeAt = append(c.w.writeAt, time.Now())
	c.w.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *checkedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.mu.Lock()
	c.w.reads = append(c.w.reads, p[:n]...)
	if n > 0 {
		c.w.lastRead = time.Now()
	}
	c.w.mu.Unlock()
	return n, err
}

// pingsWritten returns when each ping was written since from.
func (w *wireCheck) pingsWritten(from time.Time) []time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var at []time.Time
	for i, p := range w.writes {
		if w.writeAt[i].Before(from) {
			continue
		}
		for f := range zkwire.Frames(p) {
			if xid, op, ok := zkwire.RequestHeader(f); ok && xid == -2 && op == opPing {
				at = append(at, w.writeAt[i])
			}
		}
	}
	return at
}

// dialed opens a Conn to servers through w, waits for its session, and
// closes it when the test ends; sessions gets each session event's id.
func dialed(t *testing.T, w *wireCheck, servers []string, timeout time.Duration) (*Conn, <-chan int64) {
	t.Helper()
	sessions := make(chan int64, 16)
	c, err := Dial(Config{Servers: servers, SessionTimeout: timeout, Dial: w.dial,
		OnEvent: func(c *Conn, ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				select {
				case sessions <- c.SessionID():
				default: // the hook never blocks go-zookeeper; the test reads what it needs
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	testutil.Recv(t, sessions, "a session")
	return c, sessions
}

// Assumptions 1–3: the connect request and response come first, each Write
// carries whole frames, and each reply carries its request's xid; so the
// tap reads the session's credentials and negotiated timeout (the server
// clamps 60 s to its 5 s), and pairs a reply with its request (LastContact:
// the answered request's send time).
func TestHandshakeFramesAndReplies(t *testing.T) {
	testutil.CheckLeaks(t)
	w := &wireCheck{}
	c, _ := dialed(t, w, []string{server.Addr()}, 60*time.Second)

	s := c.Session()
	if s.ID == 0 || s.ID != c.SessionID() || len(s.Passwd) == 0 {
		broken(t, 1, "the first frames are the connect request and response", "conn.go, authenticate",
			"the tap read session", s.ID, "go-zookeeper has", c.SessionID())
	}
	if s.Timeout != 5*time.Second {
		broken(t, 1, "the connect response carries the negotiated timeout", "conn.go, authenticate (connectResponse)",
			"negotiated", s.Timeout)
	}
	w.mu.Lock()
	first := w.writes[0]
	read := append([]byte(nil), w.reads...)
	w.mu.Unlock()
	if got := zkwire.ConnectRequestSession(first); got != 0 || len(first) < zkwire.FrameHeaderLen+28 {
		broken(t, 1, "the first frame written is a ConnectRequest for a new session", "conn.go, authenticate", first)
	}
	if n, ok := zkwire.FrameLen([zkwire.FrameHeaderLen]byte(read)); !ok || len(read) < zkwire.FrameHeaderLen+n {
		broken(t, 1, "the first frame read is the connect response", "conn.go, authenticate", "read", len(read), "bytes")
	} else if timeout, id, passwd, ok := zkwire.ParseConnectResponse(read[:zkwire.FrameHeaderLen+n]); !ok ||
		id != s.ID || string(passwd) != string(s.Passwd) || time.Duration(timeout)*time.Millisecond != s.Timeout {
		broken(t, 1, "the first frame read is the connect response", "conn.go, authenticate",
			"it reads as session", id, "timeout", timeout, "ok", ok)
	}

	before := time.Now()
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	if last := c.LastContact(); last.Before(before) || last.After(after) {
		broken(t, 3, "a reply carries its request's xid", "conn.go, recvLoop and sendData",
			"last contact", last, "not within the request's", before, after)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, p := range w.writes {
		for len(p) > 0 {
			n, ok := zkwire.FrameLen([zkwire.FrameHeaderLen]byte(p))
			if !ok || len(p) < zkwire.FrameHeaderLen+n {
				broken(t, 2, "each Write carries whole frames", "conn.go, sendData and sendLoop", "write", i, "has a partial frame")
			}
			p = p[zkwire.FrameHeaderLen+n:]
		}
	}
}

// Assumptions 2 and 3 as the framework uses them: a request made from the
// OnWritten hook of a create reaches the server after the create, so a
// listing made there shows the node; also when a delay on the way (a
// proxy's) keeps the create's reply from coming before the listing is
// sent.
func TestWrittenHookOrdersARequestBehindTheCreate(t *testing.T) {
	for _, delay := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(delay.String(), func(t *testing.T) {
			testutil.CheckLeaks(t)
			addr := server.Addr()
			if delay > 0 {
				proxy := zktest.NewProxy(t, server.Addr())
				proxy.SetDelay(delay)
				addr = proxy.Addr()
			}
			writtenHookOrders(t, addr)
		})
	}
}

func writtenHookOrders(t *testing.T, addr string) {
	c, _ := dialed(t, &wireCheck{}, []string{addr}, 5*time.Second)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	if _, err := c.Create(testutil.Root, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := c.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	type listing struct {
		kids []string
		err  error
	}
	listed, heard := make(chan listing, 1), make(chan struct{}, 1)
	defer c.Forget(c.OnWritten(base+"/a", hookFunc(func(c *Conn) {
		select {
		case heard <- struct{}{}:
		default:
		}
		go func() {
			kids, _, err := c.Children(base)
			listed <- listing{kids, err}
		}()
	})))
	if _, err := c.Create(base+"/a", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	select { // the hook runs inside the create's Write, before its reply can come
	case <-heard:
	default:
		broken(t, 2, "a create is written as one frame the tap reads (its opcode, then its path)",
			"conn.go, Create and sendData; constants.go's opcodes against tap.go's")
	}
	l := testutil.Recv(t, listed, "the listing made from the hook")
	testutil.Must(t, l.err) // a listing that failed says nothing of the order
	if len(l.kids) != 1 || l.kids[0] != "a" {
		broken(t, 3, "requests are written in the order they are made", "conn.go, queueRequest and sendLoop",
			"the listing made as the create was written shows", l.kids)
	}
}

// hookFunc is a func as a WriteHook.
type hookFunc func(c *Conn)

func (f hookFunc) Written(c *Conn) { f(c) }

// Assumption 4: the session id changes on the same Conn when the session
// expires and a new one begins; the tap reads the new credentials.
func TestNewSessionOnTheSameConn(t *testing.T) {
	testutil.CheckLeaks(t)
	proxy := zktest.NewProxy(t, server.Addr())
	c, sessions := dialed(t, &wireCheck{}, []string{proxy.Addr()}, 2*time.Second)
	first := c.SessionID()
	if err := proxy.ExpireSession(first); err != nil {
		t.Fatal(err)
	}
	next := testutil.Recv(t, sessions, "a new session")
	if next == first || next == 0 || c.Session().ID != next {
		broken(t, 4, "a new session begins on the same Conn", "conn.go, authenticate and loop",
			"sessions", first, next, "the tap's", c.Session().ID)
	}
}

// Assumptions 5 and 6: the HostProvider is asked for every server dialled,
// in its order (after a connection drops, the next server: here the dead
// one, then the live one again), and Close returns once go-zookeeper's
// goroutines have ended (the event channel closed).
func TestHostProviderAndClose(t *testing.T) {
	testutil.CheckLeaks(t) // Close must leave no goroutine of go-zookeeper's
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := dead.Addr().String()
	dead.Close()
	proxy := zktest.NewProxy(t, server.Addr())
	w := &wireCheck{}
	c, sessions := dialed(t, w, []string{deadAddr, proxy.Addr()}, 5*time.Second)
	w.mu.Lock()
	before := len(w.dials)
	w.mu.Unlock()
	proxy.DropConnections()
	testutil.Recv(t, sessions, "the session again, after the dead server was tried")
	w.mu.Lock()
	dials := append([]string(nil), w.dials...)
	w.mu.Unlock()
	if len(dials) < before+2 || dials[before] != deadAddr || dials[len(dials)-1] != proxy.Addr() {
		broken(t, 6, "the HostProvider is asked for each server dialled", "conn.go, connect",
			"dialled", dials, "after the drop, want", deadAddr, "then", proxy.Addr())
	}
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	testutil.Recv(t, closed, "Close")
	if _, _, err := c.Conn.Exists("/"); !errors.Is(err, zk.ErrClosing) && !errors.Is(err, zk.ErrConnectionClosed) {
		broken(t, 5, "Close ends the Conn", "conn.go, Close and loop", err)
	}
}

// Assumption 7's guard: a container create asked for once Close has begun
// fails at once, as go-zookeeper's own would, instead of racing the close.
func TestContainerCreateAfterClose(t *testing.T) {
	testutil.CheckLeaks(t)
	c, _ := dialed(t, &wireCheck{}, []string{server.Addr()}, 5*time.Second)
	c.Close()
	if _, err := c.CreateContainer("/x", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrConnectionClosed) {
		t.Fatalf("CreateContainer after Close = %v, want zk.ErrConnectionClosed", err)
	}
}

// Cut stops the connection at once, without waiting: a request made once
// it has returned reaches no server (go-zookeeper dials again, and the
// dialer refuses), so an abandoned session cannot be resumed through it.
func TestCutSendsNothingMore(t *testing.T) {
	testutil.CheckLeaks(t)
	c, _ := dialed(t, &wireCheck{}, []string{server.Addr()}, 5*time.Second)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	c.Cut()
	if _, err := c.Create(base, nil, 0, zk.WorldACL(zk.PermAll)); err == nil {
		t.Fatal("a create made after Cut succeeded")
	}
	raw := testutil.Connect(t, server.Addr())
	if ok, _, err := raw.Exists(base); err != nil || ok {
		t.Fatalf("the node of a create made after Cut: exists %v, %v", ok, err)
	}
}

// Assumption 8: a watch's channel gets its one event, then is closed, so
// that every receiver wakes and exactly one has the event: when the node
// changes, and when the connection's watches are dropped (Close).
func TestWatchChannelSendsOnceThenCloses(t *testing.T) {
	testutil.CheckLeaks(t)
	c, _ := dialed(t, &wireCheck{}, []string{server.Addr()}, 2*time.Second)
	path := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), path)
	receivers := func(events <-chan zk.Event) <-chan []zk.Event {
		got := make(chan []zk.Event, 1)
		go func() {
			var evs []zk.Event
			var wg sync.WaitGroup
			var mu sync.Mutex
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if ev, ok := <-events; ok {
						mu.Lock()
						evs = append(evs, ev)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			got <- evs
		}()
		return got
	}
	check := func(got <-chan []zk.Event, want zk.EventType, when string) {
		evs := testutil.Recv(t, got, "every receiver of the watch's channel to wake, "+when)
		if len(evs) != 1 || evs[0].Type != want {
			broken(t, 8, "a watch's channel gets one event, then is closed", "conn.go, notifyWatches and invalidateWatches",
				when, "events received", evs, "want one of type", want)
		}
	}
	if _, err := c.Create(path, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, _, events, err := c.GetW(path)
	if err != nil {
		t.Fatal(err)
	}
	got := receivers(events)
	if err := c.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	check(got, zk.EventNodeDeleted, "when the node is deleted")

	_, _, events, err = c.ExistsW(path)
	if err != nil {
		t.Fatal(err)
	}
	got = receivers(events)
	c.Close()
	check(got, zk.EventNotWatching, "when the connection closes")
}

// Assumption 10: go-zookeeper drops a connection on which it has read
// nothing for ⅔ T, and says StateDisconnected. The proxy black-holes the
// connection; the drop is timed from the last bytes read below the tap.
func TestReadTimeoutDropsASilentConnection(t *testing.T) {
	testutil.CheckLeaks(t)
	const T = 1500 * time.Millisecond
	proxy := zktest.NewProxy(t, server.Addr())
	w := &wireCheck{}
	dropped := make(chan time.Time, 1)
	sessions := make(chan struct{}, 1)
	c, err := Dial(Config{Servers: []string{proxy.Addr()}, SessionTimeout: T, Dial: w.dial,
		OnEvent: func(_ *Conn, ev zk.Event) {
			switch {
			case ev.Type != zk.EventSession:
			case ev.State == zk.StateHasSession:
				select {
				case sessions <- struct{}{}:
				default:
				}
			case ev.State == zk.StateDisconnected:
				select {
				case dropped <- time.Now():
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	testutil.Recv(t, sessions, "a session")
	proxy.BlackHole()
	at := testutil.Recv(t, dropped, "the silent connection dropped")
	w.mu.Lock()
	silent := at.Sub(w.lastRead)
	w.mu.Unlock()
	t.Logf("dropped %v after the last bytes read (⅔ T = %v)", silent.Round(time.Millisecond), 2*T/3)
	if silent < 2*T/3-20*time.Millisecond || silent > 2*T/3+T/10 {
		broken(t, 10, "a connection silent for ⅔ T is dropped then", "conn.go, setTimeouts and recvLoop",
			"dropped after", silent, "want", 2*T/3)
	}
	proxy.Restore()
}

// Assumption 11, and the heartbeat's rule: on a busy connection, the pings
// written are go-zookeeper's own, T/3 apart, and the heartbeat adds none.
func TestBusyConnectionPingsEveryThird(t *testing.T) {
	testutil.CheckLeaks(t)
	const T = 1500 * time.Millisecond
	w := &wireCheck{}
	c, _ := dialed(t, w, []string{server.Addr()}, T)
	from := time.Now()
	for time.Since(from) < 2*T+T/6 { // busy: a read after another, for a little over two T
		if _, _, err := c.Exists("/"); err != nil {
			t.Fatal(err)
		}
	}
	pings := w.pingsWritten(from)
	t.Logf("busy for %v: pings at %v", time.Since(from).Round(time.Millisecond), sinceEach(from, pings))
	if len(pings) < 5 || len(pings) > 7 {
		broken(t, 11, "a ping goes every T/3, and a busy connection carries no other", "conn.go, sendLoop's pingTicker",
			len(pings), "pings in", 2*T, "want 6")
	}
	for i := 1; i < len(pings); i++ {
		if d := pings[i].Sub(pings[i-1]); d < T/3-T/20 || d > T/3+T/20 {
			broken(t, 11, "a ping goes every T/3, and a busy connection carries no other", "conn.go, sendLoop's pingTicker",
				"pings", d, "apart, want", T/3)
		}
	}
}

// sinceEach formats each time as its offset from from.
func sinceEach(from time.Time, at []time.Time) []time.Duration {
	d := make([]time.Duration, len(at))
	for i, t := range at {
		d[i] = t.Sub(from).Round(time.Millisecond)
	}
	return d
}

// Assumption 12, and the heartbeat itself: on an idle connection a ping
// goes at least every tenth of the session timeout; go-zookeeper takes the
// answers to the pings it did not write without a word (its log says
// nothing of an unknown xid) and goes on working; and the last sure
// renewal never grows much older than two heartbeats.
func TestIdleConnectionHeartbeat(t *testing.T) {
	testutil.CheckLeaks(t)
	const T = 1500 * time.Millisecond
	w := &wireCheck{}
	var logMu sync.Mutex
	var logged []string
	sessions := make(chan struct{}, 1)
	c, err := Dial(Config{Servers: []string{server.Addr()}, SessionTimeout: T, Dial: w.dial,
		Log: func(format string, args ...any) {
			logMu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			logMu.Unlock()
		},
		OnEvent: func(_ *Conn, ev zk.Event) {
			if ev.Type == zk.EventSession && ev.State == zk.StateHasSession {
				select {
				case sessions <- struct{}{}:
				default:
				}
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	testutil.Recv(t, sessions, "a session")
	from := time.Now()
	oldest, stalled := time.Duration(0), time.Duration(0)
	const every = T / 50
	tick := time.NewTicker(every)
	defer tick.Stop()
	prev := from
	for range tick.C { // idle, but for the pings: the renewal's age, sampled
		now := time.Now()
		// How late this sample is: the process's own stall (a loaded
		// machine), which holds the heartbeat's goroutine back as well.
		stalled = max(stalled, now.Sub(prev)-every)
		prev = now
		if r := c.LastRenewal(); !r.IsZero() {
			oldest = max(oldest, now.Sub(r))
		}
		if now.Sub(from) > 2*T {
			break
		}
	}
	pings := w.pingsWritten(from)
	t.Logf("idle for 2T: %d pings, at %v; the last sure renewal at most %v old; this process stalled at most %v",
		len(pings), sinceEach(from, pings), oldest.Round(time.Millisecond), stalled.Round(time.Millisecond))
	if want := int(2*T/HeartbeatInterval(T)) - 2; len(pings) < want {
		t.Fatalf("an idle connection wrote %d pings in 2T, want at least %d (the heartbeat's, every %v)", len(pings), want, HeartbeatInterval(T))
	}
	if most := 2*HeartbeatInterval(T) + T/10 + stalled; oldest > most {
		t.Fatalf("the last sure renewal grew %v old on an idle connection, want at most %v (two heartbeats, T/10, and the %v this process stalled)", oldest, most, stalled.Round(time.Millisecond))
	}
	if _, _, err := c.Exists("/"); err != nil {
		broken(t, 12, "go-zookeeper ignores the answer to a ping it did not write", "conn.go, recvLoop", err)
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, l := range logged {
		if strings.Contains(l, "Xid") || strings.Contains(l, "xid") {
			broken(t, 12, "go-zookeeper ignores the answer to a ping it did not write", "conn.go, recvLoop", l)
		}
	}
}

// Assumption 13: go-zookeeper gives the Dialer a timeout of one second.
func TestDialTimeoutIsASecond(t *testing.T) {
	testutil.CheckLeaks(t)
	w := &wireCheck{}
	dialed(t, w, []string{server.Addr()}, 2*time.Second)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.timeouts) == 0 || w.timeouts[0] != time.Second {
		broken(t, 13, "a dial's timeout is one second", "conn.go, connect (connectTimeout)", w.timeouts)
	}
}

// The heartbeat goes by the session timeout the servers granted, not the
// one asked for: asked for 50 s, granted this server's 5 s, an idle
// connection's last sure renewal still never grows much older than two
// heartbeats of the grant (it went 5 s on go-zookeeper's pings alone, long
// enough for the framework's clock to call a healthy session silent).
func TestHeartbeatGoesByTheGrantedTimeout(t *testing.T) {
	testutil.CheckLeaks(t)
	c, _ := dialed(t, &wireCheck{}, []string{server.Addr()}, 50*time.Second)
	T := c.Session().Timeout
	if T != 5*time.Second {
		t.Fatalf("granted %v, want the server's 5s", T)
	}
	from, oldest := time.Now(), time.Duration(0)
	tick := time.NewTicker(T / 50)
	defer tick.Stop()
	for now := range tick.C { // idle but for the pings, for longer than the asked timeout's heartbeat
		if r := c.LastRenewal(); !r.IsZero() {
			oldest = max(oldest, now.Sub(r))
		}
		if now.Sub(from) > HeartbeatInterval(50*time.Second)+T/5 {
			break
		}
	}
	t.Logf("asked 50s, granted %v: the last sure renewal at most %v old", T, oldest.Round(time.Millisecond))
	if most := 2*HeartbeatInterval(T) + T/10; oldest > most {
		t.Fatalf("the last sure renewal grew %v old, want at most %v (heartbeats of the granted %v)", oldest, most, T)
	}
}
