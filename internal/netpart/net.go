package netpart

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
)

// netnsDir is where ip(8) keeps the names of network namespaces.
const netnsDir = "/run/netns"

// Config is what New builds.
type Config struct {
	// Prefix starts every name the net makes (its namespaces, its link in
	// the test's namespace; at most 11 characters): each user of the
	// package has a prefix of its own, and one net of a prefix stands at a
	// time. New sweeps only the names a net of the prefix makes, never
	// another name that starts with it.
	Prefix string
	// Subnet holds the net's addresses: the observer's is its first
	// host address (.1), node i's the 10+i-th. It must lie in
	// 198.18.0.0/15 and be a /24 or larger.
	Subnet netip.Prefix
	// Nodes names the nodes, each a namespace of its own (at most 13
	// characters each).
	Nodes []string
}

// benchmarking is 198.18.0.0/15 (RFC 2544), the range every net's subnet
// must lie in.
var benchmarking = netip.MustParsePrefix("198.18.0.0/15")

// Net is a built net: a namespace per node and one for the bridge, and the
// observer's link in the test's own namespace. Its methods are safe for
// concurrent use.
type Net struct {
	prefix   string
	subnet   netip.Prefix
	nodes    []string
	addrs    map[string]netip.Addr
	observer netip.Addr
	table    string   // the nftables table in the bridge's namespace
	owner    *os.File // the prefix's owner file, locked (lockOwner) until Close
	made     []string // what build made, as names lists them: what Close deletes

	mu       sync.Mutex
	closed   bool
	closeErr error
}

// New builds the net of cfg. One net of a prefix stands at a time: New
// locks the prefix's owner file (in os.TempDir) until Close, and fails
// with an error wrapping ErrInUse while another process, or another Net of
// this one, holds it. It refuses if any of the net's names (its
// namespaces, its observer's link: those exact names, whatever else starts
// with the prefix), or an address or route in its subnet, exists already,
// with ErrExists; unless they are the remains of a run of the prefix that
// has exited, as its owner file records them, which it sweeps first. On
// failure it tears down what it built, and only that. Close it when done.
func New(cfg Config) (*Net, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	n := &Net{prefix: cfg.Prefix, subnet: cfg.Subnet.Masked(), nodes: slices.Clone(cfg.Nodes),
		addrs: map[string]netip.Addr{}, table: "netpart"}
	switch {
	case len(n.prefix) == 0 || len(n.prefix) > 11:
		return nil, fmt.Errorf("netpart: prefix %q: 1 to 11 characters", n.prefix)
	case !n.subnet.IsValid() || !n.subnet.Addr().Is4() || n.subnet.Bits() > 24 || !benchmarking.Contains(n.subnet.Addr()) ||
		n.subnet.Bits() < benchmarking.Bits():
		return nil, fmt.Errorf("netpart: subnet %v: a /24 or larger within %v", cfg.Subnet, benchmarking)
	case len(n.nodes) == 0 || len(n.nodes) > 200:
		return nil, fmt.Errorf("netpart: %d nodes: 1 to 200", len(n.nodes))
	}
	n.observer = n.subnet.Addr().Next()
	a := n.observer
	for range 9 {
		a = a.Next()
	}
	for _, node := range n.nodes {
		if node == "" || len(node) > 13 || strings.ContainsAny(node, " /") || n.addrs[node].IsValid() || node == "br" {
			return nil, fmt.Errorf("netpart: node name %q: 1 to 13 characters, no space or slash, not \"br\", unique", node)
		}
		a = a.Next()
		n.addrs[node] = a
	}
	owner, err := n.lockOwner()
	if err != nil {
		return nil, err
	}
	n.owner = owner
	if err := n.clearLeftovers(); err != nil {
		return nil, errors.Join(err, n.releaseOwner())
	}
	if err := n.recordOwner(); err != nil {
		return nil, errors.Join(fmt.Errorf("netpart: %w", err), n.releaseOwner())
	}
	if err := n.build(); err != nil {
		switch {
		case strings.Contains(err.Error(), "File exists"):
			// Made meanwhile by something that does not take the owner
			// file: not this run's, and not deleted by its Close.
			err = fmt.Errorf("%w: %w", ErrExists, err)
		case strings.Contains(err.Error(), "netns add"):
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		if cerr := n.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return n, nil
}

// clearLeftovers makes sure that nothing of the net exists before it is
// built (the owner file locked): the names it makes, and the names the last
// owner recorded, if that run has exited, are swept; anything else of the
// net's (a name of its, an address or route in its subnet) fails New, with
// ErrInUse if the owner recorded still runs (a run that did not lock the
// file), else ErrExists.
func (n *Net) clearLeftovers() error {
	prev, recorded, err := readOwner(n.owner)
	if err != nil {
		return fmt.Errorf("netpart: %w", err)
	}
	names := n.names()
	if recorded {
		names = append(names, prev.names...)
	}
	left := n.leftovers(names)
	if len(left) == 0 {
		return nil
	}
	if !recorded {
		return fmt.Errorf("%w (no owner recorded in %s): %s; remove them (ip netns del <name>, ip link del <name>) if nothing uses them",
			ErrExists, n.ownerPath(), strings.Join(left, ", "))
	}
	desc, alive := prev.describe(n.ownerPath())
	if alive {
		return fmt.Errorf("%w (%s): %s", ErrInUse, desc, strings.Join(left, ", "))
	}
	if err := sweep(names); err != nil {
		return fmt.Errorf("netpart: sweeping what a run that exited left (%s): %w", strings.Join(left, ", "), err)
	}
	if left := n.leftovers(names); len(left) > 0 {
		return fmt.Errorf("%w, even after a sweep: %s", ErrExists, strings.Join(left, ", "))
	}
	return nil
}

// ns returns the name of node's namespace ("br": the bridge's).
func (n *Net) ns(node string) string { return n.prefix + node }

// build makes the namespaces, the bridge, a veth pair per node and the
// observer's, and the empty cut.
func (n *Net) build() error {
	br := n.ns("br")
	bits := fmt.Sprintf("/%d", n.subnet.Bits())
	steps := [][]string{
		{"netns", "add", br},
		{"-n", br, "link", "set", "lo", "up"},
		{"-n", br, "link", "add", "br0", "type", "bridge"},
		{"-n", br, "link", "set", "br0", "up"},
	}
	for _, node := range n.nodes {
		ns := n.ns(node)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"link", "add", "v-" + node, "netns", br, "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"-n", br, "link", "set", "v-" + node, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", n.addrs[node].String() + bits, "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"})
	}
	obs := n.prefix + "obs"
	steps = append(steps,
		[]string{"link", "add", obs, "type", "veth", "peer", "name", "v-obs", "netns", br},
		[]string{"-n", br, "link", "set", "v-obs", "master", "br0", "up"},
		[]string{"addr", "add", n.observer.String() + bits, "dev", obs},
		[]string{"link", "set", obs, "up"})
	for _, s := range steps {
		if err := run("ip", s...); err != nil {
			return err
		}
		switch {
		case s[0] == "netns" && s[1] == "add":
			n.made = append(n.made, "netns "+s[2])
		case s[0] == "link" && s[1] == "add" && s[2] == obs:
			n.made = append(n.made, "link "+obs)
		}
	}
	return n.nft(fmt.Sprintf(`table bridge %[1]s {
	set cut { type ipv4_addr . ipv4_addr; }
	chain forward { type filter hook forward priority 0; policy accept; ip saddr . ip daddr @cut drop; }
}
`, n.table))
}

// nft runs an nftables script in the bridge's namespace, as one transaction.
func (n *Net) nft(script string) error {
	cmd := exec.Command("ip", "netns", "exec", n.ns("br"), "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("netpart: nft: %w: %s\nscript:\n%s", err, strings.TrimSpace(string(out)), script)
	}
	return nil
}

// Nodes returns the nodes' names, in Config's order.
func (n *Net) Nodes() []string { return slices.Clone(n.nodes) }

// Addr returns node's address ("198.19.201.11"), or "" for no such node.
func (n *Net) Addr(node string) string {
	if a, ok := n.addrs[node]; ok {
		return a.String()
	}
	return ""
}

// Node returns the node whose address is addr, or "".
func (n *Net) Node(addr string) string {
	for node, a := range n.addrs {
		if a.String() == addr {
			return node
		}
	}
	return ""
}

// Observer returns the test process's own address on the net, which no cut
// touches: a server the nodes must always reach (a referee) listens there.
func (n *Net) Observer() string { return n.observer.String() }

// Wrap returns the command that runs a program in node's namespace: run
// Wrap(node) followed by the program and its arguments. ip(8) execs the
// program in its own process, so that its pid is the program's.
func (n *Net) Wrap(node string) []string { return []string{"ip", "netns", "exec", n.ns(node)} }

// Close removes the observer's link and every namespace of the net (what
// New made, nothing else), and the owner file, which it unlocks. The processes in the namespaces must have stopped first. It
// is idempotent.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.closeErr
	}
	n.closed = true
	var errs []error
	made := slices.Clone(n.made)
	slices.Reverse(made) // the observer's link, the nodes', the bridge's
	if err := sweep(made); err != nil {
		errs = append(errs, err)
	}
	if left := n.leftovers(n.made); len(left) > 0 {
		errs = append(errs, fmt.Errorf("netpart: left after Close: %s", strings.Join(left, ", ")))
	}
	if err := n.releaseOwner(); err != nil {
		errs = append(errs, err)
	}
	n.closeErr = errors.Join(errs...)
	return n.closeErr
}
