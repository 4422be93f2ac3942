package zktest

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WithHosts puts a server on another address, on its every port (and only
// there); WithCommandWrapper runs its JVM under a command that execs it, so
// that PID is the JVM's.
func TestHostsAndWrapper(t *testing.T) {
	var ids []int
	s := NewServer(t, WithHosts("127.0.0.2"), WithCommandWrapper(func(id int) []string {
		ids = append(ids, id)
		return []string{"env", "ZKTEST_WRAPPED=" + strconv.Itoa(id)}
	}))
	if host, _, _ := net.SplitHostPort(s.Addr()); host != "127.0.0.2" {
		t.Fatalf("Addr %s", s.Addr())
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/environ")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if len(ids) != 1 || ids[0] != 1 || !strings.Contains(string(env), "ZKTEST_WRAPPED=1\x00") {
		t.Fatalf("the wrapper was called for %v; pid %d's environment lacks ZKTEST_WRAPPED=1", ids, s.PID())
	}
	conn, _ := connect(t, s.ConnectString(), 5*time.Second)
	if _, err := conn.Create("/here", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port())), time.Second); err == nil {
		c.Close()
		t.Fatal("the server listens on 127.0.0.1 too")
	}
}

// An ensemble needs an address per member, and its peer links need loopback.
func TestHostsEnsembleRefused(t *testing.T) {
	if _, err := StartEnsemble(3, WithHosts("127.0.0.2", "127.0.0.3")); err == nil || !strings.Contains(err.Error(), "2 addresses for 3 members") {
		t.Fatalf("two hosts for three members: %v", err)
	}
	if _, err := StartEnsemble(1, WithHosts("127.0.0.2"), WithPeerLinks()); err == nil || !strings.Contains(err.Error(), "WithPeerLinks") {
		t.Fatalf("hosts with peer links: %v", err)
	}
}
