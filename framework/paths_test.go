package framework

import (
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
)

func TestValidatePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/", true},
		{"/a", true},
		{"/a/b-c_d.e", true},
		{"/a/.b", true},
		{"/a/..b", true},
		{"/zk/é", true},
		{"", false},
		{"a", false},
		{"a/b", false},
		{"/a/", false},
		{"//", false},
		{"/a//b", false},
		{"/.", false},
		{"/a/.", false},
		{"/a/./b", false},
		{"/a/..", false},
		{"/../a", false},
		{"/a\x00b", false},
		{"/a\x01b", false},
		{"/a\u007fb", false},
		{"/a\u0085b", false},
		{"/a\uf000b", false},
		{"/a\ufff5b", false},
	} {
		err := ValidatePath(tc.path)
		if (err == nil) != tc.ok {
			t.Errorf("ValidatePath(%q) = %v, want ok=%v", tc.path, err, tc.ok)
		}
		if err != nil && !errors.Is(err, zk.ErrInvalidPath) {
			t.Errorf("ValidatePath(%q) = %v, does not unwrap to zk.ErrInvalidPath", tc.path, err)
		}
	}
}

func TestJoinAndSplitPath(t *testing.T) {
	for _, tc := range []struct{ parent, child, want string }{
		{"/a", "b", "/a/b"},
		{"/a/", "b", "/a/b"},
		{"/", "b", "/b"},
		{"/a", "", "/a"},
		{"/a", "/b", "/a/b"},
	} {
		if got := JoinPath(tc.parent, tc.child); got != tc.want {
			t.Errorf("JoinPath(%q, %q) = %q, want %q", tc.parent, tc.child, got, tc.want)
		}
	}
	for _, tc := range []struct{ path, parent, name string }{
		{"/a/b", "/a", "b"},
		{"/a", "/", "a"},
		{"/a/b/c", "/a/b", "c"},
	} {
		if p, n := SplitPath(tc.path); p != tc.parent || n != tc.name {
			t.Errorf("SplitPath(%q) = %q, %q, want %q, %q", tc.path, p, n, tc.parent, tc.name)
		}
	}
}

func TestNamespaceFixUnfix(t *testing.T) {
	ns := namespace("/ns/sub")
	for _, tc := range []struct{ path, server string }{
		{"/", "/ns/sub"},
		{"/a", "/ns/sub/a"},
		{"/a/b", "/ns/sub/a/b"},
	} {
		if got := ns.fix(tc.path); got != tc.server {
			t.Errorf("fix(%q) = %q, want %q", tc.path, got, tc.server)
		}
		if got := ns.unfix(tc.server); got != tc.path {
			t.Errorf("unfix(%q) = %q, want %q", tc.server, got, tc.path)
		}
	}
	if got := ns.unfix("/ns/subway"); got != "/ns/subway" {
		t.Errorf("unfix of a sibling that shares the prefix = %q", got)
	}
	if got := namespace("").fix("/a"); got != "/a" {
		t.Errorf("empty namespace fix = %q", got)
	}
}

func TestParseConnectString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}},
		{"a:1, b:2", []string{"a:1", "b:2"}},
		{"zk1", []string{"zk1:2181"}},
		{"[::1]:2181", []string{"[::1]:2181"}},
	} {
		got, err := parseConnectString(tc.in)
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("parseConnectString(%q) = %v, %v", tc.in, got, err)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("parseConnectString(%q)[%d] = %q, want %q", tc.in, i, got[i], tc.want[i])
			}
		}
	}
	for _, bad := range []string{"", "  ", "a:1,,b:2", "a:x", "a:0", "a:70000", ":2181", "a:1/chroot", "a:1:2"} {
		if _, err := parseConnectString(bad); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("parseConnectString(%q) = %v, want ErrInvalidArgument", bad, err)
		}
	}
}

// The servers' own tree is /zookeeper and what is below it, nothing else.
func TestIsReserved(t *testing.T) {
	for path, want := range map[string]bool{"/zookeeper": true, "/zookeeper/quota": true, "/zookeeper/config": true,
		"/": false, "/zookeeperx": false, "/zoo": false, "/a/zookeeper": false, "zookeeper": false} {
		if got := IsReserved(path); got != want {
			t.Errorf("IsReserved(%q) = %v, want %v", path, got, want)
		}
	}
}

// A lock node's path, as every operation on it validates it.
func BenchmarkValidatePath(b *testing.B) {
	p := "/gocurator-test/BenchmarkMutexAcquireRelease/_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007"
	b.ReportAllocs()
	for b.Loop() {
		if err := ValidatePath(p); err != nil {
			b.Fatal(err)
		}
	}
}
