package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// cpuModel describes the machine's CPUs: /proc/cpuinfo's first model name.
func cpuModel() string {
	model := "unknown"
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			model = strings.TrimSpace(v)
			break
		}
	}
	return fmt.Sprintf("%s, %d logical CPUs", model, runtime.NumCPU())
}

// moduleVersion returns the version of a dependency built into this binary.
func moduleVersion(path string) string {
	bi, _ := debug.ReadBuildInfo()
	for _, d := range bi.Deps {
		switch {
		case d.Path != path:
		case d.Replace != nil:
			return d.Replace.Version + " (replaced)"
		default:
			return d.Version
		}
	}
	return "unknown"
}

// gitRevision describes the working tree's commit, best effort.
func gitRevision() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty= with uncommitted changes").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// loadAverage returns the 1, 5 and 15 minute load averages, nil if
// unknown.
func loadAverage() []float64 {
	var l [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err == nil {
		_, err = fmt.Sscan(string(b), &l[0], &l[1], &l[2])
	}
	if err != nil {
		return nil
	}
	return l[:]
}
