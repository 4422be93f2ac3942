package netpart

import (
	"errors"
	"fmt"
	"net/netip"
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
	// package has a prefix of its own, and New sweeps only names with it.
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
	table    string // the nftables table in the bridge's namespace

	mu       sync.Mutex
	closed   bool
	closeErr error
}

// New builds the net of cfg. It refuses if any of its names, or an address
// or route in its subnet, exists in this namespace already: with an error
// wrapping ErrInUse if the process that built them still runs, else
// ErrExists; unless they are the remains of a run of the same prefix whose
// process has exited, which it sweeps first. On failure it tears down what
// it built. Close it when done.
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
	if left := n.leftovers(); len(left) > 0 {
		gone, owner, alive := n.ownerGone()
		switch {
		case alive:
			return nil, fmt.Errorf("%w (%s): %s", ErrInUse, owner, strings.Join(left, ", "))
		case !gone:
			return nil, fmt.Errorf("%w (%s): %s; remove them (ip netns del <name>, ip link del <name>) if nothing uses them",
				ErrExists, owner, strings.Join(left, ", "))
		}
		if err := n.sweep(); err != nil {
			return nil, fmt.Errorf("netpart: sweeping what a run that exited left (%s): %w", strings.Join(left, ", "), err)
		}
		if left := n.leftovers(); len(left) > 0 {
			return nil, fmt.Errorf("%w, even after a sweep: %s", ErrExists, strings.Join(left, ", "))
		}
	}
	if err := n.recordOwner(); err != nil {
		return nil, fmt.Errorf("netpart: %w", err)
	}
	if err := n.build(); err != nil {
		if cerr := n.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		if strings.Contains(err.Error(), "netns add") {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, err
	}
	return n, nil
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

// Close removes the observer's link and every namespace of the net, and the
// owner file. The processes in the namespaces must have stopped first. It
// is idempotent.
func (n *Net) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return n.closeErr
	}
	n.closed = true
	var errs []error
	del := func(args ...string) {
		if err := run("ip", args...); err != nil && !strings.Contains(err.Error(), "Cannot find device") &&
			!strings.Contains(err.Error(), "No such file") {
			errs = append(errs, err)
		}
	}
	del("link", "del", n.prefix+"obs")
	for _, node := range n.nodes {
		del("netns", "del", n.ns(node))
	}
	del("netns", "del", n.ns("br"))
	if left := n.leftovers(); len(left) > 0 {
		errs = append(errs, fmt.Errorf("netpart: left after Close: %s", strings.Join(left, ", ")))
	}
	if err := n.removeOwner(); err != nil {
		errs = append(errs, err)
	}
	n.closeErr = errors.Join(errs...)
	return n.closeErr
}
