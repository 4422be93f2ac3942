package main

import (
	"os/exec"
	"strings"
	"testing"
)

// No module of the repository imports a package internal to another: a
// module released on its own must build against any release of the other
// that its go.mod allows.
func TestNoInternalImportAcrossModules(t *testing.T) {
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := strings.TrimSpace(string(out))
	core, otel, err := readMods(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkImports(root, core, otel); err != nil {
		t.Fatal(err)
	}
}
