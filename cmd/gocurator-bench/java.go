package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"time"

	"github.com/gocurator/curator/internal/jvm"
)

//go:embed java/CuratorBench.java
var curatorBenchSource []byte

// javaRunner runs CuratorBench, compiled once (internal/jvm caches the
// classes).
type javaRunner struct {
	java      string
	classpath string
	versions  javaVersions // from the first JVM that quits
}

// newJavaRunner compiles CuratorBench with javac against Curator's jars. It
// returns an error that says what to install when Java, javac or the
// Curator jars are absent.
func newJavaRunner(ctx context.Context) (*javaRunner, error) {
	java, err := jvm.Tool("java")
	if err != nil {
		return nil, err
	}
	cp, err := jvm.CuratorClasspath()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if cp, err = jvm.Compile(cctx, "CuratorBench", curatorBenchSource, cp); err != nil {
		return nil, err
	}
	return &javaRunner{java: java, classpath: cp}, nil
}

// javaRep is a timed repetition's JSON line from CuratorBench.
type javaRep struct {
	Ops     int64           `json:"ops"`
	Elapsed time.Duration   `json:"elapsedNs"`
	Lat     []time.Duration `json:"latNs"`
}

// javaVersions is CuratorBench's last JSON line.
type javaVersions struct {
	Java     string `json:"java"`
	Curator  string `json:"curator"`
	ZKClient string `json:"zkClient"`
}

// javaProc is one CuratorBench JVM, set up and warmed up for a scenario
// (see jvm.Process: its own process group, dies with this process, killed
// by its pid when it does not answer in time, always waited for).
type javaProc struct {
	j     *javaRunner
	proc  *jvm.Process
	limit time.Duration // the longest a repetition may take
}

// start starts a JVM for scenario and waits until it has set up and warmed
// up ("ready").
func (j *javaRunner) start(ctx context.Context, setupLimit, repLimit time.Duration, scenario, servers string, args ...string) (*javaProc, error) {
	argv := []string{"-Xmx1g", "-Xss512k", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.jmx.log4j.disable=true", "-cp", j.classpath, "CuratorBench", scenario, servers}
	proc, err := jvm.Start(exec.Command(j.java, append(argv, args...)...))
	if err != nil {
		return nil, err
	}
	p := &javaProc{j: j, proc: proc, limit: repLimit}
	line, err := p.next(ctx, setupLimit)
	if err == nil && line != "ready" {
		err = fmt.Errorf("unexpected output %q", line)
	}
	if err != nil {
		p.proc.Kill()
		return nil, fmt.Errorf("CuratorBench %s did not get ready: %w; stderr: %s", scenario, err, tail(p.proc.Stderr(), 1500))
	}
	return p, nil
}

// next returns the JVM's next line of output.
func (p *javaProc) next(ctx context.Context, limit time.Duration) (string, error) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case line, ok := <-p.proc.Lines():
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

// ask sends the JVM a request and returns its answer.
func (p *javaProc) ask(ctx context.Context, request string) (string, error) {
	_, err := io.WriteString(p.proc.Stdin(), request+"\n")
	answer := ""
	if err == nil {
		answer, err = p.next(ctx, p.limit)
	}
	if err != nil {
		return "", fmt.Errorf("CuratorBench %s: %w; stderr: %s", request, err, tail(p.proc.Stderr(), 1500))
	}
	return answer, nil
}

// cpu is the CPU time the JVM has used.
func (p *javaProc) cpu() (time.Duration, error) {
	answer, err := p.ask(context.Background(), "cpu")
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(answer, 10, 64)
	return time.Duration(ns), err
}

// timedRep asks the JVM for a repetition of a timed loop ("rep", or
// "rep <sessions>": with the first sessions of its sessions).
func (p *javaProc) timedRep(ctx context.Context, sessions int) (repResult, error) {
	req := "rep"
	if sessions > 0 {
		req = fmt.Sprintf("rep %d", sessions)
	}
	answer, err := p.ask(ctx, req)
	if err != nil {
		return repResult{}, err
	}
	var r javaRep
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: bad output %q: %w", tail(answer, 200), err)
	}
	return repResult{ops: r.Ops, elapsed: r.Elapsed, lat: r.Lat}, nil
}

// close asks the JVM to quit, keeps its versions, and kills it if it does
// not exit in time.
func (p *javaProc) close() {
	if _, err := io.WriteString(p.proc.Stdin(), "quit\n"); err == nil {
		deadline := time.NewTimer(20 * time.Second)
		defer deadline.Stop()
	read:
		for {
			select {
			case line, ok := <-p.proc.Lines():
				if !ok {
					break read
				}
				var v javaVersions
				if json.Unmarshal([]byte(line), &v) == nil && v.Java != "" && p.j.versions.Java == "" {
					p.j.versions = v
				}
			case <-deadline.C:
				break read
			}
		}
	}
	p.proc.Kill()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// javaEntry is the Curator side of scenario key: a JVM running
// CuratorBench's scenario with args, on the scenario's lock path, made a
// contender by wrap (nil: a timed loop).
func (e *env) javaEntry(key, scenario string, wrap func(context.Context, *javaProc) (*contender, error), args ...string) entry {
	return entry{impl: nameCurator, setup: func(ctx context.Context) (*contender, error) {
		if e.java == nil {
			return nil, fmt.Errorf("%w: Java is off (%s)", errSkipped, e.javaOff)
		}
		all := append([]string{"path=" + e.path(key, "curator"), fmt.Sprintf("warmupMs=%d", e.c.WarmJava.Milliseconds())}, args...)
		p, err := e.java.start(ctx, 3*time.Minute+e.c.WarmJava, 2*time.Minute+e.c.Duration, scenario, e.servers, all...)
		switch {
		case err != nil:
			return nil, err
		case wrap != nil:
			return wrap(ctx, p)
		}
		return &contender{rep: p.timedRep, close: p.close, cpu: p.cpu}, nil
	}}
}

func (e *env) durationArg() string { return fmt.Sprintf("durationMs=%d", e.c.Duration.Milliseconds()) }
