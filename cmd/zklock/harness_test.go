package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// The zklock binary, built once for the package's tests by zklockBinary
// into binDir, which TestMain removes.
var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// zklockBinary builds zklock with go build (once per test run) and returns
// its path: exit statuses, signals and stdout/stderr are checked on the
// program operators run, not only on zklockMain.
func zklockBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		if binDir, buildErr = os.MkdirTemp("", "zklock-test-"); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "zklock")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// process is one run of zklock with ZK_SERVERS pointing at the shared
// server: the built binary, or zklockMain in-process (where the test's
// goroutine-leak check covers zklock too).
type process struct {
	t              testing.TB
	args           []string
	cmd            *exec.Cmd      // the binary; nil in-process
	signals        chan os.Signal // in-process: the signals zklockMain hears
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// startZklock starts zklock with args: zklockMain on a goroutine if
// inProcess, else the binary. What still runs when the test ends is
// stopped: the binary killed, zklockMain's context cancelled.
func startZklock(t testing.TB, inProcess bool, args ...string) *process {
	t.Helper()
	p := &process{t: t, args: args, stdout: newSyncBuffer(), stderr: newSyncBuffer(), done: make(chan struct{})}
	if inProcess {
		ctx, cancel := context.WithCancel(testutil.Context(t))
		p.signals = make(chan os.Signal, 1)
		env := map[string]string{"ZK_SERVERS": server.Addr()}
		s := streams{stdout: p.stdout, stderr: p.stderr, getenv: func(k string) string { return env[k] }}
		go func() {
			defer close(p.done)
			p.code = zklockMain(ctx, args, s, p.signals)
		}()
		t.Cleanup(func() {
			cancel()
			<-p.done
		})
		return p
	}
	p.cmd = exec.Command(zklockBinary(t), args...)
	p.cmd.Env = append(os.Environ(), "ZK_SERVERS="+server.Addr())
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	// After a kill, Wait gives up on pipes a child of the command still
	// holds open (a `sleep` the command ran) instead of waiting for it.
	p.cmd.WaitDelay = 5 * time.Second
	testutil.Must(t, p.cmd.Start())
	go func() {
		defer close(p.done)
		p.cmd.Wait() // an error says no more than ProcessState
		p.code = p.cmd.ProcessState.ExitCode()
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// signal sends sig to zklock.
func (p *process) signal(sig syscall.Signal) {
	p.t.Helper()
	if p.cmd == nil {
		p.signals <- sig
	} else if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// wait waits, at most testutil.Timeout, until zklock has exited, and
// returns its exit status.
func (p *process) wait() int {
	p.t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(testutil.Timeout):
		p.t.Fatalf("zklock %q still running after %v; stderr %q", p.args, testutil.Timeout, p.stderr.String())
		return -1
	}
}

// result waits until zklock has exited and returns its exit status, stdout
// and stderr.
func (p *process) result() (int, string, string) {
	p.t.Helper()
	code := p.wait()
	return code, p.stdout.String(), p.stderr.String()
}

// fails waits until zklock has exited and fails the test unless it exited
// with status want and stderr says msg.
func (p *process) fails(want int, msg string) {
	p.t.Helper()
	if code, out, stderr := p.result(); code != want || !strings.Contains(stderr, msg) {
		p.t.Errorf("zklock %q: status %d, stdout %q, stderr %q; want %d and %q", p.args, code, out, stderr, want, msg)
	}
}

// succeeds waits until zklock has exited and fails the test unless it
// exited 0 and stdout says each of texts; it returns stdout.
func (p *process) succeeds(texts ...string) string {
	p.t.Helper()
	code, out, stderr := p.result()
	for _, text := range texts {
		if code != 0 || !strings.Contains(out, text) {
			p.t.Errorf("zklock %q: status %d, stdout %q, stderr %q; want 0 and %q", p.args, code, out, stderr, text)
		}
	}
	return out
}

// jsonLine waits until zklock has exited and fails the test unless it
// exited with status want and wrote one JSON line, with the fields fields
// (checkFields), to stdout, or if it wrote nothing there, to stderr (run's
// own lines: its stdout is its command's).
func (p *process) jsonLine(want int, fields map[string]any) {
	p.t.Helper()
	code, out, stderr := p.result()
	out = cmp.Or(out, stderr)
	if lines := jsonLines(p.t, out); code != want || len(lines) != 1 {
		p.t.Errorf("zklock %q: status %d, output %q; want %d and one line", p.args, code, out, want)
	} else if bad := checkFields(lines[0], fields); len(bad) > 0 {
		p.t.Errorf("zklock %q: %v: %v", p.args, lines[0], bad)
	}
}

// zklock runs zklockMain with args to its end and returns its exit status,
// stdout and stderr.
func zklock(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	return startZklock(t, true, args...).result()
}

// zklockBin runs the zklock binary with args to its end and returns its
// exit status, stdout and stderr.
func zklockBin(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	return startZklock(t, false, args...).result()
}

// both runs zklock with args in-process and as the binary, fails the test
// unless the two give the same exit status, stdout and stderr, and returns
// what they gave.
func both(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	code, out, stderr := zklock(t, args...)
	if bcode, bout, bstderr := zklockBin(t, args...); bcode != code || bout != out || bstderr != stderr {
		t.Errorf("zklock %q: the binary gave status %d, stdout %q, stderr %q; in-process %d, %q, %q", args, bcode, bout, bstderr, code, out, stderr)
	}
	return code, out, stderr
}

// syncBuffer is an io.Writer safe for the command's output copier and the
// test at once, which can wait for a text to appear in it.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

// Write appends p and wakes waitFor.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output contains s, and returns the output.
func (b *syncBuffer) waitFor(ctx context.Context, t testing.TB, s string) string {
	t.Helper()
	return b.waitUntil(ctx, t, strconv.Quote(s), func(out string) bool { return strings.Contains(out, s) })
}

// waitUntil waits until ok accepts the output, and returns the output;
// what says what it waits for.
func (b *syncBuffer) waitUntil(ctx context.Context, t testing.TB, what string, ok func(out string) bool) string {
	t.Helper()
	for {
		b.mu.Lock()
		out, ch := b.buf.String(), b.changed
		b.mu.Unlock()
		if ok(out) {
			return out
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("waiting for %s in output: %v; output so far:\n%s", what, ctx.Err(), out)
		}
	}
}

// jsonLines decodes each line of out as a JSON object.
func jsonLines(t testing.TB, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v in line %q of %q", err, l, out)
		}
		lines = append(lines, m)
	}
	return lines
}

// checkFields reports, as "key: got, want" items, the fields of line that
// differ from want; a want of nil means the field must be absent, and
// anyValue that it must be present.
func checkFields(line map[string]any, want map[string]any) []string {
	var bad []string
	for k, w := range want {
		got, ok := line[k]
		switch {
		case w == nil && ok:
			bad = append(bad, fmt.Sprintf("%s: %v, want none", k, got))
		case w == anyValue && !ok:
			bad = append(bad, fmt.Sprintf("%s: missing", k))
		case w != nil && w != anyValue && fmt.Sprint(got) != fmt.Sprint(w):
			bad = append(bad, fmt.Sprintf("%s: %v, want %v", k, got, w))
		}
	}
	sort.Strings(bad)
	return bad
}

// anyValue in checkFields' want: the field must be there, with any value.
const anyValue = "<any>"
