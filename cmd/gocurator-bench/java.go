package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/jvm"
)

//go:embed java/CuratorBench.java
var curatorBenchSource []byte

// javaRunner runs CuratorBench, compiled once (internal/jvm caches the
// classes).
type javaRunner struct {
	java      string
	classpath string

	// versions, from the first run
	javaVersion, curatorVersion, zkClientVersion string
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

// javaRep is one repetition's JSON line from CuratorBench.
type javaRep struct {
	LatNs        []int64 `json:"latNs"`
	SessionLatNs []int64 `json:"sessionLatNs"`
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
func (j *javaRunner) start(ctx context.Context, setupLimit, repLimit time.Duration, scenario, connect string, args ...string) (*javaProc, error) {
	argv := []string{"-Xmx1g", "-Xss512k", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dzookeeper.jmx.log4j.disable=true", "-cp", j.classpath, "CuratorBench", scenario, connect}
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

func (p *javaProc) rep(ctx context.Context) (repResult, error) { return p.ask(ctx, "rep") }

// repAt runs a repetition of scenario 2 with the first n of the JVM's
// sessions.
func (p *javaProc) repAt(ctx context.Context, n int) (repResult, error) {
	return p.ask(ctx, fmt.Sprintf("rep %d", n))
}

// ask sends the JVM one line that asks for a repetition, and returns the
// repetition's result.
func (p *javaProc) ask(ctx context.Context, line string) (repResult, error) {
	if _, err := io.WriteString(p.proc.Stdin(), line+"\n"); err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: %w; stderr: %s", err, tail(p.proc.Stderr(), 1500))
	}
	answer, err := p.next(ctx, p.limit)
	if err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: %w; stderr: %s", err, tail(p.proc.Stderr(), 1500))
	}
	var r javaRep
	if err := json.Unmarshal([]byte(answer), &r); err != nil {
		return repResult{}, fmt.Errorf("CuratorBench: bad output %q: %v", tail(answer, 200), err)
	}
	res := repResult{packets: r.Packets, ops: r.Ops, elapsed: time.Duration(r.ElapsedNs), drain: time.Duration(r.DrainNs),
		acquisitions: r.Acquisitions, participants: r.Participants, wrote: r.Writers}
	res.lat, res.latSession = durations(r.LatNs), durations(r.SessionLatNs)
	return res, nil
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
				if json.Unmarshal([]byte(line), &v) == nil && v.Java != "" && p.j.javaVersion == "" {
					p.j.javaVersion, p.j.curatorVersion, p.j.zkClientVersion = v.Java, v.Curator, v.ZKClient
				}
			case <-deadline.C:
				break read
			}
		}
	}
	p.proc.Kill()
}

// durations converts nanoseconds; nil for none.
func durations(ns []int64) []time.Duration {
	var out []time.Duration
	for _, n := range ns {
		out = append(out, time.Duration(n))
	}
	return out
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
