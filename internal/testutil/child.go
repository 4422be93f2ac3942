package testutil

import (
	"bytes"
	"context"
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
// server in a child). It is killed, by its pid, if it outlives Timeout.
func RunChild(t testing.TB, test string, env ...string) (output string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
	cmd.Env = append(append(os.Environ(), childEnv+"="+test), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("child %s: not ended within %v; it printed:\n%s", test, Timeout, out.String())
	}
	return out.String(), err
}
