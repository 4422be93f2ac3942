package main

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

//go:embed java/CuratorBench.java
var curatorBenchSource []byte

// javaJars is the classpath of the Java side: Debian's Curator recipes jar
// (its manifest's Class-Path brings the framework, client, ZooKeeper and
// Guava) and slf4j's no-op binding to keep the JVM quiet.
var javaJars = []string{"/usr/share/java/curator-recipes.jar", "/usr/share/java/slf4j-nop.jar"}

// javaRunner runs CuratorBench, compiled once into a temporary directory.
type javaRunner struct {
	java      string
	classpath string
	dir       string

	// versions, from the first run
	javaVersion, curatorVersion, zkClientVersion string
}

// newJavaRunner compiles CuratorBench with javac. It returns an error that
// says what is missing when Java, javac or the Curator jars are absent.
func newJavaRunner(ctx context.Context) (*javaRunner, error) {
	javac, err := exec.LookPath("javac")
	if err != nil {
		return nil, errors.New("javac not found (apt-get install default-jdk-headless)")
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("java not found")
	}
	for _, j := range javaJars[:1] {
		if _, err := os.Stat(j); err != nil {
			return nil, fmt.Errorf("%s not found (apt-get install libcurator-recipes-java)", j)
		}
	}
	cp := javaJars[0]
	if _, err := os.Stat(javaJars[1]); err == nil {
		cp += ":" + javaJars[1]
	}
	dir, err := os.MkdirTemp("", "gocurator-bench-java-")
	if err != nil {
		return nil, err
	}
	src := filepath.Join(dir, "CuratorBench.java")
	if err := os.WriteFile(src, curatorBenchSource, 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, javac, "-nowarn", "-implicit:none", "-proc:none", "-d", dir, "-cp", cp, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("javac CuratorBench.java: %v\n%s", err, out)
	}
	return &javaRunner{java: java, classpath: dir + ":" + cp, dir: dir}, nil
}

func (j *javaRunner) close() { os.RemoveAll(j.dir) }

// javaRep is one repetition's JSON line from CuratorBench.
type javaRep struct {
	LatNs        []int64 `json:"latNs"`
	Packets      int64   `json:"packets"`
	Ops          int64   `json:"ops"`
	ElapsedNs    int64   `json:"elapsedNs"`
	DrainNs      int64   `json:"drainNs"`
	Acquisitions int     `json:"acquisitions"`
	Participants int     `json:"participants"`
	Writers      int     `json:"writers"`
}

// javaVersions is CuratorBench's last JSON line.
type javaVersions struct {
	Java     string `json:"java"`
	Curator  string `json:"curator"`
	ZKClient string `json:"zkClient"`
}

// javaProc is one CuratorBench JVM, set up and warmed up for a scenario.
// It runs in a process group of its own, dies with this process
// (parent-death signal), is killed by its pid when it does not answer in
// time, and is always waited for, so no zombie remains.
type javaProc struct {
	j      *javaRunner
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string   // stdout, line by line; closed at EOF
	exited chan struct{} // closed once the JVM has been waited for
	stderr lockedBuffer
	limit  time.Duration // the longest a repetition may take
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start starts a JVM for scenario and waits until it has set up and warmed
// up ("ready").
func (j *javaRunner) start(ctx context.Context, setupLimit, repLimit time.Duration, scenario, connect string, args ...string) (*javaProc, error) {
	argv := []string{"-Xmx1g", "-Xss512k", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dzookeeper.jmx.log4j.disable=true", "-cp", j.classpath, "CuratorBench", scenario, connect}
	p := &javaProc{j: j, lines: make(chan string, 16), exited: make(chan struct{}), limit: repLimit}
	p.cmd = exec.Command(j.java, append(argv, args...)...)
	p.cmd.Stderr = &p.stderr
	p.cmd.SysProcAttr = sysProcAttr()
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting java: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		_ = p.cmd.Wait() // after the last read, as os/exec asks
		close(p.exited)
	}()
	line, err := p.next(ctx, setupLimit)
	if err == nil && line != "ready" {
		err = fmt.Errorf("unexpected output %q", line)
	}
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("CuratorBench %s did not get ready: %w; stderr: %s", scenario, err, tail(p.stderr.String(), 1500))
	}
	return p, nil
}

// next returns the JVM's next line of output.
func (p *javaProc) next(ctx context.Context, limit time.Duration) (string, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case line, ok := <-p.lines:
		if !ok {
			return "", errors.New("the JVM exited")
		}
		return line, nil
	case <-t.C:
		return "", fmt.Errorf("no answer within %s", limit)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// kill kills the JVM's process group (by its pid) and waits for it.
func (p *javaProc) kill() {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
		return
	default:
	}
	_ = killGroup(p.cmd.Process.Pid)
	go func() { // drain stdout so that the reader reaches EOF
		for range p.lines {
		}
	}()
	<-p.exited
}

func (p *javaProc) rep(ctx context.Context) (repResult, error) {
	if _, err := io.WriteString(p.stdin, "rep\n"); err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: %w; stderr: %s", err, tail(p.stderr.String(), 1500))
	}
	line, err := p.next(ctx, p.limit)
	if err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: %w; stderr: %s", err, tail(p.stderr.String(), 1500))
	}
	var r javaRep
	if err := json.Unmarshal([]byte(line), &r); err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: bad output %q: %v", tail(line, 200), err)
	}
	res := repResult{packets: r.Packets, ops: r.Ops, elapsed: time.Duration(r.ElapsedNs), drain: time.Duration(r.DrainNs),
		acquisitions: r.Acquisitions, participants: r.Participants, wrote: r.Writers}
	for _, ns := range r.LatNs {
		res.lat = append(res.lat, time.Duration(ns))
	}
	return res, nil
}

// close asks the JVM to quit, keeps its versions, and kills it if it does
// not exit in time.
func (p *javaProc) close() {
	if _, err := io.WriteString(p.stdin, "quit\n"); err == nil {
		_ = p.stdin.Close()
		deadline := time.NewTimer(20 * time.Second)
		defer deadline.Stop()
	read:
		for {
			select {
			case line, ok := <-p.lines:
				if !ok {
					break read
				}
				var v javaVersions
				if json.Unmarshal([]byte(line), &v) == nil && v.Java != "" && p.j.javaVersion == "" {
					p.j.javaVersion, p.j.curatorVersion, p.j.zkClientVersion = v.Java, v.Curator, v.ZKClient
				}
			case <-deadline.C:
				break read
			}
		}
	}
	p.kill()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

func (e *env) javaArgs(scenario int, extra ...string) []string {
	return append([]string{
		"path=" + e.path(scenario, "curator"),
		fmt.Sprintf("warmupMs=%d", e.c.WarmJava.Milliseconds()),
	}, extra...)
}

func (e *env) durationArg() string { return fmt.Sprintf("durationMs=%d", e.c.Duration.Milliseconds()) }

// startJava starts the Curator side of a scenario as a contender.
func (e *env) startJava(ctx context.Context, scenario string, args ...string) (contender, error) {
	if e.java == nil {
		return nil, fmt.Errorf("%w: Java is off (%s)", errSkipped, e.javaOff)
	}
	return e.java.start(ctx, 3*time.Minute+e.c.WarmJava, 2*time.Minute+e.c.Duration, scenario, e.servers, args...)
}

func isNoNode(err error) bool { return errors.Is(err, zk.ErrNoNode) }
