package testutil

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// childEnv marks a test binary run by RunChild; its value is the test it
// runs.
const childEnv = "GOCURATOR_TEST_CHILD"

// IsChild reports whether the test binary runs as a child process of a
// test (RunChild). A test that is only a child's part returns at once
// otherwise.
func IsChild() bool { return os.Getenv(childEnv) != "" }

// RunChild runs the test binary again as a process of its own, running only
// the test named test (which checks IsChild), with env added to its
// environment, and returns what it printed and how it exited (an
// *exec.ExitError for a non-zero exit, a panic's included). The child
// shares the parent's ZooKeeper (Main passes ZK_SERVERS on, and starts no
// server in a child). It is killed, by its pid, when the test ends (a
// failure of the parent's does not leave it running) or if it outlives
// Timeout (err then says so). It may run on a goroutine of the test's: it
// reports to t nothing.
func RunChild(t testing.TB, test string, env ...string) (output string, err error) {
	ctx, cancel := context.WithTimeout(t.Context(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"="+test), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("child %s: killed, not ended when the test ended or within %v: %w", test, Timeout, ctx.Err())
	}
	return out.String(), err
}
