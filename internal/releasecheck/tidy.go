package main

import (
	"os"
	"path/filepath"
	"strings"
)

// tidyOtelmetrics runs go mod tidy in dir (framework/otelmetrics) with env
// (the core served locally) and keeps the core's go.sum lines as they
// were: a local zip's sum is not the published version's until the tag
// is, and the release adds the published one (docs/releasing.md).
func tidyOtelmetrics(dir string, env []string, core *module) error {
	name := filepath.Join(dir, "go.sum")
	before, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	if _, err := goCmd(dir, env, "mod", "tidy"); err != nil {
		return err
	}
	after, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	ours := func(line string) bool { return strings.HasPrefix(line, core.path+" ") }
	var kept []string // the core's lines from before
	for _, line := range lines(before) {
		if ours(line) {
			kept = append(kept, line)
		}
	}
	var out []string // after's lines, the core's replaced by kept where go.sum's order puts them
	for _, line := range lines(after) {
		if ours(line) {
			continue
		}
		if kept != nil && strings.Fields(line)[0] > core.path {
			out, kept = append(out, kept...), nil
		}
		out = append(out, line)
	}
	out = append(out, kept...)
	return os.WriteFile(name, []byte(strings.Join(out, "\n")+"\n"), 0o644)
}

// lines are data's non-empty lines.
func lines(data []byte) []string {
	var ls []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" {
			ls = append(ls, l)
		}
	}
	return ls
}
