package main

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// modFile is what the release check reads of a go.mod (or a go.work): its
// module path, its go line, its requirements and its replacements.
type modFile struct {
	module, goLine string
	requires       map[string]string // version by module path
	replaces       []string
}

// parseMod reads data, a go.mod or a go.work, as far as modFile goes.
func parseMod(data []byte) (modFile, error) {
	m := modFile{requires: map[string]string{}}
	block := ""
	for sc := bufio.NewScanner(bytes.NewReader(data)); sc.Scan(); {
		line, _, _ := strings.Cut(sc.Text(), "//")
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case f[0] == ")":
			block = ""
			continue
		case len(f) == 2 && f[1] == "(":
			block = f[0]
			continue
		}
		verb := block
		if verb == "" {
			verb, f = f[0], f[1:]
		}
		switch {
		case verb == "module" && len(f) == 1:
			m.module = f[0]
		case verb == "go" && len(f) == 1:
			m.goLine = f[0]
		case verb == "require" && len(f) == 2:
			m.requires[f[0]] = f[1]
		case verb == "replace":
			m.replaces = append(m.replaces, strings.Join(f, " "))
		}
	}
	if m.goLine == "" {
		return m, fmt.Errorf("no go line")
	}
	return m, nil
}
