// Package curatorpeer runs CuratorPeer.java, a JVM that runs Apache Curator
// 5.4's lock recipes on request, and speaks its line protocol (described at
// the top of CuratorPeer.java): requests on its stdin, replies and events on
// its stdout. The compatibility tests and the demo use it to put live Java
// Curator contenders next to Go ones.
//
// The peer is compiled with javac against Debian's Curator jars (or
// $CURATOR_CLASSPATH) the first time it is needed, and the classes are
// cached on disk (see internal/jvm).
package curatorpeer

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gocurator/curator/internal/jvm"
)

//go:embed CuratorPeer.java
var source []byte

// quitGrace is how long Close waits for the JVM to close its clients and
// exit before it kills it.
const quitGrace = 10 * time.Second

// prepared is what Prepare found, once it succeeded.
var prepared struct {
	mu        sync.Mutex
	java      string
	classpath string
}

// Prepare finds java and Curator's jars and compiles the peer, once per
// process (and once per machine: javac's output is cached). Start calls it;
// call it first to fail early, with an error that says what to install.
func Prepare(ctx context.Context) error {
	_, _, err := prepare(ctx)
	return err
}

func prepare(ctx context.Context) (java, classpath string, err error) {
	prepared.mu.Lock()
	defer prepared.mu.Unlock()
	if prepared.java != "" {
		return prepared.java, prepared.classpath, nil
	}
	if java, err = jvm.Tool("java"); err != nil {
		return "", "", err
	}
	cp, err := jvm.CuratorClasspath()
	if err != nil {
		return "", "", err
	}
	if classpath, err = jvm.Compile(ctx, "CuratorPeer", source, cp); err != nil {
		return "", "", err
	}
	prepared.java, prepared.classpath = java, classpath
	return java, classpath, nil
}

// Options configure a peer.
type Options struct {
	// LogPath, if set, names a file (created or truncated) that receives
	// the JVM's stderr: Curator's and ZooKeeper's log. Empty keeps the last
	// 64 KiB in memory. Either way Log returns its end.
	LogPath string
	// LogLevel is the level of that log (slf4j-simple's: trace, debug,
	// info, warn, error); empty means warn.
	LogLevel string
	// Wrapper, if set, is a command Start runs the JVM under: Wrapper, then
	// the java command line (for example `ip netns exec <namespace>`, for
	// a peer in a network namespace of its own). It must exec the JVM in
	// its own process, as ip(8) does, so that Pid, Pause and Kill reach it.
	Wrapper []string
}

// Event is one event line of the peer ("! <text>"), with the local time it
// was read.
type Event struct {
	// Time is when the line was read, by the local clock.
	Time time.Time
	// Text is the line without its "! ": "ready", "state <client>
	// <ConnectionState>", "revoked <lock>", "released <lock>".
	Text string
}

// Peer is one JVM running CuratorPeer.
type Peer struct {
	name       string
	proc       *jvm.Process
	logPath    string
	readerDone chan struct{} // closed when the JVM's output has ended

	mu         sync.Mutex // guards what follows, and writes to the JVM's stdin
	nextID     int
	pending    map[int]*Call
	events     []Event
	evCh       chan struct{} // closed and replaced at each event
	dead       error         // why the peer stopped answering
	unexpected []string      // output lines that are neither replies nor events

	closeOnce sync.Once
	closeErr  error
}

// Call is one request to a peer.
type Call struct {
	req   string
	done  chan struct{}
	reply string
	err   error
}

// Start starts a JVM running CuratorPeer, named name in errors, and waits
// (as long as ctx allows) until it reads requests. Close it when done.
func Start(ctx context.Context, name string, opts Options) (*Peer, error) {
	java, classpath, err := prepare(ctx)
	if err != nil {
		return nil, err
	}
	level := opts.LogLevel
	if level == "" {
		level = "warn"
	}
	args := []string{java,
		"-Xmx128m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=" + level,
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", classpath, "CuratorPeer"}
	args = append(append([]string(nil), opts.Wrapper...), args...)
	return StartProcess(ctx, name, exec.Command(args[0], args[1:]...), opts)
}

// StartProcess starts cmd, a program that speaks the peer's line protocol
// (CuratorPeer, or the chaos suite's Go contender process), named name in
// errors, and waits (as long as ctx allows) until it reads requests. Close
// it when done. cmd's Stdin and Stdout must be nil; its Stderr goes to
// opts.LogPath when one is given.
func StartProcess(ctx context.Context, name string, cmd *exec.Cmd, opts Options) (*Peer, error) {
	if opts.LogPath != "" {
		logFile, err := os.Create(opts.LogPath)
		if err != nil {
			return nil, err
		}
		defer logFile.Close() // the process has its own descriptor
		cmd.Stderr = logFile
	}
	proc, err := jvm.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", name, err)
	}
	p := &Peer{name: name, proc: proc, logPath: opts.LogPath, readerDone: make(chan struct{}),
		pending: map[int]*Call{}, evCh: make(chan struct{})}
	go p.read()
	if err := p.WaitEvent(ctx, "ready"); err != nil {
		err = fmt.Errorf("peer %s did not start: %w", name, err)
		if cerr := p.Close(); cerr != nil {
			err = fmt.Errorf("%w; %v", err, cerr)
		}
		return nil, fmt.Errorf("%w\n%s", err, p.Log(20))
	}
	return p, nil
}

// read dispatches the peer's output lines until they end.
func (p *Peer) read() {
	defer close(p.readerDone)
	for line := range p.proc.Lines() {
		if ev, ok := strings.CutPrefix(line, "! "); ok {
			p.mu.Lock()
			p.events = append(p.events, Event{Time: time.Now(), Text: ev})
			close(p.evCh)
			p.evCh = make(chan struct{})
			p.mu.Unlock()
			continue
		}
		idText, rest, _ := strings.Cut(line, " ")
		status, text, _ := strings.Cut(rest, " ")
		id, err := strconv.Atoi(idText)
		if id == 0 && err == nil { // the reply to quit
			continue
		}
		p.mu.Lock()
		c := p.pending[id]
		delete(p.pending, id)
		if err != nil || c == nil || (status != "ok" && status != "err") {
			p.unexpected = append(p.unexpected, line)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		if status == "ok" {
			c.reply = text
		} else {
			c.err = fmt.Errorf("peer %s: %s: %s", p.name, c.req, text)
		}
		close(c.done)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	where := "see its log " + p.logPath
	if p.logPath == "" {
		where = "its log ends: " + p.Log(5)
	}
	p.dead = fmt.Errorf("peer %s exited (%s)", p.name, where)
	for id, c := range p.pending {
		c.err = p.dead
		close(c.done)
		delete(p.pending, id)
	}
	close(p.evCh)
	p.evCh = make(chan struct{})
}

// Name returns the name given to Start.
func (p *Peer) Name() string { return p.name }

// Pid returns the process id.
func (p *Peer) Pid() int { return p.proc.Pid() }

// LogPath returns Options.LogPath.
func (p *Peer) LogPath() string { return p.logPath }

// Log returns the last n lines of the JVM's stderr.
func (p *Peer) Log(n int) string {
	text := p.proc.Stderr()
	if p.logPath != "" {
		b, err := os.ReadFile(p.logPath)
		if err != nil {
			return err.Error()
		}
		text = string(b)
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Send sends a request to run verb on worker (a thread of the peer; "-"
// for any) and returns at once. No argument may contain a space.
func (p *Peer) Send(worker, verb string, args ...string) *Call {
	c := &Call{req: strings.Join(append([]string{worker, verb}, args...), " "), done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		c.err = p.dead
		close(c.done)
		return c
	}
	p.nextID++
	id := p.nextID
	p.pending[id] = c
	if _, err := fmt.Fprintf(p.proc.Stdin(), "%d %s\n", id, c.req); err != nil {
		delete(p.pending, id)
		c.err = fmt.Errorf("peer %s: write %q: %w", p.name, c.req, err)
		close(c.done)
	}
	return c
}

// Call sends a request and waits for its reply.
func (p *Peer) Call(ctx context.Context, worker, verb string, args ...string) (string, error) {
	return p.Send(worker, verb, args...).Wait(ctx)
}

// Request returns the request as sent, without its id: "<worker> <verb> <args>".
func (c *Call) Request() string { return c.req }

// Done returns a channel that is closed when the reply has come (or the
// peer has gone).
func (c *Call) Done() <-chan struct{} { return c.done }

// Answered reports whether the reply has come.
func (c *Call) Answered() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Result returns the reply's text, or its error ("err" replies, a peer that
// exited). It is valid once Done is closed.
func (c *Call) Result() (string, error) { return c.reply, c.err }

// Wait waits for the reply and returns Result, or ctx's error.
func (c *Call) Wait(ctx context.Context) (string, error) {
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for %q: %w", c.req, ctx.Err())
	}
}

// WaitEvent waits until the peer has printed the event text (now or
// earlier).
func (p *Peer) WaitEvent(ctx context.Context, text string) error {
	for {
		p.mu.Lock()
		for _, e := range p.events {
			if e.Text == text {
				p.mu.Unlock()
				return nil
			}
		}
		ch, dead := p.evCh, p.dead
		p.mu.Unlock()
		if dead != nil {
			return fmt.Errorf("waiting for event %q: %w", text, dead)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for event %q: %w; events so far %q", text, ctx.Err(), p.EventTexts())
		}
	}
}

// NextEvent returns event number i (from 0, in the order they came),
// waiting for it as long as ctx allows: a loop over i follows every event
// as it arrives.
func (p *Peer) NextEvent(ctx context.Context, i int) (Event, error) {
	for {
		p.mu.Lock()
		if i < len(p.events) {
			e := p.events[i]
			p.mu.Unlock()
			return e, nil
		}
		ch, dead := p.evCh, p.dead
		p.mu.Unlock()
		if dead != nil {
			return Event{}, fmt.Errorf("waiting for event %d: %w", i, dead)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return Event{}, fmt.Errorf("waiting for event %d: %w", i, ctx.Err())
		}
	}
}

// Events returns a copy of every event so far, in order.
func (p *Peer) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Event(nil), p.events...)
}

// EventTexts returns the text of every event so far, in order.
func (p *Peer) EventTexts() []string {
	var out []string
	for _, e := range p.Events() {
		out = append(out, e.Text)
	}
	return out
}

// HasEvent reports whether the peer has printed the event text.
func (p *Peer) HasEvent(text string) bool {
	for _, e := range p.Events() {
		if e.Text == text {
			return true
		}
	}
	return false
}

// Close asks the JVM to quit (its clients close their sessions), kills it
// by its pid if it has not exited within ten seconds, and waits for it. The
// error says whether it had to be killed and what output the protocol did
// not expect. Close is idempotent.
func (p *Peer) Close() error {
	p.closeOnce.Do(func() {
		_ = p.Resume() // a paused process would neither read quit nor exit
		p.mu.Lock()
		if p.dead == nil {
			fmt.Fprintf(p.proc.Stdin(), "0 - quit\n")
		}
		p.mu.Unlock()
		var errs []error
		if err := p.proc.Stop(nil, quitGrace); err != nil {
			errs = append(errs, fmt.Errorf("peer %s: %w", p.name, err))
		}
		<-p.readerDone
		p.mu.Lock()
		for _, line := range p.unexpected {
			errs = append(errs, fmt.Errorf("peer %s: unexpected output %q", p.name, line))
		}
		p.mu.Unlock()
		p.closeErr = errors.Join(errs...)
	})
	return p.closeErr
}

// Kill kills the JVM at once, like a crash (SIGKILL to its pid): its
// clients do not close their sessions, which the server expires in their
// time. It waits for the JVM; a later Close does nothing.
func (p *Peer) Kill() {
	p.closeOnce.Do(func() {
		p.proc.Kill()
		<-p.readerDone
	})
}

// Client opens a Curator client named name in the peer, connected to
// connect, with options such as "ns=<namespace>" or "session=<ms>", and
// returns its session id.
func (p *Peer) Client(ctx context.Context, name, connect string, opts ...string) (int64, error) {
	r, err := p.Call(ctx, "-", "client", append([]string{name, connect}, opts...)...)
	if err != nil {
		return 0, err
	}
	return parseSession(r)
}

// SessionID returns the current session id of the peer's client name.
func (p *Peer) SessionID(ctx context.Context, name string) (int64, error) {
	r, err := p.Call(ctx, "-", "session", name)
	if err != nil {
		return 0, err
	}
	return parseSession(r)
}

func parseSession(reply string) (int64, error) {
	sid, err := strconv.ParseInt(reply, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("session id %q: %w", reply, err)
	}
	return sid, nil
}

// Participants returns the participant nodes of lock, as Curator's
// getParticipantNodes lists them.
func (p *Peer) Participants(ctx context.Context, lock string) ([]string, error) {
	r, err := p.Call(ctx, "-", "participants", lock)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(r)
	if len(f) == 0 {
		return nil, fmt.Errorf("participants reply %q", r)
	}
	if n, err := strconv.Atoi(f[0]); err != nil || n != len(f)-1 {
		return nil, fmt.Errorf("participants reply %q", r)
	}
	return f[1:], nil
}

// GroupMembers returns the group as the peer's GroupMember name sees it
// (getCurrentMembers): each member's id with its data as text ("-" for
// none).
func (p *Peer) GroupMembers(ctx context.Context, name string) (map[string]string, error) {
	r, err := p.Call(ctx, "-", "group-members", name)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(r)
	if len(f) == 0 {
		return nil, fmt.Errorf("group-members reply %q", r)
	}
	if n, err := strconv.Atoi(f[0]); err != nil || n != len(f)-1 {
		return nil, fmt.Errorf("group-members reply %q", r)
	}
	members := make(map[string]string, len(f)-1)
	for _, m := range f[1:] {
		id, data, ok := strings.Cut(m, "=")
		if !ok {
			return nil, fmt.Errorf("group-members reply %q", r)
		}
		members[id] = data
	}
	return members, nil
}

// Acquired interprets the reply to "acquire": whether the lock was acquired.
func Acquired(reply string) (bool, error) {
	switch reply {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("acquire replied %q", reply)
}
