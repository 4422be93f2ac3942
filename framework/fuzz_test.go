package framework

import (
	"testing"
)

// FuzzValidatePath: never panics, its one-pass shortcut (plainPath) accepts
// only what the full check accepts, and every path it accepts splits and
// joins back to itself.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/", "/a", "/locks-research/nsdemo/lockpath", "/a/", "//", "/a/./b", "/a/..",
		"/a\x00", "/\u0085", "/a/.b", "/a/..b", "/.../a", "/a b", "/a\x7f", "/_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if plainPath(p) && fullPathProblem(p) != "" {
			t.Fatalf("plainPath accepts %q, which is invalid: %s", p, fullPathProblem(p))
		}
		if ValidatePath(p) != nil || p == "/" {
			return
		}
		parent, name := SplitPath(p)
		if got := JoinPath(parent, name); got != p {
			t.Fatalf("JoinPath(SplitPath(%q)) = %q", p, got)
		}
		if ValidatePath(parent) != nil {
			t.Fatalf("parent %q of valid %q is invalid", parent, p)
		}
	})
}
