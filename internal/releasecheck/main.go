// Command releasecheck proves that this repository's two modules install
// as an outside user installs them (`make release-check`), as a commit has
// them: what gets tagged. The working tree must not differ from HEAD
// (-allow-dirty: check HEAD anyway, naming the changes loudly).
//
// It serves the core module and framework/otelmetrics from a module proxy
// of files, builds a fresh module outside the repository that imports
// both, from that proxy alone for our modules (GOWORK=off,
// GOFLAGS=-mod=mod, a module cache of its own), runs it, and checks that it
// was built with the versions and the zips served, unreplaced, and that
// `go mod tidy` kept its go line, ours. Then it installs them as a user
// does while no version is published: in another fresh module (go mod
// init, a module cache of its own, no proxy of ours), it runs the go
// commands of the README's install block (the same in docs/releasing.md)
// as written, with the block's clone a copy of the commit's files, and
// checks that the program built and ran with both modules replaced by the
// clone.
//
// Each module is served from its tag when the tag exists (the core's
// vX.Y.Z, otelmetrics' framework/otelmetrics/vX.Y.Z: what users get), else
// from HEAD (`git archive`: the release about to be tagged); the core at
// the version framework/otelmetrics requires, framework/otelmetrics at
// -version. Third-party modules come from the module cache (as a proxy),
// else from GOPROXY; their sums from our go.sum files.
//
// With -tidy it runs `go mod tidy` in framework/otelmetrics instead, with
// the core served the same way (from the working tree when untagged: the
// go.mod being edited goes with it), and leaves the core's go.sum lines as
// they were (the sum of a version is known once it is published). With
// -mods it only checks the go.mod files and go.work (`make check`): no
// replace, one go line, a released version of the core required, and
// go.work standing in for that version with the checkout's core; and that
// neither module imports a package internal to the other.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// otelmetricsDir is framework/otelmetrics' directory in the repository.
const otelmetricsDir = "framework/otelmetrics"

func main() {
	version := flag.String("version", "v0.1.0", "the version framework/otelmetrics is served at")
	tidy := flag.Bool("tidy", false, "run go mod tidy in framework/otelmetrics against the core served locally")
	mods := flag.Bool("mods", false, "only check the go.mod files and go.work")
	allowDirty := flag.Bool("allow-dirty", false, "check HEAD even though the working tree differs from it (named, loudly)")
	flag.Parse()
	if err := run(*version, *tidy, *mods, *allowDirty); err != nil {
		fmt.Fprintln(os.Stderr, "release-check:", err)
		os.Exit(1)
	}
}

func run(version string, tidy, modsOnly, allowDirty bool) error {
	out, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return err
	}
	root := strings.TrimSpace(string(out))
	coreMod, otelMod, err := readMods(root)
	if err != nil {
		return err
	}
	work, err := readMod(filepath.Join(root, "go.work"))
	if err != nil {
		return err
	}
	coreVersion, err := checkMods(coreMod, otelMod, work)
	if err != nil {
		return err
	}
	if err := checkImports(root, coreMod, otelMod); err != nil || modsOnly {
		return err
	}

	tmp, err := os.MkdirTemp("", "gocurator-release-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // the module caches are made writable (-modcacherw)
	proxy := filepath.Join(tmp, "proxy")
	env, err := outsideEnv(tmp, "modcache", proxy)
	if err != nil {
		return err
	}
	if tidy {
		// The go.mod being edited: the core as the working tree has it,
		// unless tagged.
		core, _, err := coreAt(root, coreMod.module, coreVersion, "")
		if err != nil {
			return err
		}
		if err := core.serve(proxy); err != nil {
			return err
		}
		return tidyOtelmetrics(filepath.Join(root, otelmetricsDir), env, core)
	}

	// What gets tagged is a commit: HEAD (or the tags), never the working
	// tree, which must not differ from it unless told.
	head, err := git(root, "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	rev := strings.TrimSpace(string(head))
	if err := checkClean(root, rev, allowDirty); err != nil {
		return err
	}
	core, from, err := coreAt(root, coreMod.module, coreVersion, "HEAD")
	if err != nil {
		return err
	}
	otel, otelFrom, err := at(root, otelmetricsDir, otelMod.module, version)
	if err != nil {
		return err
	}
	for _, m := range []*module{core, otel} {
		if err := m.serve(proxy); err != nil {
			return err
		}
	}
	clone, err := archive(root, "HEAD", "") // a fresh clone's files
	if err != nil {
		return err
	}
	sums := [][]byte{clone["go.sum"], clone[otelmetricsDir+"/go.sum"]}

	// A module outside the repository that requires both, from the proxy.
	consumer := filepath.Join(tmp, "consumer")
	if err := os.Mkdir(consumer, 0o755); err != nil {
		return err
	}
	if err := writeConsumer(consumer, coreMod.goLine, sums, core, otel); err != nil {
		return err
	}
	if _, err := goCmd(consumer, env, "mod", "tidy"); err != nil {
		return err
	}
	after, err := readMod(filepath.Join(consumer, "go.mod"))
	if err != nil {
		return err
	}
	if after.goLine != coreMod.goLine || len(after.replaces) > 0 {
		return fmt.Errorf("go mod tidy of a module at go %s that requires ours made its go line %s (replaces: %q)",
			coreMod.goLine, after.goLine, after.replaces)
	}
	printed, err := buildAndRun(consumer, env, filepath.Join(tmp, "consumer-bin"))
	if err != nil {
		return err
	}
	if err := checkBuilt(printed, core, otel); err != nil {
		return err
	}

	// A module outside the repository installed from a clone, by the
	// README's install block, word for word.
	cloned, err := fromClone(tmp, clone, sums)
	if err != nil {
		return err
	}

	fmt.Printf("release-check: commit %s; a module outside the repository (go %s) built and ran with\n", rev, coreMod.goLine)
	fmt.Printf("  %s %s %s (%s)\n  %s %s %s (%s)\n",
		core.path, core.version, core.sum(), from, otel.path, otel.version, otel.sum(), otelFrom)
	fmt.Println("from a local file module proxy, unreplaced; go mod tidy kept its go line")
	fmt.Printf("and another, in a fresh module with a clone of the commit, by the README's install block:\n  %s\n",
		strings.Join(cloned, "\n  "))
	return nil
}

// checkClean fails if the working tree's tracked files differ from HEAD
// (rev), naming them, unless allowDirty: then it says so loudly, on
// stderr, and the check goes on with HEAD. Untracked files are named (they
// are in no commit).
func checkClean(root, rev string, allowDirty bool) error {
	out, err := git(root, "status", "--porcelain=v1", "--untracked-files=no")
	if err != nil {
		return err
	}
	if changed := lines(out); len(changed) > 0 {
		what := fmt.Sprintf("the working tree differs from HEAD (%s) in %d files:\n  %s", rev, len(changed), strings.Join(changed, "\n  "))
		if !allowDirty {
			return fmt.Errorf("%s\nwhat gets tagged is a commit, and the check serves HEAD: commit or stash them first "+
				"(or RELEASE_ALLOW_DIRTY=1 to check HEAD anyway)", what)
		}
		fmt.Fprintf(os.Stderr, "release-check: WARNING: %s\nrelease-check: WARNING: checking HEAD (%s), NOT these changes\n", what, rev)
	}
	untracked, err := git(root, "ls-files", "--others", "--exclude-standard")
	if err != nil {
		return err
	}
	if u := lines(untracked); len(u) > 0 {
		if len(u) > 10 {
			u = append(u[:10], fmt.Sprintf("and %d more", len(u)-10))
		}
		fmt.Fprintf(os.Stderr, "release-check: note: untracked, so in no commit and not checked: %s\n", strings.Join(u, ", "))
	}
	return nil
}

// buildAndRun builds the module in dir into bin, runs it, and returns what
// it printed.
func buildAndRun(dir string, env []string, bin string) ([]byte, error) {
	if _, err := goCmd(dir, env, "build", "-o", bin, "."); err != nil {
		return nil, err
	}
	printed, err := exec.Command(bin).Output()
	if err != nil {
		return nil, fmt.Errorf("the consumer in %s: %w", dir, err)
	}
	return printed, nil
}

// readMods reads the go.mod files of the two modules of the repository
// at root.
func readMods(root string) (core, otel modFile, err error) {
	if core, err = readMod(filepath.Join(root, "go.mod")); err != nil {
		return core, otel, err
	}
	otel, err = readMod(filepath.Join(root, otelmetricsDir, "go.mod"))
	return core, otel, err
}

// checkImports fails naming each import of a package internal to the
// other module (internalAcrossModules).
func checkImports(root string, core, otel modFile) error {
	found, err := internalAcrossModules(root, map[string]string{"": core.module, otelmetricsDir: otel.module})
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("imports of a package internal to another module, which its next release may change under this one's users "+
			"(give the importer what it needs through the other's public API, or a copy of its own):\n  %s", strings.Join(found, "\n  "))
	}
	return nil
}

// modFile is what the release check reads of a go.mod (or a go.work): its
// module path, its go line, its requirements and its replacements.
type modFile struct {
	module, goLine string
	requires       map[string]string // version by module path
	replaces       []string          // "old [version] => new [version]"
}

// readMod reads the go.mod (or the go.work) at name as the go command
// parses it (go mod edit -json, go work edit -json).
func readMod(name string) (modFile, error) {
	verb := "mod"
	if filepath.Base(name) == "go.work" {
		verb = "work"
	}
	out, err := goCmd("", os.Environ(), verb, "edit", "-json", name)
	if err != nil {
		return modFile{}, err
	}
	type version struct{ Path, Version string }
	var j struct {
		Module  struct{ Path string }
		Go      string
		Require []version
		Replace []struct{ Old, New version }
	}
	if err := json.Unmarshal(out, &j); err != nil {
		return modFile{}, fmt.Errorf("%s: %w", name, err)
	}
	if j.Go == "" {
		return modFile{}, fmt.Errorf("%s: no go line", name)
	}
	m := modFile{module: j.Module.Path, goLine: j.Go, requires: map[string]string{}}
	for _, r := range j.Require {
		m.requires[r.Path] = r.Version
	}
	at := func(v version) string { return strings.TrimSpace(v.Path + " " + v.Version) }
	for _, r := range j.Replace {
		m.replaces = append(m.replaces, at(r.Old)+" => "+at(r.New))
	}
	return m, nil
}

// checkMods checks what an outside user needs of the two go.mod files, and
// that work (the go.work) stands in for the core's version that
// framework/otelmetrics requires with the checkout's core; it returns that
// version.
func checkMods(core, otel, work modFile) (string, error) {
	var problems []string
	if len(core.replaces) > 0 || len(otel.replaces) > 0 {
		problems = append(problems, fmt.Sprintf("replace directives, which outside users do not get: %q %q", core.replaces, otel.replaces))
	}
	if core.goLine != otel.goLine || work.goLine != core.goLine {
		problems = append(problems, fmt.Sprintf("go lines differ: %s (core), %s (%s), %s (go.work)", core.goLine, otel.goLine, otelmetricsDir, work.goLine))
	}
	version := otel.requires[core.module]
	if version == "" || strings.Count(version, "-") >= 2 {
		problems = append(problems, fmt.Sprintf("%s requires %s at %q: not a released version", otelmetricsDir, core.module, version))
	}
	if want := core.module + " " + version + " => ./"; len(work.replaces) != 1 || work.replaces[0] != want {
		problems = append(problems, fmt.Sprintf("go.work replaces %q, want only %q: the version %s requires, with this checkout's core", work.replaces, want, otelmetricsDir))
	}
	if len(problems) > 0 {
		return "", errors.New(strings.Join(problems, "; "))
	}
	return version, nil
}

// coreAt is the core module at version: from its tag if there is one,
// else from the commit rev, or from the working tree if rev is ""; from
// says which.
func coreAt(root, modPath, version, rev string) (m *module, from string, err error) {
	if rev == "" {
		if _, err := git(root, "rev-parse", "-q", "--verify", "refs/tags/"+version+"^{commit}"); err != nil {
			m, err = fromWorkTree(root, "", modPath, version)
			return m, "the working tree: not tagged yet", err
		}
	}
	return at(root, "", modPath, version)
}

// at is the module in dir at version: from its tag (version, prefixed by
// dir for a module in a subdirectory) if there is one, else from HEAD;
// from says which.
func at(root, dir, modPath, version string) (m *module, from string, err error) {
	tag := version
	if dir != "" {
		tag = dir + "/" + version
	}
	if _, err := git(root, "rev-parse", "-q", "--verify", "refs/tags/"+tag+"^{commit}"); err == nil {
		m, err = fromCommit(root, dir, tag, modPath, version)
		return m, "its tag " + tag, err
	}
	m, err = fromCommit(root, dir, "HEAD", modPath, version)
	return m, "HEAD: not tagged yet", err
}

// outsideEnv is the environment of an outside user's go commands: no
// workspace, a module cache of its own (tmp/modcache), our modules from
// proxy and nowhere else (not checked against the checksum database), the
// others from the module cache or GOPROXY, the local toolchain. Without a
// proxy, no module of ours can be downloaded at all: they must be
// replaced.
func outsideEnv(tmp, modcache, proxy string) ([]string, error) {
	goenv, err := goCmd("", os.Environ(), "env", "GOMODCACHE", "GOPROXY")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(goenv)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("go env: %q", goenv)
	}
	proxies := "file://" + filepath.ToSlash(filepath.Join(lines[0], "cache", "download"))
	if proxy != "" {
		proxies = "file://" + filepath.ToSlash(proxy) + "," + proxies
	}
	if p := lines[1]; p != "" && p != "off" {
		proxies += "," + p
	}
	var env []string
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GOWORK", "GOPROXY", "GOMODCACHE", "GOFLAGS", "GONOSUMDB", "GOPRIVATE", "GONOPROXY", "GOTOOLCHAIN":
		default:
			env = append(env, kv)
		}
	}
	env = append(env, "GOPROXY="+proxies, "GOMODCACHE="+filepath.Join(tmp, modcache), "GOTOOLCHAIN=local")
	if proxy == "" {
		return append(env, "GOFLAGS=-modcacherw"), nil
	}
	return append(env, "GOWORK=off", "GOFLAGS=-mod=mod -modcacherw", "GONOSUMDB=github.com/gocurator/curator"), nil
}

// goCmd runs the go command (GO, or go) in dir with env, and returns its
// output; its error says what it printed.
func goCmd(dir string, env []string, args ...string) ([]byte, error) {
	goBin := os.Getenv("GO")
	if goBin == "" {
		goBin = "go"
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s (in %s): %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}
