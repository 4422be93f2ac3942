// Package treesnap reads a ZooKeeper subtree as a list of nodes, and says
// how two such lists differ: what the caches' tests compare a cache (Go's,
// or Java's CuratorCache) with the server's tree by. It is for tests.
package treesnap

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Node is one node of a snapshot: its path, data, and the zxids of its
// creation and of its last change, which tell one state of it from another.
type Node struct {
	Path         string
	Data         []byte
	Czxid, Mzxid int64
}

// Read reads the node at base and, to depth levels below it (-1: all),
// the nodes below it, from conn, sorted by path. A tree that changes while
// it is read is read again, until one reading holds; a base that does not
// exist gives none.
func Read(conn *zk.Conn, base string, depth int) ([]Node, error) {
	for {
		out, err := read(conn, base, depth)
		if !errors.Is(err, zk.ErrNoNode) {
			Sort(out)
			return out, err
		}
		if ok, _, err := conn.Exists(base); err != nil || !ok {
			return nil, err
		}
	}
}

func read(conn *zk.Conn, base string, depth int) ([]Node, error) {
	var out []Node
	var visit func(p string, d int) error
	visit = func(p string, d int) error {
		data, stat, err := conn.Get(p)
		if err != nil {
			return err
		}
		out = append(out, Node{Path: p, Data: data, Czxid: stat.Czxid, Mzxid: stat.Mzxid})
		if depth >= 0 && d >= depth {
			return nil
		}
		kids, _, err := conn.Children(p)
		if err != nil {
			return err
		}
		for _, k := range kids {
			child := p + "/" + k
			if p == "/" {
				child = "/" + k
			}
			if err := visit(child, d+1); err != nil {
				return err
			}
		}
		return nil
	}
	return out, visit(base, 0)
}

// Sort sorts nodes by path.
func Sort(nodes []Node) {
	slices.SortFunc(nodes, func(a, b Node) int { return strings.Compare(a.Path, b.Path) })
}

// Diff says how got differs from want, both sorted by path: "" when they
// hold the same paths, each with the same data and zxids; otherwise a line
// per difference.
func Diff(got, want []Node) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i].Path < want[j].Path:
			fmt.Fprintf(&b, "  extra %s\n", got[i].Path)
			i++
		case i == len(got) || want[j].Path < got[i].Path:
			fmt.Fprintf(&b, "  missing %s\n", want[j].Path)
			j++
		default:
			g, w := got[i], want[j]
			if !bytes.Equal(g.Data, w.Data) || g.Czxid != w.Czxid || g.Mzxid != w.Mzxid {
				fmt.Fprintf(&b, "  %s: holds %q (czxid %d, mzxid %d), want %q (czxid %d, mzxid %d)\n",
					g.Path, g.Data, g.Czxid, g.Mzxid, w.Data, w.Czxid, w.Mzxid)
			}
			i, j = i+1, j+1
		}
	}
	return b.String()
}
