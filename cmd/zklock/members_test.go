package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes/nodes"
)

// joinGroup starts a GroupMember of id with data in the group at path, on
// a client of its own, and waits for its node; it leaves when the test
// ends.
func joinGroup(ctx context.Context, t testing.TB, path, id, data string) (*nodes.GroupMember, *framework.Client) {
	t.Helper()
	c := newClient(t)
	m, err := nodes.NewGroupMember(c, path, id, []byte(data))
	testutil.Must(t, err)
	t.Cleanup(func() { m.Close() })
	testutil.Must(t, m.Start())
	testutil.Must(t, m.SetThisData(ctx, []byte(data))) // waits for its node
	return m, c
}

// members lists a group: its members by id, with their sessions, ages and
// data, a child that is no member's (not ephemeral) noted; in JSON, one
// object. A path with no node is no error. PATH is one path.
func TestMembers(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	conn := testutil.Connect(t, server.Addr())
	group := path + "/workers"
	_, ca := joinGroup(ctx, t, group, "worker-b", "10.0.0.8:8080")
	_, cb := joinGroup(ctx, t, group, "worker-a", "10.0.0.7:8080")
	_, err := conn.Create(group+"/stray", nil, 0, zk.WorldACL(zk.PermAll))
	testutil.Must(t, err)

	out := startZklock(t, true, "members", group).succeeds(group + ": a group of 3 members")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "ID ") ||
		!strings.HasPrefix(lines[2], "stray ") || !strings.Contains(lines[2], "not ephemeral") ||
		!strings.HasPrefix(lines[3], "worker-a ") || !strings.Contains(lines[3], fmt.Sprintf("0x%x", cb.SessionID())) || !strings.HasSuffix(lines[3], "10.0.0.7:8080") ||
		!strings.HasPrefix(lines[4], "worker-b ") || !strings.HasSuffix(lines[4], "10.0.0.8:8080") {
		t.Errorf("members, as text:\n%s", out)
	}

	code, out, stderr := zklockBin(t, "--json", "members", group)
	var doc groupListing
	if err := json.Unmarshal([]byte(out), &doc); code != 0 || err != nil {
		t.Fatalf("--json: status %d, %v in %q, stderr %q", code, err, out, stderr)
	}
	var got []string
	for _, m := range doc.Members {
		got = append(got, fmt.Sprintf("%s %s %s %s", m.ID, m.Path, m.Session, m.Data))
	}
	want := []string{
		"stray " + group + "/stray  ",
		fmt.Sprintf("worker-a %s/worker-a 0x%x 10.0.0.7:8080", group, cb.SessionID()),
		fmt.Sprintf("worker-b %s/worker-b 0x%x 10.0.0.8:8080", group, ca.SessionID()),
	}
	if doc.Path != group || !doc.Exists || !slices.Equal(got, want) || strings.Count(out, "\n") != 1 {
		t.Errorf("--json: %s\nmembers %q, want %q", out, got, want)
	}

	startZklock(t, true, "members", path+"/none").succeeds(path + "/none: no such node")
	startZklock(t, true, "--json", "members", path+"/none").jsonLine(0, map[string]any{"exists": false, "members": []any{}})
	startZklock(t, true, "members").fails(exitUsage, "members wants exactly one PATH")
	startZklock(t, true, "members", group, group).fails(exitUsage, "members wants exactly one PATH")
	startZklock(t, true, "members", "/").fails(exitUsage, "must not be the root")
	startZklock(t, true, "members", "--recipe", "mutex", group).fails(exitUsage, "it is a flag of ls")
}

// members --watch --json, to a pipe, of a group that is not there yet: a
// listing per change, a member's new data included (its node's data is
// watched, not only the group's children); a member that leaves is gone
// from the next listing; SIGINT ends it with status 0. As text, the title
// names the command.
func TestBinaryMembersWatch(t *testing.T) {
	ctx, path := testutil.Begin(t, server.Addr())
	group := path + "/workers"
	p := startZklock(t, false, "--json", "members", "--watch", group)
	p.stdout.waitFor(ctx, t, `"exists":false`)
	a, _ := joinGroup(ctx, t, group, "worker-a", "10.0.0.7:8080")
	p.stdout.waitFor(ctx, t, `"data":"10.0.0.7:8080"`)
	testutil.Must(t, a.SetThisData(ctx, []byte("draining")))
	p.stdout.waitFor(ctx, t, `"data":"draining"`)
	testutil.Must(t, a.Close())
	p.stdout.waitUntil(ctx, t, "a listing with no member after", func(out string) bool {
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return strings.Contains(out, "draining") && strings.Contains(lines[len(lines)-1], `"members":[]`)
	})
	p.signal(syscall.SIGINT)
	if code := p.wait(); code != 0 || p.stderr.String() != "" {
		t.Errorf("SIGINT: status %d, stderr %q", code, p.stderr.String())
	}
	for i, l := range jsonLines(t, p.stdout.String()) {
		if bad := checkFields(l, map[string]any{"event": "listing", "listed_at": anyValue, "path": group}); len(bad) > 0 {
			t.Errorf("line %d: %v: %v", i, l, bad)
		}
	}

	text := startZklock(t, true, "members", "--watch", group)
	text.stdout.waitFor(ctx, t, "zklock members --watch "+group)
	joinGroup(ctx, t, group, "worker-b", "10.0.0.8:8080")
	text.stdout.waitFor(ctx, t, group+": a group of 1 member")
	text.signal(syscall.SIGINT)
	if code := text.wait(); code != 0 {
		t.Errorf("text --watch: status %d, stderr %q", code, text.stderr.String())
	}
}
