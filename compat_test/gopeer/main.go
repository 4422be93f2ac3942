// Command gopeer is the chaos suite's Go contender process: it runs
// gocurator's recipes on behalf of a test, driven by the line protocol of
// internal/curatorpeer (described in CuratorPeer.java), so that the suite
// can treat a Go client as it treats a Java Curator peer, and pause it
// (SIGSTOP) as a whole process: the fault every lock paper starts from.
//
// It speaks the verbs the chaos suite uses: client, session, remote,
// close-client, mutex, rwlock, semaphore, chaos, chaos-stop, linger, inside,
// holdings, counts, elect, ping and quit; and prints "! ready" and "! state <client> <STATE> <µs>".
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/dialtrack"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

func main() {
	p := &peer{clients: map[string]*client{}, locks: map[string]*lock{}, loops: map[string]*chaosLoop{},
		workers: map[string]chan func(){}}
	p.serve(os.Stdin)
}

// peer is the process's state: its clients, locks, chaos loops and
// workers.
type peer struct {
	outMu sync.Mutex

	mu      sync.Mutex
	clients map[string]*client
	locks   map[string]*lock
	loops   map[string]*chaosLoop
	workers map[string]chan func()
	wg      sync.WaitGroup
}

// client is one framework client and what the chaos suite asks of it.
type client struct {
	name string
	c    *framework.Client

	mu       sync.Mutex
	dials    dialtrack.Tracker // which server it is connected to
	linger   bool
	holdings map[*holding]struct{}
}

// lock is one lock made on a client; rw and sem are nil unless it is one.
type lock struct {
	client *client
	mutex  *recipes.InterProcessMutex
	rw     *recipes.InterProcessReadWriteLock
	sem    *recipes.InterProcessSemaphoreV2
}

func (p *peer) emit(line string) {
	p.outMu.Lock()
	defer p.outMu.Unlock()
	fmt.Fprintln(os.Stdout, strings.NewReplacer("\n", " ", "\r", " ").Replace(line))
}

// serve reads requests until quit or the end of stdin, then closes every
// client and returns.
func (p *peer) serve(in *os.File) {
	p.emit("! ready")
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) < 3 {
			p.emit("? bad request: " + sc.Text())
			continue
		}
		id, worker, verb, args := f[0], f[1], f[2], f[3:]
		if verb == "quit" {
			p.emit(id + " ok bye")
			break
		}
		run := func() {
			reply, err := p.handle(worker, verb, args)
			if err != nil {
				p.emit(id + " err " + err.Error())
				return
			}
			p.emit(id + " ok " + reply)
		}
		if worker == "-" {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				run()
			}()
		} else {
			p.worker(worker) <- run
		}
	}
	p.shutdown()
}

// worker returns the queue of a named worker: its requests run in order on
// a goroutine of its own.
func (p *peer) worker(name string) chan<- func() {
	p.mu.Lock()
	defer p.mu.Unlock()
	q, ok := p.workers[name]
	if !ok {
		q = make(chan func(), 64)
		p.workers[name] = q
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for f := range q {
				f()
			}
		}()
	}
	return q
}

// shutdown stops the chaos loops and closes every client.
func (p *peer) shutdown() {
	p.mu.Lock()
	for _, l := range p.loops {
		l.stop()
	}
	clients := p.clients
	p.clients = map[string]*client{}
	p.mu.Unlock()
	for _, c := range clients {
		c.c.Close()
	}
	p.mu.Lock()
	for _, q := range p.workers {
		close(q)
	}
	p.workers = map[string]chan func(){}
	p.mu.Unlock()
	p.wg.Wait()
}

func positional(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.Contains(a, "=") {
			out = append(out, a)
		}
	}
	return out
}

func options(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		if k, v, ok := strings.Cut(a, "="); ok && k != "" {
			out[k] = v
		}
	}
	return out
}

func arg(pos []string, i int, what string) (string, error) {
	if i >= len(pos) {
		return "", fmt.Errorf("IllegalArgumentException: missing %s", what)
	}
	return pos[i], nil
}

func intOption(opt map[string]string, key string, def int) int {
	if v, ok := opt[key]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

func (p *peer) client(name string) (*client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c, ok := p.clients[name]
	if !ok {
		return nil, fmt.Errorf("IllegalArgumentException: no client %s", name)
	}
	return c, nil
}

func (p *peer) lock(ref string) (*lock, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name, _, _ := strings.Cut(ref, ".")
	l, ok := p.locks[name]
	if !ok {
		return nil, fmt.Errorf("IllegalArgumentException: no lock %s", ref)
	}
	return l, nil
}

// handle runs one request and returns its reply text.
func (p *peer) handle(worker, verb string, args []string) (string, error) {
	pos, opt := positional(args), options(args)
	switch verb {
	case "ping":
		return "pong", nil
	case "client":
		return p.newClient(pos, opt)
	case "session", "remote", "close-client", "linger", "inside", "holdings":
		name, err := arg(pos, 0, "client")
		if err != nil {
			return "", err
		}
		c, err := p.client(name)
		if err != nil {
			return "", err
		}
		switch verb {
		case "session":
			return strconv.FormatInt(c.c.SessionID(), 10), nil
		case "remote":
			c.mu.Lock()
			defer c.mu.Unlock()
			if addr := c.dials.Current(); c.c.State().IsConnected() && addr != "" {
				return addr, nil
			}
			return "-", nil
		case "close-client":
			p.mu.Lock()
			delete(p.clients, name)
			p.mu.Unlock()
			c.c.Close()
			return "closed", nil
		case "linger":
			on, err := arg(pos, 1, "on|off")
			if err != nil {
				return "", err
			}
			c.mu.Lock()
			c.linger = on == "on"
			c.mu.Unlock()
			return "linger " + on, nil
		case "holdings":
			c.mu.Lock()
			defer c.mu.Unlock()
			var ids []string
			for h := range c.holdings {
				if h.inside() {
					ids = append(ids, h.describe())
				}
			}
			sort.Strings(ids)
			return strings.Join(ids, " "), nil
		default: // inside
			c.mu.Lock()
			defer c.mu.Unlock()
			n := 0
			for h := range c.holdings {
				if h.inside() {
					n++
				}
			}
			return strconv.Itoa(n), nil
		}
	case "mutex", "rwlock", "semaphore":
		return p.newLock(verb, pos)
	case "chaos":
		ref, err := arg(pos, 0, "lock")
		if err != nil {
			return "", err
		}
		return p.chaos(ref, opt)
	case "counts":
		p.mu.Lock()
		defer p.mu.Unlock()
		var counts []string
		for label, l := range p.loops {
			what := ":holding"
			if l.acquiring.Load() { // first: the count is then at least as new
				what = ":acquiring"
			}
			counts = append(counts, label+"="+strconv.FormatInt(l.acquisitions.Load(), 10)+what)
		}
		sort.Strings(counts)
		return strings.Join(counts, " "), nil
	case "elect":
		name, err := arg(pos, 0, "client")
		if err != nil {
			return "", err
		}
		return p.elect(name, opt)
	case "chaos-stop":
		label, err := arg(pos, 0, "label")
		if err != nil {
			return "", err
		}
		p.mu.Lock()
		l, ok := p.loops[label]
		p.mu.Unlock()
		if !ok {
			return "", fmt.Errorf("IllegalArgumentException: no chaos loop %s", label)
		}
		l.stop()
		return "stopping", nil
	}
	return "", fmt.Errorf("IllegalArgumentException: unknown verb %s", verb)
}

// newClient opens a client, waits for its session and returns its id.
func (p *peer) newClient(pos []string, opt map[string]string) (string, error) {
	name, err := arg(pos, 0, "name")
	if err != nil {
		return "", err
	}
	connect, err := arg(pos, 1, "connect string")
	if err != nil {
		return "", err
	}
	session := time.Duration(intOption(opt, "session", 20000)) * time.Millisecond
	connection := time.Duration(intOption(opt, "connection", 10000)) * time.Millisecond
	maxSleep := time.Duration(intOption(opt, "maxsleep", 1<<31-1)) * time.Millisecond
	stamp := opt["stamp"] == "true"
	c := &client{name: name, holdings: map[*holding]struct{}{}}
	fc, err := framework.New(connect, retry.NewExponentialBackoff(20*time.Millisecond, 10, retry.WithMaxSleep(maxSleep)),
		framework.WithSessionTimeout(session), framework.WithConnectionTimeout(connection),
		framework.WithDialer(c.dials.Dial),
		framework.WithListener(state.ListenerFunc(func(s state.ConnectionState) {
			at := time.Now().UnixMicro()
			c.stateChanged(s, at)
			line := "! state " + name + " " + s.String()
			if stamp {
				line += " " + strconv.FormatInt(at, 10)
			}
			p.emit(line)
		})))
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fc.BlockUntilConnected(ctx); err != nil {
		fc.Close()
		return "", fmt.Errorf("IllegalStateException: no connection to %s: %w", connect, err)
	}
	c.c = fc
	p.mu.Lock()
	p.clients[name] = c
	p.mu.Unlock()
	return strconv.FormatInt(fc.SessionID(), 10), nil
}

func (p *peer) newLock(verb string, pos []string) (string, error) {
	name, err := arg(pos, 0, "lock")
	if err != nil {
		return "", err
	}
	cname, err := arg(pos, 1, "client")
	if err != nil {
		return "", err
	}
	path, err := arg(pos, 2, "path")
	if err != nil {
		return "", err
	}
	c, err := p.client(cname)
	if err != nil {
		return "", err
	}
	l := &lock{client: c}
	switch verb {
	case "mutex":
		l.mutex, err = recipes.NewInterProcessMutex(c.c, path)
	case "rwlock":
		l.rw, err = recipes.NewInterProcessReadWriteLock(c.c, path)
	default:
		var max string
		if max, err = arg(pos, 3, "maxLeases"); err == nil {
			n, _ := strconv.Atoi(max)
			l.sem, err = recipes.NewInterProcessSemaphoreV2(c.c, path, n)
		}
	}
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.locks[name] = l
	p.mu.Unlock()
	return "made", nil
}

// stateChanged tells the client's holdings at SUSPENDED or LOST, as the
// Java peer's tracker does; a holding is also told by its own Done.
func (c *client) stateChanged(s state.ConnectionState, at int64) {
	if s != state.Suspended && s != state.Lost {
		return
	}
	c.mu.Lock()
	hs := make([]*holding, 0, len(c.holdings))
	for h := range c.holdings {
		hs = append(hs, h)
	}
	c.mu.Unlock()
	for _, h := range hs {
		h.tell(at, s.String())
	}
}

func (c *client) lingering() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.linger
}

func (c *client) track(h *holding, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.holdings[h] = struct{}{}
	} else {
		delete(c.holdings, h)
	}
}

var errNoOwner = errors.New("IllegalArgumentException: no such lock half")
