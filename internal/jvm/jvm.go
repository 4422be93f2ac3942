// Package jvm finds Java and Debian's Curator jars, compiles a Java source
// once into a cache, and runs JVMs as children that never outlive us: the
// compatibility tests' Curator peers, the benchmark's CuratorBench, the demo's
// Java worker and framework/zktest's ZooKeeper servers all start here.
package jvm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// InstallHint says how to get everything a JVM of ours needs on
// Debian/Ubuntu (Debian 12: OpenJDK 17, Curator 5.4, ZooKeeper 3.8).
const InstallHint = "install Java and Debian's Curator and ZooKeeper jars with " +
	"`sudo apt-get install default-jdk-headless zookeeper libcurator-recipes-java libslf4j-java` (`make deps` does it)"

// ErrNotInstalled is wrapped by the errors that say a JDK program or a jar
// is missing.
var ErrNotInstalled = errors.New("jvm: not installed")

// CuratorClasspathEnv names the environment variable that, when set,
// replaces Debian's jars as the Curator classpath.
const CuratorClasspathEnv = "CURATOR_CLASSPATH"

// debianCuratorJars are Debian's Curator jars, ZooKeeper's, and the slf4j
// binding that sends Curator's and ZooKeeper's logs to stderr. The jars'
// manifests' Class-Path entries pull in Guava, slf4j-api and ZooKeeper's
// own dependencies.
var debianCuratorJars = []string{
	"/usr/share/java/curator-recipes.jar",
	"/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar",
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/slf4j-simple.jar",
}

// Tool finds a JDK program ("java", "javac"): $JAVA_HOME/bin/<name>, else
// <name> on PATH.
func Tool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found (JAVA_HOME unset or wrong, and no %s on PATH); %s",
			ErrNotInstalled, name, name, InstallHint)
	}
	return p, nil
}

// CuratorClasspath returns $CURATOR_CLASSPATH, or Debian's Curator 5.4 and
// ZooKeeper jars (with slf4j-simple, which logs to stderr) if all are
// installed.
func CuratorClasspath() (string, error) {
	if cp := os.Getenv(CuratorClasspathEnv); cp != "" {
		return cp, nil
	}
	for _, j := range debianCuratorJars {
		if _, err := os.Stat(j); err != nil {
			return "", fmt.Errorf("%w: %s is missing; %s, or set %s to a classpath holding Curator 5.4 "+
				"(recipes, framework, client), ZooKeeper and their dependencies", ErrNotInstalled, j, InstallHint, CuratorClasspathEnv)
		}
	}
	return strings.Join(debianCuratorJars, string(os.PathListSeparator)), nil
}

// Compile compiles src, the source of the public class className, with
// javac against classpath, and returns a classpath that holds the compiled
// classes and then classpath. It compiles once: the classes are kept under
// the user's cache directory (javac takes seconds), keyed by a hash of the
// source, javac's path, the classpath and its jars' sizes and times, so
// another process, or a later run, reuses them.
func Compile(ctx context.Context, className string, src []byte, classpath string) (string, error) {
	javac, err := Tool("javac")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(src)
	fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00", className, javac, classpath)
	for _, j := range filepath.SplitList(classpath) {
		if st, err := os.Stat(j); err == nil {
			fmt.Fprintf(h, "%s %d %d\x00", j, st.Size(), st.ModTime().UnixNano())
		}
	}
	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "gocurator-java")
	classes := filepath.Join(root, hex.EncodeToString(h.Sum(nil))[:16])
	withClasses := classes + string(os.PathListSeparator) + classpath
	compiled := func() bool {
		_, err := os.Stat(filepath.Join(classes, className+".class"))
		return err == nil
	}
	if compiled() {
		return withClasses, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	file := filepath.Join(tmp, className+".java")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		return "", err
	}
	out, err := exec.CommandContext(ctx, javac, "-nowarn", "-encoding", "UTF-8", "-implicit:none", "-proc:none",
		"-d", tmp, "-cp", classpath, file).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("javac %s.java: %v\n%s\n(it needs %s)", className, err, out, InstallHint)
	}
	if err := os.Remove(file); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, classes); err != nil && !compiled() {
		// Not there even though the rename failed: not another process
		// that put the same classes there first.
		return "", err
	}
	return withClasses, nil
}
