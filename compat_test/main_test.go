// Package compat_test proves that gocurator and live Apache Curator 5.4
// processes share the same lock trees: real JVMs running Curator's recipes
// (internal/curatorpeer/CuratorPeer.java, compiled here with javac against Debian's Curator
// jars) and this library contend for the same locks on one real ZooKeeper.
//
// The tests need Java 17+ with javac and the Curator 5.4 and ZooKeeper jars.
// They fail, rather than skip, when these are missing: see installHint.
package compat_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
)

// installHint says how to get what the tests need.
const installHint = "the compat tests run real Java Curator 5.4 processes; install Java (17+, with javac) " +
	"and Debian's Curator and ZooKeeper jars: `sudo apt-get install default-jdk-headless zookeeper " +
	"libcurator-recipes-java libslf4j-java` (Debian 12: Curator 5.4, ZooKeeper 3.8, OpenJDK 17), or set " + curatorClasspathEnv +
	" to a classpath holding Curator 5.4 (recipes, framework, client), ZooKeeper and their dependencies, " +
	"and JAVA_HOME to a JDK"

// curatorClasspathEnv names the environment variable that replaces the
// Debian jars on the peer's classpath.
const curatorClasspathEnv = "CURATOR_CLASSPATH"

// The Debian jars. Their manifests' Class-Path entries pull in Guava,
// slf4j-api and ZooKeeper's own dependencies.
var debianJars = []string{
	"/usr/share/java/curator-recipes.jar",
	"/usr/share/java/curator-framework.jar",
	"/usr/share/java/curator-client.jar",
	"/usr/share/java/zookeeper.jar",
	"/usr/share/java/slf4j-simple.jar", // Curator's and ZooKeeper's logs to stderr
}

const peerSource = "../internal/curatorpeer/CuratorPeer.java"

var (
	// server is the real ZooKeeper every test shares. Empty containers are
	// reaped every 200 ms, so both languages meet vanished parents often.
	server *zktest.Server
	// javaBin runs the peers; peerClasspath holds the compiled peer and Curator.
	javaBin       string
	peerClasspath string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	start := time.Now()
	var err error
	javaBin, peerClasspath, err = preparePeer()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat_test: %v\n", err)
		return 1
	}
	s, err := zktest.StartServer(zktest.WithTickTime(100*time.Millisecond),
		zktest.WithSessionTimeoutRange(200*time.Millisecond, 30*time.Second),
		zktest.WithContainerCheckInterval(200*time.Millisecond))
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat_test: starting ZooKeeper: %v\n", err)
		if errors.Is(err, zktest.ErrNotInstalled) {
			fmt.Fprintln(os.Stderr, installHint)
		}
		return 1
	}
	server = s
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "compat_test: Java peer and ZooKeeper ready in %v\n", time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	s.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	return code
}

// jdkTool finds a JDK program: $JAVA_HOME/bin/<name>, else <name> on PATH.
func jdkTool(name string) (string, error) {
	if home := os.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found (JAVA_HOME unset or wrong, and no %s on PATH): %s", name, name, installHint)
	}
	return p, nil
}

// curatorClasspath returns $CURATOR_CLASSPATH, or Debian's jars if all are
// installed.
func curatorClasspath() (string, error) {
	if cp := os.Getenv(curatorClasspathEnv); cp != "" {
		return cp, nil
	}
	for _, j := range debianJars {
		if _, err := os.Stat(j); err != nil {
			return "", fmt.Errorf("%s is missing: %s", j, installHint)
		}
	}
	return strings.Join(debianJars, string(os.PathListSeparator)), nil
}

// preparePeer finds Java and Curator and compiles the peer, once per source
// and classpath: the classes are cached under the user's cache directory
// (javac takes seconds), keyed by a hash of the source, the classpath and
// the jars' sizes and times.
func preparePeer() (java, classpath string, err error) {
	java, err = jdkTool("java")
	if err != nil {
		return "", "", err
	}
	javac, err := jdkTool("javac")
	if err != nil {
		return "", "", err
	}
	cp, err := curatorClasspath()
	if err != nil {
		return "", "", err
	}
	src, err := os.ReadFile(peerSource)
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	h.Write(src)
	fmt.Fprintf(h, "\x00%s\x00%s\x00", javac, cp)
	for _, j := range filepath.SplitList(cp) {
		if st, err := os.Stat(j); err == nil {
			fmt.Fprintf(h, "%s %d %d\x00", j, st.Size(), st.ModTime().UnixNano())
		}
	}
	key := hex.EncodeToString(h.Sum(nil))[:16]

	root, err := os.UserCacheDir()
	if err != nil {
		root = os.TempDir()
	}
	root = filepath.Join(root, "gocurator-compat")
	classes := filepath.Join(root, key)
	if _, err := os.Stat(filepath.Join(classes, "CuratorPeer.class")); err == nil {
		return java, classes + string(os.PathListSeparator) + cp, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", "", err
	}
	tmp, err := os.MkdirTemp(root, "build-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	out, err := exec.Command(javac, "-nowarn", "-encoding", "UTF-8", "-d", tmp, "-cp", cp, peerSource).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("javac %s: %v\n%s\n%s", peerSource, err, out, installHint)
	}
	if err := os.Rename(tmp, classes); err != nil {
		// Another test binary may have put the same classes there first.
		if _, statErr := os.Stat(filepath.Join(classes, "CuratorPeer.class")); statErr != nil {
			return "", "", err
		}
	}
	return java, classes + string(os.PathListSeparator) + cp, nil
}

// newClient connects to addr (the shared server if "") and closes the
// client when the test ends.
func newClient(t testing.TB, addr string, opts ...framework.Option) *framework.Client {
	t.Helper()
	if addr == "" {
		addr = server.Addr()
	}
	return testclient.New(t, addr, opts...)
}
