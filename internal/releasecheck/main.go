// Command releasecheck proves that this repository's two modules install
// as an outside user installs them (`make release-check`): it serves the
// core module and framework/otelmetrics from a module proxy of files, builds
// a fresh module outside the repository that imports both, from that proxy
// alone for our modules (GOWORK=off, GOFLAGS=-mod=mod, a module cache of its
// own), runs it, and checks that it was built with the versions and the
// zips served, unreplaced, and that `go mod tidy` kept its go line, ours.
//
// The core is served at the version framework/otelmetrics requires: from
// its tag when the tag exists (what users get), else from the working tree
// (the release about to be tagged). framework/otelmetrics is served from
// the working tree at -version. Third-party modules come from the module
// cache (as a proxy), else from GOPROXY; their sums from our go.sum files.
//
// With -tidy it runs `go mod tidy` in framework/otelmetrics instead, with
// the core served the same way, and leaves the core's go.sum lines as they
// were (the sum of a version is known once it is published). With -mods it
// only checks the go.mod files and go.work (`make check`): no replace, one
// go line, a released version of the core required, and go.work standing
// in for that version with the checkout's core; and that neither module
// imports a package internal to the other.
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
	flag.Parse()
	if err := run(*version, *tidy, *mods); err != nil {
		fmt.Fprintln(os.Stderr, "release-check:", err)
		os.Exit(1)
	}
}

func run(version string, tidy, modsOnly bool) error {
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
	defer os.RemoveAll(tmp) // the module cache is made writable (-modcacherw)
	proxy := filepath.Join(tmp, "proxy")
	core, from, err := coreAt(root, coreMod.module, coreVersion)
	if err != nil {
		return err
	}
	if err := core.serve(proxy); err != nil {
		return err
	}
	env, err := outsideEnv(tmp, proxy)
	if err != nil {
		return err
	}
	if tidy {
		return tidyOtelmetrics(filepath.Join(root, otelmetricsDir), env, core)
	}

	otel, err := fromWorkTree(root, otelmetricsDir, otelMod.module, version)
	if err != nil {
		return err
	}
	if err := otel.serve(proxy); err != nil {
		return err
	}
	consumer := filepath.Join(tmp, "consumer")
	if err := os.Mkdir(consumer, 0o755); err != nil {
		return err
	}
	var sums [][]byte
	for _, dir := range []string{root, filepath.Join(root, otelmetricsDir)} {
		s, err := os.ReadFile(filepath.Join(dir, "go.sum"))
		if err != nil {
			return err
		}
		sums = append(sums, s)
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
	bin := filepath.Join(tmp, "consumer-bin")
	if _, err := goCmd(consumer, env, "build", "-o", bin, "."); err != nil {
		return err
	}
	ran := exec.Command(bin)
	printed, err := ran.Output()
	if err != nil {
		return fmt.Errorf("the consumer: %w", err)
	}
	if err := checkBuilt(printed, core, otel); err != nil {
		return err
	}
	fmt.Printf("release-check: a module outside the repository (go %s) built and ran with\n", coreMod.goLine)
	fmt.Printf("  %s %s %s (%s)\n  %s %s %s (the working tree)\n",
		core.path, core.version, core.sum(), from, otel.path, otel.version, otel.sum())
	fmt.Println("from a local file module proxy, unreplaced; go mod tidy kept its go line")
	return nil
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
// else from the working tree; from says which.
func coreAt(root, modPath, version string) (m *module, from string, err error) {
	if _, err := git(root, "rev-parse", "-q", "--verify", "refs/tags/"+version+"^{commit}"); err == nil {
		m, err = fromTag(root, "", version, modPath, version)
		return m, "its tag", err
	}
	m, err = fromWorkTree(root, "", modPath, version)
	return m, "the working tree: not tagged yet", err
}

// outsideEnv is the environment of an outside user's go commands: no
// workspace, our modules from proxy and nowhere else (a module cache of
// its own, our modules not checked against the checksum database), the
// others from the module cache or GOPROXY, the local toolchain.
func outsideEnv(tmp, proxy string) ([]string, error) {
	goenv, err := goCmd("", os.Environ(), "env", "GOMODCACHE", "GOPROXY")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(goenv)), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("go env: %q", goenv)
	}
	proxies := "file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(lines[0], "cache", "download"))
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
	return append(env, "GOWORK=off", "GOPROXY="+proxies, "GOMODCACHE="+filepath.Join(tmp, "modcache"),
		"GOFLAGS=-mod=mod -modcacherw", "GONOSUMDB=github.com/gocurator/curator", "GOTOOLCHAIN=local"), nil
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
