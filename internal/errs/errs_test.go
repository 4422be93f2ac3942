package errs

import (
	"errors"
	"strings"
	"testing"
)

func TestOnePrefixWhateverTheDepth(t *testing.T) {
	sentinel := errors.New(Prefix + "invalid argument")
	foreign := errors.New("zk: could not connect to a server")
	inner := Errorf("no connection within 200ms: %w", foreign)
	mid := Errorf("create %s: %w", "/locks/x/lock-", inner)
	outer := Errorf("acquire %s: %w (%w)", "/locks/x", mid, sentinel)
	want := "gocurator: acquire /locks/x: create /locks/x/lock-: no connection within 200ms: zk: could not connect to a server (invalid argument)"
	if outer.Error() != want {
		t.Fatalf("got  %q\nwant %q", outer.Error(), want)
	}
	for _, target := range []error{foreign, inner, mid, sentinel} {
		if !errors.Is(outer, target) {
			t.Errorf("errors.Is(outer, %q) = false", target)
		}
	}
	if got := Errorf("%v", nil).Error(); got != "gocurator: <nil>" {
		t.Errorf("nil argument: %q", got)
	}
}

func TestPathIsShortened(t *testing.T) {
	if got := Path("/a/b"); got != "/a/b" {
		t.Errorf("Path of a short path = %q", got)
	}
	long := "/" + strings.Repeat("x", 1<<20)
	got := Path(long)
	if len(got) > 2*maxPathInMessage || !strings.HasPrefix(got, "/xxx") || !strings.Contains(got, "1048577 bytes") {
		t.Errorf("Path of a 1 MiB path = %q", got)
	}
}
