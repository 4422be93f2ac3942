package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/jvm"
	"github.com/gocurator/curator/internal/testutil"
)

// ourChildren lists the pids of this process's children that are
// CuratorBench JVMs, the latency section's proxy (this executable), or
// zombies.
func ourChildren(t *testing.T) []string {
	self, _ := os.Executable()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil || len(stats) == 0 {
		t.Skip("no /proc")
	}
	var out []string
	for _, path := range stats {
		stat, _ := os.ReadFile(path)
		// pid (comm) state ppid ...
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "cmdline"))
		exe, _ := os.Readlink(filepath.Join(filepath.Dir(path), "exe"))
		if f[0] == "Z" || bytes.Contains(cmdline, []byte("CuratorBench")) || exe == self {
			out = append(out, filepath.Base(filepath.Dir(path)))
		}
	}
	return out
}

// A JVM that never gets ready is killed, within its bound, and waited for.
func TestJavaRunnerKillsAHungJVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM")
	}
	if _, err := jvm.Tool("javac"); err != nil {
		t.Skip("no javac")
	}
	ctx := context.Background()
	j, err := newJavaRunner(ctx, &versions{})
	testutil.Must(t, err)
	// nothing listens on port 1: the JVM never connects, so never gets ready
	start := time.Now()
	_, err = j.start(ctx, 3*time.Second, time.Second, "loop", "127.0.0.1:1", "path=/hung", "clients=1", "threads=1", "paths=1", "leases=0", "durationMs=10")
	if err == nil || !strings.Contains(err.Error(), "did not get ready") {
		t.Fatalf("start against no server: %v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("took %s to give up", d)
	}
	if left := ourChildren(t); len(left) > 0 {
		t.Errorf("JVMs left behind: %v", left)
	}
}
