package protected

import (
	"regexp"
	"testing"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewProtectedID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := NewID()
		if !uuidV4.MatchString(id) {
			t.Fatalf("NewID() = %q, not a lowercase v4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}

func TestProtectedNames(t *testing.T) {
	const id = "40bfe6fd-3b9e-4c4d-9a5e-0123456789ab"
	name := Name(id, "lock-") + "0000000007"
	if name != "_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007" {
		t.Fatalf("Name = %q", name)
	}
	for _, tc := range []struct {
		name      string
		protected bool
		normal    string
	}{
		{name, true, "lock-0000000007"},
		{"_c_40BFE6FD-3B9E-4C4D-9A5E-0123456789AB-x", true, "x"},
		{Name(id, ""), false, Name(id, "")}, // exactly 40 characters: not longer
		{"_c_0123456789abcdef0123456789abcdef-lock-0000000001", false, "_c_0123456789abcdef0123456789abcdef-lock-0000000001"}, // go-zookeeper's 32-hex form
		{"lock-0000000001", false, "lock-0000000001"},
		{"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789abXlock", false, "_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789abXlock"},
		{"_c_40bfe6fd_3b9e-4c4d-9a5e-0123456789ab-lock", false, "_c_40bfe6fd_3b9e-4c4d-9a5e-0123456789ab-lock"},
		{"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ag-lock", false, "_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ag-lock"},
	} {
		if got := Is(tc.name); got != tc.protected {
			t.Errorf("Is(%q) = %v, want %v", tc.name, got, tc.protected)
		}
		if got := Normalize(tc.name); got != tc.normal {
			t.Errorf("Normalize(%q) = %q, want %q", tc.name, got, tc.normal)
		}
	}
	if got, ok := ID(name); !ok || got != id {
		t.Errorf("ID = %q, %v", got, ok)
	}
}
