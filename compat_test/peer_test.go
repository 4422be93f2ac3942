package compat_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// peer is one JVM running CuratorPeer, spoken to over its stdin and stdout
// (see the protocol at the top of internal/curatorpeer/CuratorPeer.java). Its stderr (Curator's
// and ZooKeeper's warnings) goes to a log file that is shown when the test
// fails. It is stopped, by its own pid, when the test ends.
type peer struct {
	t          testing.TB
	name       string
	cmd        *exec.Cmd
	stdin      *os.File // our end of the JVM's stdin
	logPath    string
	readerDone chan struct{} // closed when stdout is at EOF
	waitDone   chan struct{} // closed when the JVM has been waited for

	mu      sync.Mutex // guards what follows, and writes to stdin
	nextID  int
	pending map[int]*call
	events  []string
	evCh    chan struct{} // closed and replaced at each event
	dead    error         // why the peer stopped answering
}

// call is one request to a peer.
type call struct {
	desc  string
	done  chan struct{}
	reply string
	err   error
}

// startPeer starts a JVM running CuratorPeer and waits until it reads
// requests.
func startPeer(t testing.TB, name string) *peer {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the JVM has its own descriptor
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(javaBin,
		"-Xmx128m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-cp", peerClasspath, "CuratorPeer")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, logFile
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		t.Fatalf("start Java peer: %v", err)
	}
	p := &peer{
		t: t, name: name, cmd: cmd, stdin: inW, logPath: logPath,
		readerDone: make(chan struct{}), waitDone: make(chan struct{}),
		pending: map[int]*call{}, evCh: make(chan struct{}),
	}
	go p.read(outR)
	go func() {
		<-p.readerDone
		_ = cmd.Wait()
		close(p.waitDone)
	}()
	t.Cleanup(p.stop)
	ctx, cancel := context.WithTimeout(context.Background(), testutil.Timeout)
	defer cancel()
	if err := p.waitEvent(ctx, "ready"); err != nil {
		t.Fatalf("Java peer %s did not start: %v", name, err)
	}
	return p
}

// read dispatches the peer's output lines until EOF.
func (p *peer) read(out *os.File) {
	defer close(p.readerDone)
	defer out.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "! "); ok {
			p.mu.Lock()
			p.events = append(p.events, ev)
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
		p.mu.Unlock()
		if err != nil || c == nil || (status != "ok" && status != "err") {
			p.t.Errorf("peer %s: unexpected output %q", p.name, line)
			continue
		}
		if status == "ok" {
			c.reply = text
		} else {
			c.err = fmt.Errorf("peer %s: %s: %s", p.name, c.desc, text)
		}
		close(c.done)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dead = fmt.Errorf("peer %s exited (see its log %s)", p.name, p.logPath)
	for id, c := range p.pending {
		c.err = p.dead
		close(c.done)
		delete(p.pending, id)
	}
	close(p.evCh)
	p.evCh = make(chan struct{})
}

// send sends a request to run verb on worker (a thread of the peer; "-" for
// any) and returns at once.
func (p *peer) send(worker, verb string, args ...string) *call {
	c := &call{desc: strings.Join(append([]string{worker, verb}, args...), " "), done: make(chan struct{})}
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
	if _, err := fmt.Fprintf(p.stdin, "%d %s\n", id, c.desc); err != nil {
		delete(p.pending, id)
		c.err = fmt.Errorf("peer %s: write %q: %w", p.name, c.desc, err)
		close(c.done)
	}
	return c
}

// wait waits for the reply.
func (c *call) wait(ctx context.Context) (string, error) {
	select {
	case <-c.done:
		return c.reply, c.err
	case <-ctx.Done():
		return "", fmt.Errorf("waiting for %q: %w", c.desc, ctx.Err())
	}
}

// answered reports whether the reply has come.
func (c *call) answered() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// must waits for the reply and fails the test on an error.
func (c *call) must(t testing.TB) string {
	t.Helper()
	r, err := c.wait(testutil.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// do runs a request and returns its reply, failing the test on an error.
func (p *peer) do(t testing.TB, worker, verb string, args ...string) string {
	t.Helper()
	return p.send(worker, verb, args...).must(t)
}

// waitEvent waits until the peer has printed the event ev (ever).
func (p *peer) waitEvent(ctx context.Context, ev string) error {
	for {
		p.mu.Lock()
		for _, e := range p.events {
			if e == ev {
				p.mu.Unlock()
				return nil
			}
		}
		ch, dead := p.evCh, p.dead
		p.mu.Unlock()
		if dead != nil {
			return fmt.Errorf("waiting for event %q: %w", ev, dead)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for event %q: %w; events so far %q", ev, ctx.Err(), p.eventList())
		}
	}
}

func (p *peer) mustEvent(t testing.TB, ev string) {
	t.Helper()
	if err := p.waitEvent(testutil.Context(t), ev); err != nil {
		t.Fatal(err)
	}
}

func (p *peer) eventList() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.events...)
}

// hasEvent reports whether the peer has printed ev.
func (p *peer) hasEvent(ev string) bool {
	for _, e := range p.eventList() {
		if e == ev {
			return true
		}
	}
	return false
}

// stop asks the JVM to quit, and kills it (by its pid) if it has not exited
// within a few seconds; it always waits for it.
func (p *peer) stop() {
	p.mu.Lock()
	if p.dead == nil {
		fmt.Fprintf(p.stdin, "0 - quit\n")
	}
	p.mu.Unlock()
	p.stdin.Close()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	select {
	case <-p.waitDone:
	case <-timer.C:
		p.t.Errorf("peer %s (pid %d) did not quit; killing it", p.name, p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		<-p.waitDone
	}
	if p.t.Failed() {
		p.t.Logf("peer %s log (%s):\n%s", p.name, p.logPath, tail(p.logPath, 60))
	}
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// javaClient opens a Curator client named name in the peer, connected to
// addr, with options such as "ns=<namespace>", and returns its session id.
func (p *peer) client(t testing.TB, name, addr string, opts ...string) int64 {
	t.Helper()
	r := p.do(t, "-", "client", append([]string{name, addr}, opts...)...)
	sid, err := strconv.ParseInt(r, 10, 64)
	if err != nil {
		t.Fatalf("session id %q: %v", r, err)
	}
	return sid
}

// sessionID asks the peer for a client's current session id.
func (p *peer) sessionID(t testing.TB, name string) int64 {
	t.Helper()
	r := p.do(t, "-", "session", name)
	sid, err := strconv.ParseInt(r, 10, 64)
	if err != nil {
		t.Fatalf("session id %q: %v", r, err)
	}
	return sid
}

// acquired interprets the reply to "acquire".
func acquired(t testing.TB, reply string) bool {
	t.Helper()
	switch reply {
	case "true":
		return true
	case "false":
		return false
	}
	t.Fatalf("acquire replied %q", reply)
	return false
}

// participants runs "participants" and returns the nodes.
func (p *peer) participants(t testing.TB, lock string) []string {
	t.Helper()
	f := strings.Fields(p.do(t, "-", "participants", lock))
	n, err := strconv.Atoi(f[0])
	if err != nil || n != len(f)-1 {
		t.Fatalf("participants reply %q", f)
	}
	return f[1:]
}

// loopViolations interprets the reply to "loop".
func loopViolations(reply string) (int, error) {
	v, ok := strings.CutPrefix(reply, "violations=")
	if !ok {
		return 0, errors.New("loop replied " + reply)
	}
	return strconv.Atoi(v)
}
