package compat_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
)

// protectedUUID matches Curator's protection prefix with a Java
// UUID.randomUUID(): version 4, lowercase.
const protectedUUID = `_c_[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-`

var (
	lockNodeName = regexp.MustCompile(`^` + protectedUUID + `(lock-|__READ__|__WRIT__|lease-)[0-9]{10}$`)
	uuidPart     = regexp.MustCompile(protectedUUID)
	seqPart      = regexp.MustCompile(`[0-9]{10}$`)
)

// snapshot describes the tree under root, one line per node, sorted: the
// path below root with protection ids and sequence numbers replaced by
// placeholders, the data, the ACL, whether the node is ephemeral and owned
// by session ("owner=self"), not ephemeral ("owner=none"), or someone
// else's, and the number of children. Ephemeral node names must have
// Curator's form.
func snapshot(t testing.TB, conn *zk.Conn, root string, session int64) []string {
	t.Helper()
	var lines []string
	var walk func(path, rel string)
	walk = func(path, rel string) {
		data, st, err := conn.Get(path)
		if err != nil {
			t.Fatalf("get %s: %v", path, err)
		}
		acl, _, err := conn.GetACL(path)
		if err != nil {
			t.Fatalf("get ACL %s: %v", path, err)
		}
		owner := "none"
		switch st.EphemeralOwner {
		case 0:
		case session:
			owner = "self"
			if name := lastSegment(path); !lockNodeName.MatchString(name) {
				t.Errorf("ephemeral node %s does not have Curator's name form", path)
			}
		default:
			owner = fmt.Sprintf("other:%x", st.EphemeralOwner)
		}
		lines = append(lines, fmt.Sprintf("%s data=%q acl=%v owner=%s children=%d",
			normalizeName(rel), data, acl, owner, st.NumChildren))
		kids, _, err := conn.Children(path)
		if err != nil {
			t.Fatalf("children %s: %v", path, err)
		}
		for _, k := range kids {
			walk(path+"/"+k, rel+"/"+k)
		}
	}
	walk(root, ".")
	slices.Sort(lines)
	return lines
}

func normalizeName(rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		s = uuidPart.ReplaceAllString(s, "_c_<uuid>-")
		if strings.HasPrefix(s, "_c_<uuid>-") {
			s = seqPart.ReplaceAllString(s, "<seq>")
		}
		segs[i] = s
	}
	return strings.Join(segs, "/")
}

// After Go and Java each take each recipe (on sibling paths), the two trees
// have the same shape: node names by pattern, data (the client's default,
// or the recipe's own lock or lease data), ACLs, ephemeral nodes owned by
// the taker's session and parents that are not ephemeral. Once both release,
// the server reaps every parent, which shows that both made them
// containers.
func TestTreeForm(t *testing.T) {
	testutil.CheckLeaks(t)
	java, golang := sides(t, "tree")
	gc := golang.gc
	raw := testutil.Connect(t, server.Addr())
	base := serverPath(t)

	named := func(r recipe, name string) recipe { r.name = name; return r }
	cases := append(blockingRecipes(), readWriteRecipe("read", ""),
		named(readWriteRecipe("read", "rwdata"), "read-with-data"),
		named(readWriteRecipe("write", "rwdata"), "write-with-data"),
		named(semaphoreRecipe(semaphoreLeases, "leasedata"), "semaphore-with-data"))
	var held []holder
	for _, r := range cases {
		goBase, javaBase := base+"/"+r.name+"/go", base+"/"+r.name+"/java"
		for _, h := range []holder{golang.contend(t, r, goBase, 1, newGuards(t, r.guardPaths), "go-"+r.name),
			java.contend(t, r, javaBase, 1, newGuards(t, r.guardPaths), "java-"+r.name)} {
			h.granted(t)
			held = append(held, h)
		}
		if r.heldNodes == 0 { // a semaphore: its internal lock's container is
			// empty once the lease is granted, and the server reaps it
			waitReaped(t, raw, r.queuePath(goBase))
			waitReaped(t, raw, r.queuePath(javaBase))
		}
		goTree, javaTree := snapshot(t, raw, goBase, gc.SessionID()), snapshot(t, raw, javaBase, java.sid)
		if !slices.Equal(goTree, javaTree) {
			t.Errorf("%s: the trees differ\nGo (%s):\n  %s\nJava (%s):\n  %s", r.name,
				goBase, strings.Join(goTree, "\n  "), javaBase, strings.Join(javaTree, "\n  "))
		} else {
			t.Logf("%s:\n  %s", r.name, strings.Join(goTree, "\n  "))
		}
	}
	for _, h := range held {
		h.release(t)
	}
	waitReaped(t, raw, base) // every parent was a container
}

// reapTimeout bounds the wait for the server to reap an empty container
// (it looks every 200 ms here).
const reapTimeout = 20 * time.Second

// waitReaped waits, with watches, until the server has reaped path; if it
// has not in time, it fails the test and shows what is left under it.
func waitReaped(t testing.TB, conn *zk.Conn, path string) {
	t.Helper()
	testutil.WaitGoneWithin(t, conn, path, reapTimeout)
}
