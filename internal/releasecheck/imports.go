package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// internalAcrossModules returns each import, in the Go files under root,
// of a package internal to another of the repository's modules (modules:
// module path by directory relative to root, "" for the root): the go
// command allows it (framework/otelmetrics' path is under the core's), but
// a module released on its own must not depend on what another keeps
// internal, which the other's next release may change (each import as
// "file: import path").
func internalAcrossModules(root string, modules map[string]string) ([]string, error) {
	dirs := make([]string, 0, len(modules))
	for dir := range modules {
		dirs = append(dirs, dir)
	}
	// The module of a file or a package is the one of the longest
	// directory or path that holds it.
	slices.SortFunc(dirs, func(a, b string) int { return len(b) - len(a) })
	moduleOf := func(rel string) string {
		for _, dir := range dirs {
			if dir == "" || rel == dir || strings.HasPrefix(rel, dir+"/") {
				return modules[dir]
			}
		}
		return ""
	}
	providerOf := func(importPath string) string {
		best := ""
		for _, m := range modules {
			if (importPath == m || strings.HasPrefix(importPath, m+"/")) && len(m) > len(best) {
				best = m
			}
		}
		return best
	}
	var found []string
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if base := d.Name(); name != root && (strings.HasPrefix(base, ".") || base == "testdata" || base == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, name)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		own := moduleOf(rel)
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			provider := providerOf(p)
			if provider == "" || provider == own {
				continue
			}
			inside := strings.TrimPrefix(p, provider)
			if slices.Contains(strings.Split(inside, "/"), "internal") {
				found = append(found, rel+": "+p)
			}
		}
		return nil
	})
	return found, err
}
