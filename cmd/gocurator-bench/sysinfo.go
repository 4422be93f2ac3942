package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
)

// cpuModel describes the machine's CPUs.
func cpuModel() string {
	return fmt.Sprintf("%s, %d logical CPUs", cmp.Or(procValue("/proc/cpuinfo", "model name"), "unknown"), runtime.NumCPU())
}

// procValue returns what follows the colon on the first line of file whose
// key (before the colon) is key, "" if none.
func procValue(file, key string) string {
	b, _ := os.ReadFile(file)
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
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
