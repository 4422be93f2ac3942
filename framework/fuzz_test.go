package framework

import (
	"strings"
	"testing"
)

// FuzzValidatePath: never panics, and every path it accepts splits and joins
// back to itself.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{"/", "/a", "/locks-research/nsdemo/lockpath", "/a/", "//", "/a/./b", "/a/..",
		"/a\x00", "/\u0085", "/_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
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

// FuzzProtectedName: the three parsers agree with each other, and with
// ProtectedName for every UUID NewProtectedID could make.
func FuzzProtectedName(f *testing.F) {
	for _, s := range []string{"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007",
		"_c_0123456789abcdef0123456789abcdef-lock-0000000001", "lock-0000000001", "_c_", "",
		"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, ok := ProtectedID(name)
		if ok != IsProtectedName(name) {
			t.Fatalf("ProtectedID and IsProtectedName disagree on %q", name)
		}
		norm := NormalizeProtectedName(name)
		if !ok {
			if norm != name {
				t.Fatalf("NormalizeProtectedName changed unprotected %q to %q", name, norm)
			}
			return
		}
		if ProtectedName(id, norm) != name || !strings.HasSuffix(name, norm) {
			t.Fatalf("%q does not rebuild from id %q and rest %q", name, id, norm)
		}
	})
}
