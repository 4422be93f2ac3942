// Command gopeer is the chaos suite's Go contender process: it runs
// compat_test/chaoscontender's clients and contenders on behalf of a test,
// driven by the line protocol of internal/curatorpeer (described in
// CuratorPeer.java), so that the suite can pause (SIGSTOP) a Go client as a
// whole process, as it pauses a Java peer.
//
// Verbs: client <name> <connect> session=<ms> [policy=session] (-> session
// id), session <client>, close-client <client>, chaos <client> <role>
// <label> path=<path> referee=<url> [leases=<n>] [fenced=true] hold=<ms>
// writes=<n> acquire=<ms> linger=<ms> (runs the contender until chaos-stop
// <label>, then answers its report), ping and quit. Events: "! ready" and
// "! state <client> <STATE> <µs>". Every request runs on a goroutine of its
// own: a Go lock does not belong to a thread.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gocurator/curator/compat_test/chaoscontender"
	"github.com/gocurator/curator/state"
)

// peer is the process's clients and running contenders.
type peer struct {
	outMu sync.Mutex
	log   *zap.Logger

	mu      sync.Mutex
	clients map[string]*chaoscontender.Client
	stops   map[string]context.CancelFunc // by contender label
	wg      sync.WaitGroup
}

func main() {
	log, err := zap.NewDevelopment(zap.IncreaseLevel(zap.InfoLevel))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	p := &peer{log: log, clients: map[string]*chaoscontender.Client{}, stops: map[string]context.CancelFunc{}}
	p.serve()
}

func (p *peer) emit(line string) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	fmt.Fprintln(os.Stdout, line)
}

// serve answers requests until quit or the end of stdin, then stops every
// contender and closes every client.
func (p *peer) serve() {
	p.emit("! ready")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			p.emit("? bad request: " + sc.Text())
			continue
		}
		id, verb, args := f[0], f[2], f[3:]
		if verb == "quit" {
			p.emit(id + " ok bye")
			break
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			if reply, err := p.handle(verb, args); err != nil {
				p.emit(id + " err " + strings.ReplaceAll(err.Error(), "\n", " "))
			} else {
				p.emit(id + " ok " + reply)
			}
		}()
	}
	p.mu.Lock()
	for _, stop := range p.stops {
		stop()
	}
	p.mu.Unlock()
	p.wg.Wait()
	for _, c := range p.clients {
		c.Close()
	}
}

// handle runs one request and returns its reply's text.
func (p *peer) handle(verb string, args []string) (string, error) {
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
	if verb == "ping" {
		return "pong", nil
	}
	if len(pos) == 0 {
		return "", fmt.Errorf("IllegalArgumentException: %s: no client named", verb)
	}
	name := pos[0]
	if verb == "client" && len(pos) == 2 {
		return p.open(name, chaoscontender.Config{Connect: pos[1], SessionTimeout: ms("session"), Session: opt["policy"] == "session",
			Logger: p.log.With(zap.String("client", name))})
	}
	p.mu.Lock()
	c := p.clients[name]
	stop := p.stops[name]
	if verb == "close-client" {
		delete(p.clients, name)
	}
	p.mu.Unlock()
	switch {
	case verb == "chaos-stop" && stop == nil:
		return "", fmt.Errorf("IllegalArgumentException: no chaos loop %s", name)
	case verb == "chaos-stop":
		stop()
		return "stopping", nil
	case c == nil:
		return "", fmt.Errorf("IllegalArgumentException: %s: no client %s", verb, name)
	case verb == "session":
		return strconv.FormatInt(c.Framework().SessionID(), 10), nil
	case verb == "close-client":
		return "closed", c.Close()
	case verb == "chaos" && len(pos) == 3:
		leases, _ := strconv.Atoi(opt["leases"])
		writes, _ := strconv.Atoi(opt["writes"])
		ct := chaoscontender.Contender{Label: pos[2], Role: chaoscontender.Role(pos[1]), Path: opt["path"], Leases: leases,
			Referee: opt["referee"], Fenced: opt["fenced"] == "true", Hold: ms("hold"), Writes: writes, Acquire: ms("acquire"),
			Linger: ms("linger")}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p.mu.Lock()
		p.stops[ct.Label] = cancel
		p.mu.Unlock()
		return c.Run(ctx, ct).String(), nil
	}
	return "", fmt.Errorf("IllegalArgumentException: bad request %s %s", verb, strings.Join(args, " "))
}

// open opens a client, waits for its session and returns its id.
func (p *peer) open(name string, cfg chaoscontender.Config) (string, error) {
	cfg.Listener = state.ListenerFunc(func(s state.ConnectionState) {
		p.emit(fmt.Sprintf("! state %s %s %d", name, s, time.Now().UnixMicro()))
	})
	c, err := chaoscontender.Open(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.Framework().BlockUntilConnected(ctx); err != nil {
		c.Close()
		return "", fmt.Errorf("IllegalStateException: no connection to %s: %w", cfg.Connect, err)
	}
	p.mu.Lock()
	p.clients[name] = c
	p.mu.Unlock()
	return strconv.FormatInt(c.Framework().SessionID(), 10), nil
}
