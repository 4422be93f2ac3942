package chaoscontender

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/state"
)

// Host runs named clients and their contenders on request, by the chaos
// suite's verbs of CuratorPeer's line protocol, for the Go contender
// process (compat_test/gopeer) and the Go clients in the test's process
// alike. Requests may run at once: a Go lock does not belong to a thread.
type Host struct {
	log  *zap.Logger
	emit func(event string)

	mu      sync.Mutex
	clients map[string]*Client
	stops   map[string]context.CancelFunc // by contender label
	running sync.WaitGroup                // the contenders
}

// NewHost returns a host whose clients log to log and tell emit each
// connection state, as an event "state <client> <STATE> <µs>".
func NewHost(log *zap.Logger, emit func(event string)) *Host {
	return &Host{log: log, emit: emit, clients: map[string]*Client{}, stops: map[string]context.CancelFunc{}}
}

// Handle runs one request and returns its reply. Its verbs are
// CuratorPeer's client, session, chaos and chaos-stop (see the top of
// CuratorPeer.java), and replace and cancel-acquires <client>
// (Client.Replace, Client.CancelAcquires), and events <client>: once its
// contenders have stopped, it closes the client and answers what its events
// added up to, "granted=N waiters=0 holders=0 leaders=0 unended=0
// ended-ungranted=0 granted-twice=0" when they balance.
func (h *Host) Handle(verb string, args []string) (string, error) {
	var pos []string
	opt := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok {
			opt[k] = v
		} else {
			pos = append(pos, a)
		}
	}
	ms := func(key string) time.Duration {
		n, _ := strconv.Atoi(opt[key])
		return time.Duration(n) * time.Millisecond
	}
	name := "" // a client's, or a contender's label
	if len(pos) > 0 {
		name = pos[0]
	}
	h.mu.Lock()
	c, stop := h.clients[name], h.stops[name]
	h.mu.Unlock()
	switch {
	case verb == "client" && len(pos) == 2:
		opts := []framework.Option{framework.WithSessionTimeout(ms("session")), framework.WithConnectionTimeout(ms("session"))}
		if opt["policy"] == "session" {
			opts = append(opts, framework.WithErrorPolicy(state.SessionErrorPolicy{}))
		}
		return h.open(name, pos[1], opts)
	case verb == "chaos-stop" && stop != nil:
		stop()
		return "stopping", nil
	case verb == "chaos-stop":
		return "", fmt.Errorf("no chaos loop %s", name)
	case c == nil:
		return "", fmt.Errorf("%s: no client %q", verb, name)
	case verb == "session":
		return strconv.FormatInt(c.current().fc.SessionID(), 10), nil
	case verb == "replace":
		return "replaced", c.Replace()
	case verb == "cancel-acquires":
		return strconv.FormatInt(c.CancelAcquires(), 10), nil
	case verb == "events":
		return c.events(), nil
	case verb == "chaos" && len(pos) == 3:
		leases, _ := strconv.Atoi(opt["leases"])
		writes, _ := strconv.Atoi(opt["writes"])
		ct := Contender{Label: pos[2], Role: Role(pos[1]), Path: opt["path"], Leases: leases, Referee: opt["referee"],
			Fenced: opt["fenced"] == "true", Hold: ms("hold"), Writes: writes, Acquire: ms("acquire"), Linger: ms("linger")}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.mu.Lock()
		h.stops[ct.Label] = cancel
		h.running.Add(1)
		h.mu.Unlock()
		defer h.running.Done()
		return c.Run(ctx, ct).String(), nil
	}
	return "", fmt.Errorf("bad request %s %s", verb, strings.Join(args, " "))
}

// refereeTimeout bounds a call to the referee. A pause of the process
// (SIGSTOP, up to the session timeout + 20 s in the chaos suite) stops the
// clock of nothing but the process: a call under way when it began would
// time out the moment the process resumes if the bound were shorter, and
// its holding would go unchecked.
const refereeTimeout = time.Minute

// open opens a client, waits for its session and returns its id.
func (h *Host) open(name, connect string, opts []framework.Option) (string, error) {
	listener := state.ListenerFunc(func(s state.ConnectionState) {
		h.emit(fmt.Sprintf("state %s %s %d", name, s, time.Now().UnixMicro()))
	})
	log := h.log.With(zap.String("client", name))
	bal := newBalance()
	c := &Client{connect: connect, opts: append(opts, framework.WithLogger(log), framework.WithListener(listener), framework.WithEventHook(bal)),
		log: log, bal: bal, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: refereeTimeout}}
	c.cancel, c.cancelF = context.WithCancel(context.Background())
	var err error
	if c.gen, err = c.open(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.current().fc.BlockUntilConnected(ctx); err != nil {
		c.Close()
		return "", fmt.Errorf("no connection to %s: %w", connect, err)
	}
	h.mu.Lock()
	h.clients[name] = c
	h.mu.Unlock()
	return strconv.FormatInt(c.current().fc.SessionID(), 10), nil
}

// Close stops every contender, waits for them and closes every client.
func (h *Host) Close() {
	h.mu.Lock()
	for _, stop := range h.stops {
		stop()
	}
	h.mu.Unlock()
	h.running.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.clients {
		c.Close()
	}
}
