package protected

import (
	"strings"
	"testing"
)

// FuzzName: the three parsers agree with each other, and with
// Name for every UUID NewID could make.
func FuzzName(f *testing.F) {
	for _, s := range []string{"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-lock-0000000007",
		"_c_0123456789abcdef0123456789abcdef-lock-0000000001", "lock-0000000001", "_c_", "",
		"_c_40bfe6fd-3b9e-4c4d-9a5e-0123456789ab-"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		id, ok := ID(name)
		if ok != Is(name) {
			t.Fatalf("ID and Is disagree on %q", name)
		}
		norm := Normalize(name)
		if !ok {
			if norm != name {
				t.Fatalf("Normalize changed unprotected %q to %q", name, norm)
			}
			return
		}
		if Name(id, norm) != name || !strings.HasSuffix(name, norm) {
			t.Fatalf("%q does not rebuild from id %q and rest %q", name, id, norm)
		}
	})
}
