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
	"strings"
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
	versions  *versions // where each JVM's first line sets Java, Curator and ZKClient
}

// newJavaRunner compiles CuratorBench with javac against Curator's jars,
// for JVMs that tell their versions into v. It returns an error that says
// what to install when Java, javac or the Curator jars are absent.
func newJavaRunner(ctx context.Context, v *versions) (*javaRunner, error) {
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
	return &javaRunner{java: java, classpath: cp, versions: v}, nil
}

// javaProc is one CuratorBench JVM, set up for a scenario
// (see jvm.Process: its own process group, dies with this process, killed
// by its pid when it does not answer in time, always waited for).
type javaProc struct {
	proc  *jvm.Process
	limit time.Duration // the longest a repetition may take
}

// start starts a JVM for scenario with args (key=value: its system
// properties) and waits until it has set up: until its first line, its
// versions.
func (j *javaRunner) start(ctx context.Context, setupLimit, repLimit time.Duration, scenario, servers string, args ...string) (*javaProc, error) {
	argv := []string{"-Xmx1g", "-Xss512k", "-XX:-UsePerfData", "-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dzookeeper.jmx.log4j.disable=true"}
	for _, a := range args {
		argv = append(argv, "-D"+a)
	}
	proc, err := jvm.Start(exec.Command(j.java, append(argv, "-cp", j.classpath, "CuratorBench", scenario, servers)...))
	if err != nil {
		return nil, err
	}
	p := &javaProc{proc: proc, limit: repLimit}
	line, err := p.next(ctx, setupLimit)
	if err == nil {
		if err = json.Unmarshal([]byte(line), j.versions); err == nil && j.versions.Java == "" {
			err = fmt.Errorf("unexpected output %q", line)
		}
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

// askNs sends the JVM a request whose answer is nanoseconds.
func (p *javaProc) askNs(ctx context.Context, request string) (time.Duration, error) {
	answer, err := p.ask(ctx, request)
	if err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(answer, 10, 64)
	return time.Duration(ns), err
}

// cpu is the CPU time the JVM has used.
func (p *javaProc) cpu() (time.Duration, error) { return p.askNs(context.Background(), "cpu") }

// timedRep asks the JVM for a repetition of its timed loop ("rep <n>":
// with its first n threads, all for 0), which it answers with the
// nanoseconds of the repetition and of each cycle.
func (p *javaProc) timedRep(ctx context.Context, n int) (repResult, error) {
	answer, err := p.ask(ctx, fmt.Sprintf("rep %d", n))
	if err != nil {
		return repResult{}, err
	}
	var ns []time.Duration
	for _, f := range strings.Fields(answer) {
		x, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return repResult{}, fmt.Errorf("CuratorBench: bad output %q: %w", tail(answer, 200), err)
		}
		ns = append(ns, time.Duration(x))
	}
	if len(ns) == 0 {
		return repResult{}, errors.New("CuratorBench: an empty repetition")
	}
	return repResult{ops: int64(len(ns) - 1), elapsed: ns[0], lat: ns[1:]}, nil
}

// close ends the JVM's input, upon which it closes its sessions and exits,
// and kills it if it does not in time.
func (p *javaProc) close() { _ = p.proc.Stop(nil, 20*time.Second) }

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// javaEntry is the Curator side of scenario key: a JVM running
// CuratorBench's scenario with args, on the scenario's lock path, made a
// contender by wrap (nil: a timed loop), warmed up for counts.WarmJava.
func (e *env) javaEntry(key, scenario string, wrap func(*javaProc) *contender, args ...string) entry {
	return entry{impl: nameCurator, warm: e.c.WarmJava, setup: func(ctx context.Context) (*contender, error) {
		if e.java == nil {
			return nil, fmt.Errorf("%w: Java is off (%s)", errSkipped, e.javaOff)
		}
		p, err := e.java.start(ctx, 3*time.Minute, 2*time.Minute+e.c.Duration, scenario, e.servers, append(args, "path="+e.path(key, "curator"))...)
		switch {
		case err != nil:
			return nil, err
		case wrap != nil:
			return wrap(p), nil
		}
		return &contender{rep: p.timedRep, close: p.close, cpu: p.cpu}, nil
	}}
}
