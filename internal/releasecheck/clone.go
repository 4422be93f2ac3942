package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// installMarker marks, in README.md and docs/releasing.md, the install
// block: the commands that install gocurator from a clone into a module of
// the user's while no version of it is on the module proxy. The fenced
// block that follows it is the same in both, and fromClone runs its go
// commands as they are written.
const installMarker = "<!-- release-check: install from a clone -->"

// installDocs are the files that show the install block.
var installDocs = []string{"README.md", "docs/releasing.md"}

// cloneVar is the install block's name for the clone's directory.
const cloneVar = "GOCURATOR"

// installCommands returns the go commands of the install block of files (a
// commit's, by path), each as its arguments, with the lines they were
// written as; it fails unless every doc of installDocs shows the same
// block, and the block runs go mod tidy.
func installCommands(files map[string][]byte) (cmds [][]string, written []string, err error) {
	var block string
	for i, doc := range installDocs {
		b, err := fencedAfter(files[doc], installMarker)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", doc, err)
		}
		if i > 0 && b != block {
			return nil, nil, fmt.Errorf("the install blocks of %s and %s differ:\n%s\n---\n%s", installDocs[0], doc, block, b)
		}
		block = b
	}
	var logical []string // the block's lines, continuations joined
	var cur string
	for _, l := range strings.Split(block, "\n") {
		if c, ok := strings.CutSuffix(strings.TrimRight(l, " "), "\\"); ok {
			cur += c + " "
			continue
		}
		logical, cur = append(logical, cur+l), ""
	}
	tidies := false
	for _, l := range logical {
		if i := strings.Index(l, "#"); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		switch {
		case l == "":
		case strings.HasPrefix(l, "go "):
			if strings.ContainsAny(l, `"'`+"`") {
				return nil, nil, fmt.Errorf("install block: %q: quotes, which release-check does not follow", l)
			}
			args := strings.Fields(l)[1:]
			cmds, written = append(cmds, args), append(written, strings.Join(strings.Fields(l), " "))
			tidies = tidies || strings.Join(args, " ") == "mod tidy"
		case strings.HasPrefix(l, "git clone "), strings.HasPrefix(l, cloneVar+"="), strings.HasPrefix(l, "cd "):
			// the clone release-check makes itself, and the user's module
		default:
			return nil, nil, fmt.Errorf("install block: %q: a line release-check does not follow", l)
		}
	}
	if !tidies {
		return nil, nil, fmt.Errorf("install block: no go mod tidy, which a user runs")
	}
	return cmds, written, nil
}

// fencedAfter returns the lines of the first fenced code block after the
// line marker in doc.
func fencedAfter(doc []byte, marker string) (string, error) {
	_, rest, ok := bytes.Cut(doc, []byte(marker+"\n"))
	if !ok {
		return "", fmt.Errorf("no %s", marker)
	}
	ls := strings.Split(string(rest), "\n")
	if len(ls) == 0 || !strings.HasPrefix(ls[0], "```") {
		return "", fmt.Errorf("no fenced block right after %s", marker)
	}
	for i, l := range ls[1:] {
		if strings.HasPrefix(l, "```") {
			return strings.Join(ls[1:i+1], "\n"), nil
		}
	}
	return "", fmt.Errorf("the block after %s does not end", marker)
}

// fromClone does what the install block says, in a module of its own
// outside the repository: clone (the commit's files, as a clone has them),
// then `go mod init`, a program that imports both modules (consumerMain),
// a go.sum of the third-party sums (sums: what the checksum database would
// give), and the block's go commands, as written, with GOCURATOR the
// clone; no proxy serves our modules, and its module cache is its own, so
// they can only come from the clone. The program built must be built with
// both replaced by the clone. It returns the commands run.
func fromClone(tmp string, clone map[string][]byte, sums [][]byte) ([]string, error) {
	cmds, written, err := installCommands(clone)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(tmp, "clone")
	for name, data := range clone {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return nil, err
		}
	}
	env, err := outsideEnv(tmp, "modcache-clone", "")
	if err != nil {
		return nil, err
	}
	user := filepath.Join(tmp, "user")
	if err := os.Mkdir(user, 0o755); err != nil {
		return nil, err
	}
	if _, err := goCmd(user, env, "mod", "init", "example.com/user"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(user, "main.go"), []byte(consumerMain), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(user, "go.sum"), thirdPartySums(sums), 0o644); err != nil {
		return nil, err
	}
	for i, args := range cmds {
		for j, a := range args {
			args[j] = strings.NewReplacer("${"+cloneVar+"}", dir, "$"+cloneVar, dir).Replace(a)
		}
		if _, err := goCmd(user, env, args...); err != nil {
			return nil, fmt.Errorf("the install block's %q, in a fresh module with a clone: %w", written[i], err)
		}
	}
	printed, err := buildAndRun(user, env, filepath.Join(tmp, "user-bin"))
	if err != nil {
		return nil, err
	}
	return written, checkReplaced(printed, dir)
}

// checkReplaced checks what the consumer printed: both modules there,
// replaced (by the clone at dir).
func checkReplaced(out []byte, dir string) error {
	got := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) >= 4 && f[0] == "dep" {
			got[f[1]] = f[len(f)-1] == "true"
		}
	}
	for _, p := range []string{"github.com/gocurator/curator", "github.com/gocurator/curator/framework/otelmetrics"} {
		if !got[p] {
			return fmt.Errorf("the module installed from a clone was not built with %s replaced by the clone (%s): %s", p, dir, out)
		}
	}
	return nil
}
