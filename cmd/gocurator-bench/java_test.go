package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/jvm"
)

// This file tests the Java runner: no CuratorBench JVM outlives its use.
//
// ourJVMs lists the pids of CuratorBench processes whose parent is this
// process (zombies included).
func ourJVMs(t *testing.T) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	self := os.Getpid()
	var out []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", en.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != self {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", en.Name(), "cmdline"))
		if f[0] == "Z" || bytes.Contains(cmdline, []byte("CuratorBench")) {
			out = append(out, pid)
		}
	}
	return out
}

func TestJavaRunnerKillsAHungJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	if _, err := jvm.Tool("javac"); err != nil {
		t.Skip("no javac")
	}
	ctx := context.Background()
	j, err := newJavaRunner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// nothing listens on port 1: the JVM never connects, so never gets ready
	start := time.Now()
	_, err = j.start(ctx, 3*time.Second, time.Second, "s1", "127.0.0.1:1", "warmupMs=10", "ops=1")
	if err == nil || !strings.Contains(err.Error(), "did not get ready") {
		t.Fatalf("start against no server: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s to give up", d)
	}
	if left := ourJVMs(t); len(left) > 0 {
		t.Errorf("JVMs left behind: %v", left)
	}
	if errors.Is(err, context.Canceled) {
		t.Error("unexpected cancellation")
	}
}
