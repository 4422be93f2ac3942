package netpart

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// The test binary is also the programs the tests run in the nodes'
// namespaces (helper, below): NETPART_HELPER names which.
func TestMain(m *testing.M) {
	if h := os.Getenv("NETPART_HELPER"); h != "" {
		os.Exit(helper(h, os.Args[len(os.Args)-2:]))
	}
	os.Exit(m.Run())
}

const (
	testPrefix = "gcpt-"
	tcpPort    = "7000"
	udpPort    = "7001"
	dialBound  = time.Second // a dial through a cut times out after it
)

var testSubnet = netip.MustParsePrefix("198.19.202.0/24")

// helper runs one helper program: "serve <node> -" answers every TCP
// connection on tcpPort with the node's name and prints every UDP datagram
// to udpPort ("udp <payload>"), "tcp <addr> -" dials addr's tcpPort and
// prints what it reads, "udp <addr> <payload>" sends one datagram.
func helper(what string, args []string) int {
	switch what {
	case "serve":
		l, err := net.Listen("tcp", ":"+tcpPort)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		u, err := net.ListenPacket("udp", ":"+udpPort)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		fmt.Println("ready")
		go func() {
			buf := make([]byte, 100)
			for {
				k, _, err := u.ReadFrom(buf)
				if err != nil {
					return
				}
				fmt.Println("udp", string(buf[:k]))
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return 1
			}
			io.WriteString(c, args[0])
			c.Close()
		}
	case "tcp":
		c, err := net.DialTimeout("tcp", net.JoinHostPort(args[0], tcpPort), dialBound)
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		fmt.Println(string(b))
		return 0
	case "udp":
		c, err := net.Dial("udp", net.JoinHostPort(args[0], udpPort))
		if err != nil {
			fmt.Println("error", err)
			return 1
		}
		defer c.Close()
		if _, err := io.WriteString(c, args[1]); err != nil {
			fmt.Println("error", err)
			return 1
		}
		return 0
	}
	return 2
}

// server is a "serve" helper running in a node's namespace.
type server struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	udp []string
	got chan struct{} // closed and replaced at each datagram
}

// serve starts a "serve" helper in node's namespace and waits until it
// listens; the test stops it (by its pid) before it closes the net.
func serve(t *testing.T, n *Net, node string) *server {
	cmd := helperCmd(n, node, "serve", node, "-")
	out, err := cmd.StdoutPipe()
	testutil.Must(t, err)
	testutil.Must(t, cmd.Start())
	s := &server{cmd: cmd, got: make(chan struct{})}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if p, ok := strings.CutPrefix(line, "udp "); ok {
				s.mu.Lock()
				s.udp = append(s.udp, p)
				close(s.got)
				s.got = make(chan struct{})
				s.mu.Unlock()
				continue
			}
			select {
			case ready <- line:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	if line := testutil.Recv(t, ready, "the helper in "+node); line != "ready" {
		t.Fatalf("the helper in %s: %s", node, line)
	}
	return s
}

// waitUDP waits for the datagram payload and returns the datagrams node had
// received before it.
func (s *server) waitUDP(t *testing.T, payload string) []string {
	for {
		s.mu.Lock()
		i, got := slices.Index(s.udp, payload), s.got
		before := slices.Clone(s.udp[:max(i, 0)])
		s.mu.Unlock()
		if i >= 0 {
			return before
		}
		testutil.Recv(t, got, "datagram "+payload)
	}
}

func helperCmd(n *Net, node, what string, args ...string) *exec.Cmd {
	w := n.Wrap(node)
	cmd := exec.Command(w[0], append(w[1:], append([]string{os.Args[0], "-test.run=^$"}, args...)...)...)
	cmd.Env = append(os.Environ(), "NETPART_HELPER="+what)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// reaches reports whether a process in from's namespace opens a TCP
// connection to node to (and reads its name) within dialBound.
func reaches(t *testing.T, n *Net, from, to string) bool {
	out, err := helperCmd(n, from, "tcp", n.Addr(to), "-").CombinedOutput()
	if err == nil && strings.TrimSpace(string(out)) != to {
		t.Fatalf("%s dialled %s and read %q", from, to, out)
	}
	return err == nil
}

// observes reports whether the test process reaches node.
func observes(n *Net, node string) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(n.Addr(node), tcpPort), dialBound)
	if err == nil {
		c.Close()
	}
	return err == nil
}

func newTestNet(t *testing.T, nodes ...string) *Net {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	n, err := New(Config{Prefix: testPrefix, Subnet: testSubnet, Nodes: nodes})
	if errors.Is(err, ErrUnavailable) {
		t.Skip(err)
	}
	testutil.Must(t, err)
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Error(err)
		}
	})
	return n
}

// A net joins every node and the observer; Split cuts groups apart both
// ways, never from the observer; OneWay drops one direction only (a
// datagram sent through the cut never arrives, one sent back does); Heal
// restores everything. A program run through Wrap is the process ip(8)
// started, in the node's namespace.
func TestNetCutsAndHeals(t *testing.T) {
	testutil.CheckLeaks(t)
	n := newTestNet(t, "a", "b", "c")
	srv := map[string]*server{}
	for _, node := range n.Nodes() {
		srv[node] = serve(t, n, node)
	}
	nsOf := func(path string) string {
		s, err := os.Readlink(path)
		testutil.Must(t, err)
		return s
	}
	var st syscall.Stat_t
	testutil.Must(t, syscall.Stat("/run/netns/"+testPrefix+"b", &st))
	if got, want := nsOf(fmt.Sprintf("/proc/%d/ns/net", srv["b"].cmd.Process.Pid)), fmt.Sprintf("net:[%d]", st.Ino); got != want {
		t.Fatalf("the helper run through Wrap(b) (pid %d) is in %s, not b's namespace %s", srv["b"].cmd.Process.Pid, got, want)
	}
	if nsOf("/proc/self/ns/net") == fmt.Sprintf("net:[%d]", st.Ino) {
		t.Fatal("the test runs in b's namespace")
	}

	check := func(when string, want map[[2]string]bool) {
		t.Helper()
		for pair, ok := range want {
			if got := reaches(t, n, pair[0], pair[1]); got != ok {
				t.Errorf("%s: %s reaches %s: %v, want %v", when, pair[0], pair[1], got, ok)
			}
		}
		for _, node := range n.Nodes() {
			if !observes(n, node) {
				t.Errorf("%s: the observer does not reach %s", when, node)
			}
		}
	}
	check("joined", map[[2]string]bool{{"a", "b"}: true, {"b", "c"}: true, {"c", "a"}: true})

	testutil.Must(t, n.Apply(Split([]string{"a"}, []string{"b", "c"})))
	check("a split off", map[[2]string]bool{{"a", "b"}: false, {"c", "a"}: false, {"b", "c"}: true})

	testutil.Must(t, n.Apply(OneWay([]string{"a"}, []string{"b"})))
	send := func(from, to, payload string) {
		t.Helper()
		if out, err := helperCmd(n, from, "udp", n.Addr(to), payload).CombinedOutput(); err != nil {
			t.Fatalf("udp %s>%s: %v %s", from, to, err, out)
		}
	}
	send("a", "b", "lost")
	send("b", "a", "back")
	srv["a"].waitUDP(t, "back")
	testutil.Must(t, n.Heal())
	send("a", "b", "healed")
	// A datagram has passed the bridge, or been dropped there, by the time
	// its send returns: "lost" would have arrived before "healed".
	if before := srv["b"].waitUDP(t, "healed"); slices.Contains(before, "lost") {
		t.Errorf("a>b was cut one way, yet b received %q", before)
	}
	check("healed", map[[2]string]bool{{"a", "b"}: true, {"b", "a"}: true})
}

// New refuses to build over a net of its prefix that a live process owns,
// or over its names with no owner recorded; it sweeps what a run that
// exited recorded and left behind, and only that: a namespace or a link
// that merely starts with the prefix is not the net's, neither refused nor
// swept. Close leaves nothing, and unlocks the prefix.
func TestNetRefusesAndSweeps(t *testing.T) {
	testutil.CheckLeaks(t)
	// Another's, whose names start with the prefix: never the net's.
	testutil.Must(t, run("ip", "netns", "add", testPrefix+"other"))
	t.Cleanup(func() { run("ip", "netns", "del", testPrefix+"other") })
	testutil.Must(t, run("ip", "link", "add", testPrefix+"x0", "type", "veth", "peer", "name", testPrefix+"x1"))
	t.Cleanup(func() { run("ip", "link", "del", testPrefix+"x0") })
	others := func(when string) {
		t.Helper()
		if _, err := os.Stat("/run/netns/" + testPrefix + "other"); err != nil {
			t.Errorf("%s: the namespace %sother, not the net's, is gone: %v", when, testPrefix, err)
		}
		if _, err := net.InterfaceByName(testPrefix + "x0"); err != nil {
			t.Errorf("%s: the link %sx0, not the net's, is gone: %v", when, testPrefix, err)
		}
	}

	n := newTestNet(t, "a")
	if _, err := New(Config{Prefix: testPrefix, Subnet: testSubnet, Nodes: []string{"a"}}); !errors.Is(err, ErrInUse) ||
		!strings.Contains(err.Error(), "still runs") {
		t.Fatalf("a second net over a live one: %v", err)
	}
	testutil.Must(t, n.Close())
	if left := n.leftovers(n.names()); len(left) > 0 {
		t.Fatalf("left after Close: %v", left)
	}
	others("after Close")

	// One of the net's names, with no owner recorded: refused.
	testutil.Must(t, run("ip", "netns", "add", testPrefix+"a"))
	t.Cleanup(func() { run("ip", "netns", "del", testPrefix+"a") })
	if _, err := New(Config{Prefix: testPrefix, Subnet: testSubnet, Nodes: []string{"a"}}); !errors.Is(err, ErrExists) ||
		!strings.Contains(err.Error(), "no owner recorded") {
		t.Fatalf("a net over remains of no known owner: %v", err)
	}
	// Remains of an owner that exited, as it recorded them: swept, the
	// names of a node this run does not have too.
	testutil.Must(t, run("ip", "netns", "add", testPrefix+"old"))
	t.Cleanup(func() { run("ip", "netns", "del", testPrefix+"old") })
	dead := exec.Command("true")
	testutil.Must(t, dead.Run())
	testutil.Must(t, os.WriteFile(n.ownerPath(), fmt.Appendf(nil, "%d 1\nnetns %sa\nnetns %sold\n", dead.Process.Pid, testPrefix, testPrefix), 0o644))
	m := newTestNet(t, "a")
	if _, err := os.Stat("/run/netns/" + testPrefix + "old"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the remains were not swept: %v", err)
	}
	others("after a sweep")
	testutil.Must(t, m.Close())
	if _, err := os.Stat(m.ownerPath()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the owner file is left: %v", err)
	}
	others("after the second Close")
}

// Two New calls of one prefix at once: one builds the net, the other is
// told it is in use (ErrInUse: not ErrUnavailable, which would make a test
// skip), and builds and deletes nothing: the winner's net stands whole.
func TestConcurrentNewOfOnePrefix(t *testing.T) {
	testutil.CheckLeaks(t)
	if err := Available(); err != nil {
		t.Skip(err)
	}
	for round := range 3 {
		start := make(chan struct{})
		type result struct {
			n   *Net
			err error
		}
		results := make(chan result, 2)
		for range 2 {
			go func() {
				<-start
				n, err := New(Config{Prefix: testPrefix, Subnet: testSubnet, Nodes: []string{"a", "b"}})
				results <- result{n, err}
			}()
		}
		close(start)
		var won []*Net
		var lost []error
		for range 2 {
			r := testutil.Recv(t, results, "a New")
			if r.err != nil {
				lost = append(lost, r.err)
			} else {
				won = append(won, r.n)
			}
		}
		for _, n := range won {
			t.Cleanup(func() { n.Close() })
		}
		if len(won) != 1 || len(lost) != 1 || !errors.Is(lost[0], ErrInUse) {
			t.Fatalf("round %d: %d nets built, errors %v; want one net, and ErrInUse for the other", round, len(won), lost)
		}
		var standing []string // of the winner's names
		for _, l := range won[0].leftovers(won[0].names()) {
			if strings.HasPrefix(l, "namespace ") || strings.HasPrefix(l, "link ") {
				standing = append(standing, l)
			}
		}
		if len(standing) != len(won[0].names()) {
			t.Fatalf("round %d: of the winner's net, once the other New returned, only %v of %v", round, standing, won[0].names())
		}
		testutil.Must(t, won[0].Apply(OneWay([]string{"a"}, []string{"b"}))) // its bridge's namespace and table are there
		testutil.Must(t, won[0].Close())
	}
}

// The shapes of cuts.
func TestLinks(t *testing.T) {
	got := Split([]string{"a"}, []string{"b", "c"}, []string{"d"})
	want := []Link{{"a", "b"}, {"a", "c"}, {"b", "a"}, {"c", "a"}, {"a", "d"}, {"d", "a"}, {"b", "d"}, {"c", "d"}, {"d", "b"}, {"d", "c"}}
	if !slices.Equal(got, want) {
		t.Fatalf("Split: %v", got)
	}
	if got := OneWay([]string{"a", "b"}, []string{"b"}); !slices.Equal(got, []Link{{"a", "b"}}) {
		t.Fatalf("OneWay: %v", got)
	}
}
