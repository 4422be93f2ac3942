package cache

import (
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
)

// The cache's copy of its tree: a node per node, by name under its parent,
// as the servers hold them (a node is 112 bytes, its name and data apart,
// and an entry in its parent's map of children). A node the cache holds no
// data for, but that has descendants it holds, is a placeholder (not
// present): a read of a node can come before its parent's, whose node was
// deleted and made again meanwhile, and the parent's own read (which the
// parent's creation calls for) comes after. The engine alone writes it,
// under the cache's lock.
type node struct {
	kids    map[string]*node // by name (its key the one copy of the name); nil: none
	data    []byte
	stat    zk.Stat
	present bool // false: a placeholder
}

// tree is the copy: the node at the cache's path, and how many nodes are
// present.
type tree struct {
	root *node
	base string // the cache's path
	size int
}

func newTree(base string) tree { return tree{root: &node{}, base: base} }

// rel returns the segments of path below the cache's path; ok is false for
// a path not at or below it.
func (t *tree) rel(path string) (segs []string, ok bool) {
	if path == t.base {
		return nil, true
	}
	prefix := t.base + "/"
	if t.base == "/" {
		prefix = "/"
	}
	if !strings.HasPrefix(path, prefix) || len(path) == len(prefix) {
		return nil, false
	}
	return strings.Split(path[len(prefix):], "/"), true
}

// depth returns how far below the cache's path path is (0: the path
// itself), or -1 for a path not at or below it.
func (t *tree) depth(path string) int {
	if path == t.base {
		return 0
	}
	prefix := t.base + "/"
	if t.base == "/" {
		prefix = "/"
	}
	if !strings.HasPrefix(path, prefix) || len(path) == len(prefix) {
		return -1
	}
	return strings.Count(path[len(prefix):], "/") + 1
}

// find returns the node at path, present or not; nil when there is none.
func (t *tree) find(path string) *node {
	segs, ok := t.rel(path)
	if !ok {
		return nil
	}
	n := t.root
	for _, s := range segs {
		if n = n.kids[s]; n == nil {
			return nil
		}
	}
	return n
}

// get returns the node at path as a Node, if it is present.
func (t *tree) get(path string) (Node, bool) {
	n := t.find(path)
	if n == nil || !n.present {
		return Node{}, false
	}
	return n.as(path), true
}

func (n *node) as(path string) Node { return Node{Path: path, Data: n.data, Stat: n.stat} }

// newer reports whether stat is a later state of the node than n holds:
// a later incarnation (created after), or a later change of the same one.
// A read answered before another, on a path's reads that run in order,
// never shows an earlier state; this keeps a reconnection's reads from
// moving a node back all the same.
func (n *node) newer(stat *zk.Stat) bool {
	if stat.Czxid != n.stat.Czxid {
		return stat.Czxid > n.stat.Czxid
	}
	return stat.Mzxid > n.stat.Mzxid
}

// put stores the node at path, making placeholders above it as needed, and
// returns the event it makes: NodeCreated, NodeChanged, or none (ok false:
// not newer than what the cache holds).
func (t *tree) put(path string, data []byte, stat *zk.Stat) (Event, bool) {
	segs, ok := t.rel(path)
	if !ok {
		return Event{}, false
	}
	n := t.root
	for _, s := range segs {
		k := n.kids[s]
		if k == nil {
			if n.kids == nil {
				n.kids = make(map[string]*node, 1)
			}
			k = &node{}
			n.kids[strings.Clone(s)] = k // not a piece of path, which would keep all of it
		}
		n = k
	}
	if !n.present {
		n.present, n.data, n.stat = true, data, *stat
		t.size++
		return Event{Type: NodeCreated, Node: n.as(path)}, true
	}
	if !n.newer(stat) {
		return Event{}, false
	}
	old := n.as(path)
	n.data, n.stat = data, *stat
	return Event{Type: NodeChanged, Node: n.as(path), Old: old}, true
}

// remove deletes the node at path and every node below it, and returns
// their NodeDeleted events, the deepest first (as the servers delete
// them). Placeholders left with nothing below them go too.
func (t *tree) remove(path string) []Event {
	segs, ok := t.rel(path)
	if !ok {
		return nil
	}
	chain := make([]*node, 0, len(segs)+1) // the nodes from the root to path
	n := t.root
	chain = append(chain, n)
	for _, s := range segs {
		if n = n.kids[s]; n == nil {
			return nil
		}
		chain = append(chain, n)
	}
	var evs []Event
	var drop func(n *node, p string)
	drop = func(n *node, p string) {
		for _, name := range sortedNames(n.kids) {
			drop(n.kids[name], framework.JoinPath(p, name))
		}
		n.kids = nil
		if n.present {
			evs = append(evs, Event{Type: NodeDeleted, Node: n.as(p)})
			n.present, n.data, n.stat = false, nil, zk.Stat{}
			t.size--
		}
	}
	drop(n, path)
	for i := len(chain) - 1; i > 0; i-- { // prune: a placeholder with nothing below goes
		if n := chain[i]; n.present || len(n.kids) > 0 {
			break
		}
		delete(chain[i-1].kids, segs[i-1])
		if len(chain[i-1].kids) == 0 {
			chain[i-1].kids = nil
		}
	}
	return evs
}

// children returns the names of the present nodes right below path,
// sorted.
func (t *tree) children(path string) []string {
	n := t.find(path)
	if n == nil {
		return nil
	}
	var out []string
	for name, k := range n.kids {
		if k.present {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// walk calls f with every present node, its path and depth (0: the
// cache's path), parents before children, siblings by name.
func (t *tree) walk(f func(path string, depth int, n *node)) {
	var visit func(n *node, p string, d int)
	visit = func(n *node, p string, d int) {
		if n.present {
			f(p, d, n)
		}
		for _, name := range sortedNames(n.kids) {
			visit(n.kids[name], framework.JoinPath(p, name), d+1)
		}
	}
	visit(t.root, t.base, 0)
}

// clear drops every node.
func (t *tree) clear() { t.root, t.size = &node{}, 0 }

func sortedNames(m map[string]*node) []string {
	if len(m) == 0 {
		return nil
	}
	names := make([]string, 0, len(m))
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
