package zktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/zkwire"

	"github.com/go-zookeeper/zk"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var acl = zk.WorldACL(zk.PermAll)

// events records a client's events (from zk.WithEventCallback) and lets a
// test wait for one, without sleeping.
type events struct {
	mu     sync.Mutex
	list   []zk.Event
	notify chan struct{}
}

func newEvents() *events { return &events{notify: make(chan struct{})} }

func (e *events) callback(ev zk.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, ev)
	close(e.notify)
	e.notify = make(chan struct{})
}

// mark returns the index the next event will have.
func (e *events) mark() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.list)
}

// waitState waits for a session event with the given state at index >= from
// and returns the index after it.
func (e *events) waitState(t *testing.T, from int, state zk.State, timeout time.Duration) int {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		for i := from; i < len(e.list); i++ {
			if ev := e.list[i]; ev.Type == zk.EventSession && ev.State == state {
				e.mu.Unlock()
				return i + 1
			}
		}
		ch := e.notify
		seen := e.statesLocked(from)
		e.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %v event within %v; events since mark: %v", state, timeout, seen)
		}
	}
}

func (e *events) statesLocked(from int) []string {
	var s []string
	for _, ev := range e.list[min(from, len(e.list)):] {
		s = append(s, ev.State.String())
	}
	return s
}

type tLogger struct{ t *testing.T }

func (l tLogger) Printf(format string, args ...any) { l.t.Logf("zk: "+format, args...) }

// connect opens a go-zookeeper client and, at cleanup, closes it and waits
// until its goroutines have ended (its event channel is closed).
func connect(t *testing.T, servers string, timeout time.Duration) (*zk.Conn, *events) {
	t.Helper()
	ev := newEvents()
	conn, ch, err := zk.Connect(strings.Split(servers, ","), timeout,
		zk.WithLogger(tLogger{t}), zk.WithEventCallback(ev.callback))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		deadline := time.NewTimer(15 * time.Second)
		defer deadline.Stop()
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					return
				}
			case <-deadline.C:
				t.Error("zk client did not shut down")
				return
			}
		}
	})
	ev.waitState(t, 0, zk.StateHasSession, 20*time.Second)
	return conn, ev
}

// recvWithin returns the next value from ch, failing the test, with what it
// waited for, if none comes within d: the bounded form of <-ch.
func recvWithin[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: nothing within %v", what, d)
	}
	var zero T
	return zero
}

// waitWithin waits for wg, failing the test, with what it waited for, if
// it is not done within d.
func waitWithin(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	recvWithin(t, done, d, what)
}

// retry runs op until it succeeds or the timeout passes; a client that is
// reconnecting fails fast with connection errors meanwhile.
func retry(t *testing.T, timeout time.Duration, what string, op func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var err error
	for {
		if err = op(); err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestServerStandalone(t *testing.T) {
	start := time.Now()
	s := NewServer(t)
	t.Logf("standalone server on %s (pid %d) in %v", s.Addr(), s.PID(), time.Since(start))

	if got, err := s.FourLetterWord("ruok"); err != nil || got != "imok" {
		t.Fatalf("ruok = %q, %v", got, err)
	}
	m, err := s.Mntr()
	if err != nil {
		t.Fatal(err)
	}
	if m["zk_server_state"] != "leader" || !strings.HasPrefix(m["zk_version"], "3.") {
		t.Fatalf("mntr: state %q version %q", m["zk_server_state"], m["zk_version"])
	}
	if mode, err := s.Mode(); err != nil || mode != "leader" {
		t.Fatalf("Mode = %q, %v", mode, err)
	}
	if st, err := os.Stat(s.LogPath()); err != nil || st.Size() == 0 {
		t.Fatalf("log %s: %v", s.LogPath(), err)
	}
	if s.ConnectString() != s.Addr() || !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("addr %q connect string %q", s.Addr(), s.ConnectString())
	}

	conn, _ := connect(t, s.ConnectString(), 4*time.Second)
	if _, err := conn.Create("/keep", []byte("data"), 0, acl); err != nil {
		t.Fatal(err)
	}

	oldPID := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if s.Running() || s.PID() != 0 {
		t.Fatal("still running after Stop")
	}
	if _, err := s.FourLetterWord("ruok"); err == nil {
		t.Fatal("ruok answered after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if s.PID() == 0 || s.PID() == oldPID {
		t.Fatalf("pid after restart %d (before %d)", s.PID(), oldPID)
	}
	// The same client reconnects to the same port; the data survived.
	retry(t, 20*time.Second, "get /keep after restart", func() error {
		data, _, err := conn.Get("/keep")
		if err == nil && string(data) != "data" {
			return fmt.Errorf("data %q", data)
		}
		return err
	})

	// Restart of a running server, and Kill.
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	retry(t, 20*time.Second, "get /keep after kill", func() error {
		_, _, err := conn.Get("/keep")
		return err
	})

	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("temp dir %s not removed: %v", dir, err)
	}
	if err := s.Restart(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Restart after Close: %v", err)
	}
}

// A client that connects while the server restarts is closed promptly (so
// it retries), never left hanging; see WithStandaloneMode.
func TestRestartClosesEarlyConnections(t *testing.T) {
	s := NewServer(t)
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var hangs sync.Map
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := net.DialTimeout("tcp", s.Addr(), time.Second)
				if err != nil {
					// Refused: nothing listens yet. Pace the retries.
					select {
					case <-stop:
					case <-time.After(5 * time.Millisecond):
					}
					continue
				}
				_ = c.SetDeadline(time.Now().Add(3 * time.Second))
				_, err = c.Write(zkwire.ConnectRequestFrame(0, 4000, make([]byte, 16)))
				if err == nil {
					_, err = zkwire.ReadFrame(c)
				}
				c.Close()
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					hangs.Store(w, true)
				}
			}
		}()
	}
	err := s.Restart()
	close(stop)
	waitWithin(t, &wg, time.Minute, "the connecting workers") // each ends within its 3 s deadline
	if err != nil {
		t.Fatal(err)
	}
	hangs.Range(func(w, _ any) bool {
		t.Errorf("worker %v: a connect request made during startup got neither an answer nor a close", w)
		return true
	})
}

func TestStandaloneMode(t *testing.T) {
	s := NewServer(t, WithStandaloneMode())
	if mode, err := s.Mode(); err != nil || mode != "standalone" {
		t.Fatalf("Mode = %q, %v", mode, err)
	}
	if s.ID() != 0 {
		t.Fatalf("ID = %d", s.ID())
	}
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if mode, err := s.Mode(); err != nil || mode != "standalone" {
		t.Fatalf("Mode after restart = %q, %v", mode, err)
	}
	// (No client is connected across the restart: see WithStandaloneMode.)
	conn, _ := connect(t, s.ConnectString(), 4*time.Second)
	if _, err := conn.Create("/s", []byte("x"), 0, acl); err != nil {
		t.Fatal(err)
	}
}

func TestServerOptions(t *testing.T) {
	s := NewServer(t,
		WithTickTime(50*time.Millisecond),
		WithSessionTimeoutRange(300*time.Millisecond, 5*time.Second),
		WithContainerCheckInterval(100*time.Millisecond),
		WithConfig("globalOutstandingLimit", "500"))
	out, err := s.FourLetterWord("conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tickTime=50", "minSessionTimeout=300", "maxSessionTimeout=5000"} {
		if !strings.Contains(out, want) {
			t.Errorf("conf lacks %q:\n%s", want, out)
		}
	}
	conn, _ := connect(t, s.ConnectString(), 20*time.Second)
	// The server clamped the session timeout to the configured maximum.
	cons, err := s.FourLetterWord("cons")
	if err != nil || !strings.Contains(cons, fmt.Sprintf("sid=0x%x,", conn.SessionID())) ||
		!strings.Contains(cons, "to=5000,") {
		t.Fatalf("cons (want session 0x%x with to=5000): %q %v", conn.SessionID(), cons, err)
	}
	// An emptied container is reaped promptly.
	if _, err := conn.CreateContainer("/box", nil, zk.FlagContainer, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/box/child", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete("/box/child", -1); err != nil {
		t.Fatal(err)
	}
	there, _, gone, err := conn.ExistsW("/box")
	if err != nil {
		t.Fatal(err)
	}
	if !there {
		return // reaped already, before the watch was set
	}
	select {
	case ev := <-gone:
		if ev.Type != zk.EventNodeDeleted {
			t.Fatalf("container event %v", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("empty container not reaped")
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("JAVA_HOME", "")
	t.Setenv("PATH", t.TempDir())
	_, err := StartServer()
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install zookeeper") {
		t.Fatalf("StartServer without java: %v", err)
	}
	if Available() == nil {
		t.Fatal("Available() = nil without java")
	}
}

func TestBadClasspath(t *testing.T) {
	t.Setenv(ClasspathEnv, "/nonexistent/zookeeper.jar")
	_, err := StartServer(WithStartTimeout(30 * time.Second))
	if err == nil || !strings.Contains(err.Error(), "exited during startup") ||
		!strings.Contains(err.Error(), "Could not find or load main class") {
		t.Fatalf("StartServer with a bad classpath: %v", err)
	}
}

func TestEnsemble(t *testing.T) {
	start := time.Now()
	e := NewEnsemble(t, 3)
	t.Logf("ensemble %s up in %v", e.ConnectString(), time.Since(start))
	if n := len(strings.Split(e.ConnectString(), ",")); n != 3 {
		t.Fatalf("connect string %q", e.ConnectString())
	}
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	members := e.Members()
	for i, m := range members {
		mode, err := m.Mode()
		if err != nil {
			t.Fatal(err)
		}
		if (i == leader) != (mode == "leader") || (i != leader && mode != "follower") {
			t.Fatalf("member %d mode %q, leader %d", i, mode, leader)
		}
		if m.ID() != i+1 {
			t.Fatalf("member %d id %d", i, m.ID())
		}
	}

	conn, _ := connect(t, e.ConnectString(), 6*time.Second)
	if _, err := conn.Create("/ens", []byte("1"), 0, acl); err != nil {
		t.Fatal(err)
	}

	killed := time.Now()
	if err := members[leader].Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.WaitForQuorum(ctx); err != nil {
		t.Fatal(err)
	}
	newLeader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	if newLeader == leader {
		t.Fatalf("leader %d still leader after kill", leader)
	}
	t.Logf("new leader %d elected %v after killing %d", newLeader, time.Since(killed), leader)

	retry(t, 30*time.Second, "create after leader loss", func() error {
		_, err := conn.Create("/ens2", []byte("2"), 0, acl)
		if errors.Is(err, zk.ErrNodeExists) {
			return nil // an earlier try succeeded but its reply was lost
		}
		return err
	})
	if data, _, err := conn.Get("/ens"); err != nil || string(data) != "1" {
		t.Fatalf("get /ens: %q %v", data, err)
	}

	// The old leader rejoins as a follower and catches up.
	if err := members[leader].Restart(); err != nil {
		t.Fatal(err)
	}
	if err := e.WaitForQuorum(ctx); err != nil {
		t.Fatal(err)
	}
	if mode, err := members[leader].Mode(); err != nil || mode != "follower" {
		t.Fatalf("restarted member mode %q, %v", mode, err)
	}
	direct, _ := connect(t, members[leader].Addr(), 4*time.Second)
	if _, err := direct.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := direct.Get("/ens2"); err != nil || string(data) != "2" {
		t.Fatalf("get /ens2 from rejoined member: %q %v", data, err)
	}
}

func TestProxy(t *testing.T) {
	s := NewServer(t)

	t.Run("Forward", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		if !p.LastReply().IsZero() {
			t.Fatalf("LastReply before any client: %v", p.LastReply())
		}
		conn, _ := connect(t, p.Addr(), 4*time.Second)
		before := time.Now()
		if _, err := conn.Create("/fwd", []byte("x"), 0, acl); err != nil {
			t.Fatal(err)
		}
		if last := p.LastReply(); last.Before(before) || last.After(time.Now()) {
			t.Fatalf("LastReply %v, want the create's reply, between %v and now", last, before)
		}
		if data, _, err := conn.Get("/fwd"); err != nil || string(data) != "x" {
			t.Fatalf("get: %q %v", data, err)
		}
		if got := p.Sessions(); len(got) != 1 || got[0] != conn.SessionID() {
			t.Fatalf("Sessions() = %x, client session %x", got, conn.SessionID())
		}
		if c, g, e := p.Requests(OpCreate), p.Requests(OpGetData), p.Requests(OpExists); c != 1 || g != 1 || e != 0 {
			t.Fatalf("requests counted: create %d, getData %d, exists %d; want 1, 1, 0", c, g, e)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waited := make(chan error, 1)
		go func() { waited <- p.WaitRequests(ctx, OpExists, 2) }()
		for i := 0; i < 2; i++ {
			if _, _, err := conn.Exists("/fwd"); err != nil {
				t.Fatal(err)
			}
		}
		if err := recvWithin(t, waited, time.Minute, "WaitRequests"); err != nil || p.Requests(OpExists) != 2 {
			t.Fatalf("WaitRequests: %v, %d exists", err, p.Requests(OpExists))
		}
		short, cancelShort := context.WithTimeout(ctx, 10*time.Millisecond)
		defer cancelShort()
		if err := p.WaitRequests(short, OpExists, 3); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("WaitRequests for a request never sent: %v", err)
		}
		// Non-ZooKeeper traffic (four-letter words) passes as raw bytes.
		if out, err := fourLetterWord(p.Addr(), "ruok", 5*time.Second); err != nil || out != "imok" {
			t.Fatalf("ruok through proxy: %q %v", out, err)
		}
		if out, err := fourLetterWord(p.Addr(), "srvr", 5*time.Second); err != nil || srvrMode(out) != "leader" {
			t.Fatalf("srvr through proxy: %q %v", out, err)
		}
	})

	t.Run("DropConnections", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		conn, ev := connect(t, p.Addr(), 4*time.Second)
		sid := conn.SessionID()
		mark := ev.mark()
		p.DropConnections()
		i := ev.waitState(t, mark, zk.StateDisconnected, 10*time.Second)
		ev.waitState(t, i, zk.StateHasSession, 10*time.Second)
		if conn.SessionID() != sid {
			t.Fatalf("session changed: %x → %x", sid, conn.SessionID())
		}
		if _, err := conn.Create("/drop", nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("BlackHole", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		conn, ev := connect(t, p.Addr(), 2*time.Second)
		observer, _ := connect(t, s.Addr(), 10*time.Second)
		sid := conn.SessionID()
		if _, err := conn.Create("/bh", nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
		exists, _, gone, err := observer.ExistsW("/bh")
		if err != nil || !exists {
			t.Fatalf("observer: exists %v %v", exists, err)
		}
		mark := ev.mark()
		p.BlackHole()
		cut := time.Now()
		// No traffic passes: the server expires the session after its 2s
		// timeout and deletes the ephemeral node.
		select {
		case e := <-gone:
			if e.Type != zk.EventNodeDeleted {
				t.Fatalf("observer event %v", e)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("ephemeral node survived the black hole")
		}
		i := ev.waitState(t, mark, zk.StateDisconnected, 10*time.Second)
		// (A write under way when the black hole began may end just after.)
		if last := p.LastReply(); last.After(cut.Add(100 * time.Millisecond)) {
			t.Fatalf("LastReply %v: a reply passed the black hole begun at %v", last, cut)
		}
		p.Restore()
		i = ev.waitState(t, i, zk.StateExpired, 20*time.Second)
		ev.waitState(t, i, zk.StateHasSession, 20*time.Second)
		if conn.SessionID() == sid || conn.SessionID() == 0 {
			t.Fatalf("session id after expiry %x (was %x)", conn.SessionID(), sid)
		}
		if _, err := conn.Create("/bh", nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("LoseNextReply", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		conn, ev := connect(t, p.Addr(), 4*time.Second)
		observer, _ := connect(t, s.Addr(), 4*time.Second)
		sid := conn.SessionID()

		// Requests with other opcodes pass.
		fired := p.LoseNextReply(OpCreate)
		if _, _, err := conn.Get("/"); err != nil {
			t.Fatal(err)
		}
		mark := ev.mark()
		_, err := conn.Create("/lost", []byte("v"), 0, acl)
		if !errors.Is(err, zk.ErrConnectionClosed) {
			t.Fatalf("create with lost reply: err = %v, want %v", err, zk.ErrConnectionClosed)
		}
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			t.Fatal("LoseNextReply did not fire")
		}
		if ok, _, err := observer.Exists("/lost"); err != nil || !ok {
			t.Fatalf("node created by the lost request: exists %v %v", ok, err)
		}
		ev.waitState(t, ev.waitState(t, mark, zk.StateDisconnected, 10*time.Second),
			zk.StateHasSession, 10*time.Second)
		if conn.SessionID() != sid {
			t.Fatalf("session changed: %x → %x", sid, conn.SessionID())
		}

		// AnyOpcode, on a delete.
		fired = p.LoseNextReply(AnyOpcode)
		retry(t, 10*time.Second, "delete with lost reply", func() error {
			err := conn.Delete("/lost", -1)
			if errors.Is(err, zk.ErrConnectionClosed) {
				return nil
			}
			return fmt.Errorf("got %v", err)
		})
		recvWithin(t, fired, time.Minute, "the lost delete reply")
		if ok, _, err := observer.Exists("/lost"); err != nil || ok {
			t.Fatalf("node deleted by the lost request: exists %v %v", ok, err)
		}

		// An arm taken back loses nothing; one that fired cannot be.
		fired = p.LoseNextReply(OpCreate)
		if !p.Disarm(fired) || p.Disarm(fired) {
			t.Fatal("Disarm of an arm no request took: not true once, then false")
		}
		retry(t, 10*time.Second, "create after Disarm", func() error {
			_, err := conn.Create("/kept", nil, zk.FlagEphemeral, acl)
			return err
		})
		select {
		case <-fired:
			t.Fatal("a disarmed LoseNextReply fired")
		default:
		}
	})

	t.Run("Delay", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		conn, _ := connect(t, p.Addr(), 6*time.Second)
		const d = 150 * time.Millisecond
		p.SetDelay(d)
		for i := 0; i < 3; i++ {
			start := time.Now()
			if _, err := conn.Create(fmt.Sprintf("/delay-%d", i), nil, 0, acl); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took < 2*d {
				t.Fatalf("round trip %v with delay %v each way", took, d)
			}
		}
		// Concurrent requests keep their order and all succeed.
		var wg sync.WaitGroup
		errs := make(chan error, 10)
		for i := 0; i < 10; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := conn.Create(fmt.Sprintf("/delay-c%d", i), nil, 0, acl)
				errs <- err
			}()
		}
		waitWithin(t, &wg, time.Minute, "the concurrent creates")
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		p.SetDelay(0)
		if _, _, err := conn.Get("/delay-0"); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("ExpireSession", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		conn, ev := connect(t, p.Addr(), 10*time.Second)
		observer, _ := connect(t, s.Addr(), 10*time.Second)
		sid := conn.SessionID()
		if _, err := conn.Create("/exp", nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
		mark := ev.mark()
		if err := p.ExpireSession(sid); err != nil {
			t.Fatal(err)
		}
		// The server has closed the session: the ephemeral node is gone.
		if ok, _, err := observer.Exists("/exp"); err != nil || ok {
			t.Fatalf("ephemeral after ExpireSession: exists %v %v", ok, err)
		}
		i := ev.waitState(t, mark, zk.StateExpired, 15*time.Second)
		ev.waitState(t, i, zk.StateHasSession, 15*time.Second)
		if conn.SessionID() == sid || conn.SessionID() == 0 {
			t.Fatalf("session id after expiry %x (was %x)", conn.SessionID(), sid)
		}
		if err := p.ExpireSession(12345); err == nil {
			t.Fatal("ExpireSession of an unknown session succeeded")
		}
		// Expiring an already expired session is not an error.
		if err := p.ExpireSession(sid); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("HoldSession", func(t *testing.T) {
		p := NewProxy(t, s.Addr())
		conn, ev := connect(t, p.Addr(), 10*time.Second)
		other, _ := connect(t, p.Addr(), 10*time.Second)
		observer, _ := connect(t, s.Addr(), 10*time.Second)
		sid := conn.SessionID()
		if _, err := conn.Create("/held", nil, zk.FlagEphemeral, acl); err != nil {
			t.Fatal(err)
		}
		mark := ev.mark()
		release := p.HoldSession(sid)
		ev.waitState(t, mark, zk.StateDisconnected, 10*time.Second)
		// Other sessions pass; the held one is kept by the server.
		if _, _, err := other.Get("/"); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := observer.Exists("/held"); err != nil || !ok {
			t.Fatalf("ephemeral of the held session: exists %v %v", ok, err)
		}
		if conn.State() == zk.StateHasSession {
			t.Fatal("the held session reconnected")
		}
		release()
		release() // idempotent
		ev.waitState(t, mark, zk.StateHasSession, 15*time.Second)
		if conn.SessionID() != sid {
			t.Fatalf("session after the hold %x, want the same %x", conn.SessionID(), sid)
		}
		ok, _, gone, err := observer.ExistsW("/held")
		if err != nil || !ok {
			t.Fatalf("ephemeral after the hold: exists %v %v", ok, err)
		}
		before := p.Requests(OpCloseSession)
		conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := p.WaitRequests(ctx, OpCloseSession, before+1); err != nil {
			t.Fatal(err)
		}
		select {
		case e := <-gone:
			if e.Type != zk.EventNodeDeleted {
				t.Fatalf("observer event %v", e)
			}
		case <-ctx.Done():
			t.Fatal("the ephemeral node survived closeSession")
		}
	})
}

// An ensemble WithPeerLinks: a member cut off from the other two stops
// serving its clients (no quorum) while the other two go on; healed, it
// serves again, with the writes made meanwhile.
func TestEnsemblePartition(t *testing.T) {
	e := NewEnsemble(t, 3, WithPeerLinks())
	leader, err := e.Leader()
	if err != nil {
		t.Fatal(err)
	}
	cut := (leader + 1) % 3 // a follower
	heal, err := e.Partition(cut)
	if err != nil {
		t.Fatal(err)
	}
	members := e.Members()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mode, err := members[cut].Mode()
		if err == nil && mode != "follower" && mode != "leader" {
			break // it no longer serves
		}
		if time.Now().After(deadline) {
			t.Fatalf("member %d still serves as %s, cut off for 30s", cut+1, mode)
		}
		time.Sleep(50 * time.Millisecond) // polling the member's mode
	}
	var others []string
	for i, m := range members {
		if i != cut {
			others = append(others, m.Addr())
		}
	}
	conn, _ := connect(t, strings.Join(others, ","), 10*time.Second)
	if _, err := conn.Create("/while-cut", nil, 0, acl); err != nil {
		t.Fatalf("the majority does not serve while a member is cut off: %v", err)
	}
	heal()
	heal() // idempotent
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.WaitForQuorum(ctx); err != nil {
		t.Fatal(err)
	}
	back, _ := connect(t, members[cut].Addr(), 10*time.Second)
	if ok, _, err := back.Exists("/while-cut"); err != nil || !ok {
		t.Fatalf("the healed member does not have what was written meanwhile: %v, %v", ok, err)
	}

	// Cut off the leader: the other two elect one of themselves (the peer
	// with the higher id dials back through its link, not to the address a
	// member would otherwise tell it, around the partition) and serve.
	if leader, err = e.Leader(); err != nil {
		t.Fatal(err)
	}
	if heal, err = e.Partition(leader); err != nil {
		t.Fatal(err)
	}
	defer heal()
	var rest []*Server
	for i, m := range members {
		if i != leader {
			rest = append(rest, m)
		}
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute) // ZooKeeper may take initLimit to elect
	defer cancel2()
	for {
		m0, _ := rest[0].Mode()
		m1, _ := rest[1].Mode()
		if (m0 == "leader" && m1 == "follower") || (m0 == "follower" && m1 == "leader") {
			break
		}
		select {
		case <-ctx2.Done():
			t.Fatalf("with the leader (member %d) cut off, the others are %q and %q after a minute", leader+1, m0, m1)
		case <-time.After(50 * time.Millisecond): // polling the members' modes
		}
	}
	heal()
	if err := e.WaitForQuorum(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := NewEnsemble(t, 1).Partition(0); err == nil {
		t.Fatal("Partition without WithPeerLinks succeeded")
	}
}

func TestTmpfs(t *testing.T) {
	probe, err := os.MkdirTemp(tmpfsDir, "zktest-probe-")
	if err != nil {
		t.Skipf("%s is not a writable directory here: %v", tmpfsDir, err)
	}
	os.Remove(probe)
	var dir string
	t.Cleanup(func() { // runs last, after the server's Close
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Close left %s behind: %v", dir, err)
		}
	})
	s := NewServer(t, WithTmpfs())
	dir = s.Dir()
	if !strings.HasPrefix(s.DataDir(), tmpfsDir+"/") {
		t.Errorf("DataDir %s is not on %s", s.DataDir(), tmpfsDir)
	}
	conn, _ := connect(t, s.ConnectString(), 4*time.Second)
	if _, err := conn.Create("/on-tmpfs", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
}

// Where the tmpfs is missing, WithTmpfs leaves the directory in
// os.TempDir().
func TestTmpfsMissing(t *testing.T) {
	defer func(d string) { tmpfsDir = d }(tmpfsDir)
	tmpfsDir = t.TempDir() + "/no-such-dir"
	c := newConfig([]Option{WithTmpfs()})
	dir, err := c.tempDir("zktest-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if !strings.HasPrefix(dir, os.TempDir()) {
		t.Errorf("tempDir = %s, want it in %s", dir, os.TempDir())
	}
}
