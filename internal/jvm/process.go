package jvm

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// stderrKept is how much of a JVM's stderr a Process keeps when the caller
// gives it nowhere to go.
const stderrKept = 64 << 10

// Process is one JVM started by Start: in a process group of its own, killed
// by the kernel if this process dies first (Linux), stopped only by its own
// pid, and always waited for, so that it leaves no zombie behind.
type Process struct {
	cmd     *exec.Cmd
	stdin   *os.File      // our end of the JVM's stdin
	lines   chan string   // stdout, line by line; closed at EOF
	discard chan struct{} // closed once nobody reads lines any more
	read    chan struct{} // closed when stdout is at EOF
	done    chan struct{} // closed once the JVM has been waited for
	waitErr error         // valid once done is closed
	stderr  *tailBuffer   // nil when cmd.Stderr was given
	errOut  io.Writer     // where stderr goes: stderr, or cmd.Stderr

	stopOnce sync.Once
}

// Start starts cmd, a JVM (build it with Tool("java")), and returns at once.
// cmd.Stdin must be nil: the JVM reads from a pipe that Stdin writes to. A
// nil cmd.Stdout is read line by line and delivered on Lines; a nil
// cmd.Stderr is kept, its last 64 KiB, for Stderr. Start sets
// cmd.SysProcAttr.
//
// On Linux the parent-death signal follows the OS thread that starts the
// JVM, not the process (golang/go#27505): a goroutine that ends while
// holding runtime.LockOSThread takes its thread down, and with it any JVM
// that thread started. Goroutines that lock OS threads must unlock them
// before they end.
func Start(cmd *exec.Cmd) (*Process, error) {
	if cmd.Stdin != nil {
		return nil, fmt.Errorf("jvm: Start wants cmd.Stdin nil")
	}
	p := &Process{cmd: cmd, lines: make(chan string, 64), discard: make(chan struct{}),
		read: make(chan struct{}), done: make(chan struct{})}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer inR.Close() // the JVM has its own descriptor
	p.stdin = inW
	cmd.Stdin = inR
	var outR, outW *os.File
	if cmd.Stdout == nil {
		if outR, outW, err = os.Pipe(); err != nil {
			inW.Close()
			return nil, err
		}
		cmd.Stdout = outW
	}
	if cmd.Stderr == nil {
		p.stderr = &tailBuffer{max: stderrKept}
		cmd.Stderr = p.stderr
	}
	p.errOut = cmd.Stderr
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 5 * time.Second // a stray inheritor of stderr cannot hold Wait up for ever
	err = cmd.Start()
	if outW != nil {
		outW.Close()
	}
	if err != nil {
		inW.Close()
		if outR != nil {
			outR.Close()
		}
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	if outR != nil {
		go p.readLines(outR)
	} else {
		close(p.lines)
		close(p.read)
	}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// readLines delivers the JVM's stdout on p.lines until EOF, dropping lines
// once nobody reads them.
func (p *Process) readLines(out *os.File) {
	defer close(p.read)
	defer close(p.lines)
	defer out.Close()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		select {
		case p.lines <- sc.Text():
		case <-p.discard:
		}
	}
}

// Pid returns the JVM's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stdin returns the writing end of the JVM's standard input. Stop and Kill
// close it.
func (p *Process) Stdin() io.Writer { return p.stdin }

// Lines returns the JVM's standard output, line by line, unless Start was
// given a cmd.Stdout. The channel is closed at the end of the output (the
// JVM has exited, or Stop or Kill was called), and at once when Start was
// given a cmd.Stdout.
func (p *Process) Lines() <-chan string { return p.lines }

// Stderr returns the last 64 KiB of the JVM's standard error, or "" if
// Start was given a cmd.Stderr.
func (p *Process) Stderr() string {
	if p.stderr == nil {
		return ""
	}
	return p.stderr.String()
}

// Done returns a channel that is closed once the JVM has exited and been
// waited for.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exited reports whether the JVM has exited (and been waited for).
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err returns what waiting for the JVM returned (nil for exit status 0). It
// is valid once Done is closed.
func (p *Process) Err() error { return p.waitErr }

// Stop asks the JVM to exit and waits until it has: it closes the JVM's
// standard input (the end of requests, to a JVM that reads them there) and,
// unless sig is nil, sends it sig (SIGTERM to a server). If the JVM has not
// exited after grace, Stop writes its threads' stacks (jstack) to its
// stderr, kills it (SIGKILL to its pid) and says so in its error. Lines not
// read by then are dropped.
func (p *Process) Stop(sig os.Signal, grace time.Duration) error {
	p.finish()
	if p.Exited() {
		return p.drained()
	}
	if sig != nil {
		if err := p.cmd.Process.Signal(sig); err != nil {
			_ = p.cmd.Process.Kill()
		}
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return p.drained()
	case <-t.C:
	}
	dumped := p.dumpThreads()
	_ = p.cmd.Process.Kill()
	if err := p.drained(); err != nil {
		return err
	}
	return fmt.Errorf("jvm: pid %d did not exit within %v of being asked to; killed it (%s)", p.Pid(), grace, dumped)
}

// jstackTimeout bounds the thread dump of a JVM that would not exit.
const jstackTimeout = 10 * time.Second

// dumpThreads writes the stacks of the JVM's threads to its stderr, with
// the JDK's jstack, and says where they went.
func (p *Process) dumpThreads() string {
	jstack, err := Tool("jstack")
	if err != nil {
		return "no thread dump: " + err.Error()
	}
	ctx, cancel := context.WithTimeout(context.Background(), jstackTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, jstack, strconv.Itoa(p.Pid()))
	cmd.Stdout, cmd.Stderr = p.errOut, p.errOut
	fmt.Fprintf(p.errOut, "\n--- jstack %d: the JVM did not exit when asked ---\n", p.Pid())
	if err := cmd.Run(); err != nil {
		return "jstack: " + err.Error()
	}
	return "its threads' stacks are in its stderr"
}

// Kill kills the JVM at once (SIGKILL to its pid, like a crash: before it
// can see its standard input end) and waits for it. Lines not read by then
// are dropped.
func (p *Process) Kill() {
	if !p.Exited() {
		_ = p.cmd.Process.Kill()
	}
	p.finish()
	_ = p.drained()
}

// finish closes stdin and stops delivering lines, once.
func (p *Process) finish() {
	p.stopOnce.Do(func() {
		p.stdin.Close()
		close(p.discard)
	})
}

// drained waits for the JVM and the end of its output.
func (p *Process) drained() error {
	<-p.done
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-p.read:
		return nil
	case <-t.C: // another process inherited its stdout: leave the reader to it
		return fmt.Errorf("jvm: pid %d exited but its stdout stayed open", p.Pid())
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// Write keeps the end of b.
func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, b...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(b), nil
}

// String returns what is kept.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
