package netpart

import (
	"fmt"
	"slices"
	"strings"
)

// Link is one direction of traffic between two nodes: the packets From
// sends To. A cut Link drops them; the other direction is a Link of its own.
type Link struct{ From, To string }

func (l Link) String() string { return l.From + ">" + l.To }

// Between returns the links both ways between every node of a and every
// node of b.
func Between(a, b []string) []Link {
	return append(OneWay(a, b), OneWay(b, a)...)
}

// OneWay returns the links from every node of from to every node of to.
func OneWay(from, to []string) []Link {
	var out []Link
	for _, f := range from {
		for _, t := range to {
			if f != t {
				out = append(out, Link{f, t})
			}
		}
	}
	return out
}

// Split returns the links between every two of groups, both ways: each
// group then reaches only itself (and the observer). A node in no group is
// not cut off from anything.
func Split(groups ...[]string) []Link {
	var out []Link
	for i, g := range groups {
		for _, h := range groups[i+1:] {
			out = append(out, Between(g, h)...)
		}
	}
	return out
}

// Apply cuts exactly links (the last Apply's cut is healed, in the same
// nftables transaction): from then on the bridge drops every packet of
// each. Packets to and from the observer always pass. Connections are not
// closed: their packets are lost, as in a real partition.
func (n *Net) Apply(links []Link) error {
	var elems []string
	for _, l := range links {
		from, to := n.addrs[l.From], n.addrs[l.To]
		if !from.IsValid() || !to.IsValid() {
			return fmt.Errorf("netpart: cut %v: no such node", l)
		}
		elems = append(elems, from.String()+" . "+to.String())
	}
	slices.Sort(elems)
	elems = slices.Compact(elems)
	script := fmt.Sprintf("flush set bridge %s cut\n", n.table)
	if len(elems) > 0 {
		script += fmt.Sprintf("add element bridge %s cut { %s }\n", n.table, strings.Join(elems, ", "))
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return fmt.Errorf("netpart: Apply on a closed net")
	}
	return n.nft(script)
}

// Heal cuts nothing.
func (n *Net) Heal() error { return n.Apply(nil) }
