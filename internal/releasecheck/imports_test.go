package main

import "testing"

// No module of the repository imports a package internal to another: a
// module released on its own must build against any release of the other
// that its go.mod allows.
func TestNoInternalImportAcrossModules(t *testing.T) {
	root := repoRoot(t)
	core, otel, err := readMods(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkImports(root, core, otel); err != nil {
		t.Fatal(err)
	}
}
