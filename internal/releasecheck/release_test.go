package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The install block of the README and of docs/releasing.md is one block,
// and it runs go mod tidy with each module required and replaced by the
// clone (the full install is run by `make release-check`).
func TestInstallBlock(t *testing.T) {
	root := repoRoot(t)
	files := map[string][]byte{}
	for _, doc := range installDocs {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		files[doc] = b
	}
	_, written, err := installCommands(files)
	if err != nil {
		t.Fatal(err)
	}
	block := strings.Join(written, "\n")
	core, otel, err := readMods(root)
	if err != nil {
		t.Fatal(err)
	}
	version := otel.requires[core.module]
	for _, m := range []struct{ path, dir string }{{core.module, ""}, {otel.module, "/" + otelmetricsDir}} {
		want := "-require=" + m.path + "@" + version + " -replace=" + m.path + "=$" + cloneVar + m.dir
		if !strings.Contains(block, want) {
			t.Errorf("the install block does not say %q:\n%s", want, block)
		}
	}
}

// The release check checks the commit, not the working tree: in a clone
// whose HEAD does not compile, with the breaking change undone in the
// working tree only, it refuses the dirty tree, and told to go on, it
// checks HEAD and fails to build it.
func TestReleaseCheckChecksTheCommit(t *testing.T) {
	root := repoRoot(t)
	head := strings.TrimSpace(gitT(t, root, "rev-parse", "HEAD"))
	clone := filepath.Join(t.TempDir(), "repo")
	gitT(t, root, "clone", "-q", "--shared", "--no-checkout", root, clone)
	gitT(t, clone, "checkout", "-q", head)
	broken := filepath.Join(clone, "retry", "broken_release.go")
	if err := os.WriteFile(broken, []byte("package retry\n\nvar _ = notDefinedAnywhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitT(t, clone, "add", "retry/broken_release.go")
	gitT(t, clone, "-c", "user.name=test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "does not compile")
	if err := os.Remove(broken); err != nil { // undone in the working tree only
		t.Fatal(err)
	}
	t.Chdir(clone)

	err := run("v0.1.0", false, false, false)
	if err == nil || !strings.Contains(err.Error(), "differs from HEAD") || !strings.Contains(err.Error(), "retry/broken_release.go") {
		t.Fatalf("release-check of a tree that differs from its HEAD: %v; want it refused, naming the file", err)
	}
	err = run("v0.1.0", false, false, true)
	if err == nil || !strings.Contains(err.Error(), "notDefinedAnywhere") {
		t.Fatalf("release-check of a HEAD that does not compile, the working tree undoing it: %v; want HEAD's build to fail", err)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(gitT(t, ".", "rev-parse", "--show-toplevel"))
}

// gitT runs git in dir, failing the test if it fails.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
