package netpart

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrUnavailable is wrapped by Available's error, and by New's when the
// machine does not allow network namespaces: the caller should skip.
var ErrUnavailable = errors.New("netpart: network namespaces unavailable")

// ErrExists is wrapped by New's error when names or addresses of the net
// exist already, and no run of the prefix that has exited left them: they
// are someone else's, or no owner was recorded.
var ErrExists = errors.New("netpart: the net's names or addresses exist already")

// ErrInUse is wrapped by New's error when the net of the prefix is
// another's: a run whose net stands or is being built (it holds the
// prefix's owner file), which a caller may wait for or skip.
var ErrInUse = errors.New("netpart: the net is in use by another run")

// Available reports whether a net can be built here: root, ip (iproute2)
// and nft (nftables) on PATH. The error wraps ErrUnavailable and says what
// is missing, in one line.
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: not root (network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN)", ErrUnavailable)
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%w: no %s on PATH (apt-get install -y iproute2 nftables)", ErrUnavailable, tool)
		}
	}
	return nil
}

// names are what the net of n makes in this namespace, each as "netns
// NAME" or "link NAME": a namespace per node and the bridge's, and the
// observer's link. Nothing else is the net's, whatever its name: a prefix
// only starts the names, and another's link may start with it too.
func (n *Net) names() []string {
	out := []string{"netns " + n.ns("br")}
	for _, node := range n.nodes {
		out = append(out, "netns "+n.ns(node))
	}
	return append(out, "link "+n.prefix+"obs")
}

// leftovers lists what of names (as names returns them) exists already,
// and any root address or route in the net's subnet.
func (n *Net) leftovers(names []string) []string {
	var out []string
	for _, name := range names {
		kind, name, _ := strings.Cut(name, " ")
		switch kind {
		case "netns":
			if _, err := os.Lstat(filepath.Join(netnsDir, name)); err == nil {
				out = append(out, "namespace "+name)
			}
		case "link":
			if _, err := net.InterfaceByName(name); err == nil {
				out = append(out, "link "+name)
			}
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Overlaps(n.subnet) {
				out = append(out, fmt.Sprintf("address %s on %s", a, i.Name))
			}
		}
	}
	routes, _ := exec.Command("ip", "-o", "-4", "route", "show", "table", "all").Output()
	for _, line := range strings.Split(string(routes), "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && !strings.ContainsAny(f[0], "./") { // local, broadcast, ...: the destination follows
			f = f[1:]
		}
		if len(f) == 0 {
			continue
		}
		p, err := netip.ParsePrefix(f[0])
		if err != nil {
			a, aerr := netip.ParseAddr(f[0])
			if aerr != nil {
				continue
			}
			p = netip.PrefixFrom(a, 32)
		}
		if p.Overlaps(n.subnet) {
			out = append(out, "route "+line)
		}
	}
	return out
}

// ownerPath is the owner file of the nets of a prefix: locked (flock) by
// the process whose net of the prefix stands, and recording it (owner).
func (n *Net) ownerPath() string {
	return filepath.Join(os.TempDir(), "gocurator-netpart-"+strings.TrimSuffix(n.prefix, "-")+".owner")
}

// owner is what an owner file records: the process that built the net
// ("<pid> <start time in clock ticks>", the first line), and the names it
// made (names, a line each).
type owner struct {
	pid   int
	start string
	names []string
}

// readOwner parses f's record; ok is false if f records no owner.
func readOwner(f *os.File) (o owner, ok bool, err error) {
	b, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<20))
	if err != nil {
		return o, false, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	first := strings.Fields(lines[0])
	if len(first) != 2 {
		return o, false, nil
	}
	if o.pid, err = strconv.Atoi(first[0]); err != nil {
		return o, false, nil
	}
	o.start, o.names = first[1], lines[1:]
	return o, true, nil
}

// describe says who o is, and whether it still runs.
func (o owner) describe(path string) (desc string, alive bool) {
	if st, err := startTime(o.pid); err == nil && st == o.start {
		return fmt.Sprintf("its owner, pid %d, still runs", o.pid), true
	}
	return fmt.Sprintf("its owner, pid %d, has exited (%s)", o.pid, path), false
}

// lockOwner opens the owner file and locks it for this process: it fails
// with ErrInUse while another process (or another Net of this one) holds
// it, naming the owner it records.
func (n *Net) lockOwner() (*os.File, error) {
	for {
		f, err := os.OpenFile(n.ownerPath(), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("netpart: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			desc := "its owner runs"
			if o, ok, _ := readOwner(f); ok {
				desc, _ = o.describe(n.ownerPath())
			}
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, fmt.Errorf("%w (%s): the net of prefix %q", ErrInUse, desc, n.prefix)
			}
			return nil, fmt.Errorf("netpart: locking %s: %w", n.ownerPath(), err)
		}
		// Its owner's Close may have removed the file between the open and
		// the lock: then the lock is of no file anyone else opens.
		var locked, named syscall.Stat_t
		if syscall.Fstat(int(f.Fd()), &locked) == nil && syscall.Stat(n.ownerPath(), &named) == nil &&
			locked.Dev == named.Dev && locked.Ino == named.Ino {
			return f, nil
		}
		f.Close()
	}
}

// startTime returns the start time of process pid (clock ticks since boot,
// field 22 of /proc/<pid>/stat), which tells it from a later process that
// reused its pid.
func startTime(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return "", fmt.Errorf("netpart: /proc/%d/stat: %q", pid, s)
	}
	return f[19], nil
}

// recordOwner writes into the owner file, which this process has locked,
// this process and the names the net makes.
func (n *Net) recordOwner() error {
	st, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	if err := n.owner.Truncate(0); err != nil {
		return err
	}
	_, err = n.owner.WriteAt(fmt.Appendf(nil, "%d %s\n%s\n", os.Getpid(), st, strings.Join(n.names(), "\n")), 0)
	return err
}

// sweep deletes names (as names returns them), and nothing else.
func sweep(names []string) error {
	var errs []error
	for _, name := range names {
		kind, name, _ := strings.Cut(name, " ")
		switch kind {
		case "netns":
			if _, err := os.Lstat(filepath.Join(netnsDir, name)); err == nil {
				errs = append(errs, run("ip", "netns", "del", name))
			}
		case "link":
			if _, err := net.InterfaceByName(name); err == nil {
				errs = append(errs, run("ip", "link", "del", name))
			}
		}
	}
	return errors.Join(errs...)
}

// run runs a command and returns an error that holds its output.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("netpart: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// releaseOwner removes the owner file and unlocks it (closing it).
func (n *Net) releaseOwner() error {
	if n.owner == nil {
		return nil
	}
	err := os.Remove(n.ownerPath())
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return errors.Join(err, n.owner.Close())
}
