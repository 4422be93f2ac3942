package netpart

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrUnavailable is wrapped by Available's error, and by New's when the
// machine does not allow network namespaces: the caller should skip.
var ErrUnavailable = errors.New("netpart: network namespaces unavailable")

// ErrExists is wrapped by New's error when names or addresses of the net
// exist already, and no run of the prefix that has exited left them: they
// are someone else's, or no owner was recorded.
var ErrExists = errors.New("netpart: the net's names or addresses exist already")

// ErrInUse is wrapped by New's error when the net of the prefix exists
// and the process that built it still runs: another run, which a caller
// may wait for or skip.
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

// leftovers lists what of the net exists already: namespaces and root
// links named with the prefix, and root addresses or routes in the subnet.
func (n *Net) leftovers() []string {
	var out []string
	if entries, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), n.prefix) {
				out = append(out, "namespace "+e.Name())
			}
		}
	}
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, n.prefix) {
			out = append(out, "link "+i.Name)
		}
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

// ownerPath is the file that records which process built the net of a
// prefix: "<pid> <start time in clock ticks>".
func (n *Net) ownerPath() string {
	return filepath.Join(os.TempDir(), "gocurator-netpart-"+strings.TrimSuffix(n.prefix, "-")+".owner")
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

// recordOwner writes the owner file for this process.
func (n *Net) recordOwner() error {
	st, err := startTime(os.Getpid())
	if err != nil {
		return err
	}
	return os.WriteFile(n.ownerPath(), []byte(fmt.Sprintf("%d %s\n", os.Getpid(), st)), 0o644)
}

// ownerGone reports whether the owner file names a process that no longer
// runs (and so left its net behind), and describes the owner, and whether
// it still runs.
func (n *Net) ownerGone() (gone bool, owner string, alive bool) {
	b, err := os.ReadFile(n.ownerPath())
	if err != nil {
		return false, "no owner recorded in " + n.ownerPath(), false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false, fmt.Sprintf("owner file %s reads %q", n.ownerPath(), b), false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil {
		return false, fmt.Sprintf("owner file %s reads %q", n.ownerPath(), b), false
	}
	if st, err := startTime(pid); err == nil && st == f[1] {
		return false, fmt.Sprintf("its owner, pid %d, still runs", pid), true
	}
	return true, fmt.Sprintf("its owner, pid %d, has exited", pid), false
}

// sweep deletes every namespace and root link named with the prefix (and
// nothing else), and the owner file.
func (n *Net) sweep() error {
	var errs []error
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		if strings.HasPrefix(i.Name, n.prefix) {
			errs = append(errs, run("ip", "link", "del", i.Name))
		}
	}
	if entries, err := os.ReadDir(netnsDir); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), n.prefix) {
				errs = append(errs, run("ip", "netns", "del", e.Name()))
			}
		}
	}
	if err := os.Remove(n.ownerPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
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

// removeOwner removes the owner file if it names this process.
func (n *Net) removeOwner() error {
	b, err := os.ReadFile(n.ownerPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if f := strings.Fields(string(b)); len(f) > 0 && f[0] == strconv.Itoa(os.Getpid()) {
		return os.Remove(n.ownerPath())
	}
	return nil
}
