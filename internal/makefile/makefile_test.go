package makefile

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// root is the repository's root, where the Makefile is.
const root = "../.."

// makeRun runs make in the repository's root with args, and returns what it
// printed; a failure fails the test.
func makeRun(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory"}, args...)...)
	cmd.Dir = root
	cmd.Env = ownMake()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// ownMake is the environment for a make of the test's own: without the
// flags of a make the tests may run under (make test), -n included.
func ownMake() []string {
	var env []string
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); name != "MAKEFLAGS" && name != "MFLAGS" && name != "MAKELEVEL" {
			env = append(env, kv)
		}
	}
	return env
}

// `make zk-up`, for a user who only wants a trial server, installs what a
// ZooKeeper server needs (its jar and a Java runtime) and nothing of the
// test suites' (a JDK, Curator's jars, tmux, nftables, iproute2): make -n
// prints every command the target and its prerequisites would run,
// installs included.
func TestZKUpInstallsOnlyTheServer(t *testing.T) {
	plan := makeRun(t, "-n", "zk-up")
	for _, want := range []string{"libzookeeper-java", "default-jre-headless", "apt-get install"} {
		if !strings.Contains(plan, want) {
			t.Errorf("make zk-up would not install %s when missing:\n%s", want, plan)
		}
	}
	for _, unwanted := range []string{"libcurator-recipes-java", "default-jdk-headless", "tmux", "nftables", "iproute2", "javac"} {
		if strings.Contains(plan, unwanted) {
			t.Errorf("make zk-up would install %s, which a server does not need:\n%s", unwanted, plan)
		}
	}
	// deps still installs all of it, the server's included.
	deps := makeRun(t, "-n", "deps")
	for _, want := range []string{"libzookeeper-java", "libcurator-recipes-java", "default-jdk-headless", "tmux", "nftables", "iproute2"} {
		if !strings.Contains(deps, want) {
			t.Errorf("make deps would not install %s when missing:\n%s", want, deps)
		}
	}
}

// `make zk-up` starts a server that answers, and `make zk-down` stops it
// (its process gone), on a port and in a directory of the test's own.
func TestZKUpAndDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	testutil.Must(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	testutil.Must(t, l.Close())
	dir := filepath.Join(t.TempDir(), "zk")
	vars := []string{"ZK_PORT=" + port, "ZK_DIR=" + dir}
	t.Cleanup(func() {
		down := exec.Command("make", append([]string{"-C", root, "zk-down"}, vars...)...)
		down.Env = ownMake()
		down.Run()
	})

	out := makeRun(t, append([]string{"zk-up"}, vars...)...)
	if !strings.Contains(out, "ZooKeeper up") {
		t.Fatalf("make zk-up: %s", out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "zk.pid"))
	testutil.Must(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	testutil.Must(t, err)
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	testutil.Must(t, err)
	_, err = c.Write([]byte("ruok"))
	testutil.Must(t, err)
	reply := make([]byte, 4)
	_, err = c.Read(reply)
	c.Close()
	if err != nil || string(reply) != "imok" {
		t.Fatalf("the server on port %s answered ruok with %q, %v", port, reply, err)
	}

	if out := makeRun(t, append([]string{"zk-down"}, vars...)...); !strings.Contains(out, "stopped ZooKeeper") {
		t.Fatalf("make zk-down: %s", out)
	}
	testutil.Until(t, "the server's process gone", func() (bool, string) {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH), "pid " + strconv.Itoa(pid)
	})
}
