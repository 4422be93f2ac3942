package lockqueue

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The pure parts; list_test.go lists real trees.

func TestFormatAge(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second:                   "0s",
		850 * time.Millisecond:         "850ms",
		12300 * time.Millisecond:       "12.3s",
		5*time.Minute + 10*time.Second: "5m10s",
		3*time.Hour + 2*time.Minute:    "3h2m",
		99 * time.Hour:                 "4d3h",
	} {
		if got := FormatAge(d); got != want {
			t.Errorf("FormatAge(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, c := range []struct {
		names     []string
		semaphore bool
		want      string
	}{
		{nil, false, RecipeNone},
		{[]string{"_c_x-lock-0000000001"}, false, RecipeMutex},
		{[]string{"_c_x-__READ__0000000001", "_c_y-__WRIT__0000000002"}, false, RecipeReadWrite},
		{[]string{"_c_x-__READ__0000000001", "_c_y-lock-0000000002"}, false, RecipeMutex},
		{[]string{"leases", "locks"}, true, RecipeSemaphore},
		// A namespace root with an empty "locks" container is no lock.
		{[]string{"locks", "orders"}, false, RecipeNone},
		{[]string{"foreign"}, false, RecipeNone},
		{[]string{"_c_x-latch-0000000001", "_c_y-latch-0000000002"}, false, RecipeLatch},
	} {
		if got := detect(c.names, c.semaphore); got != c.want {
			t.Errorf("detect(%q, %v) = %q, want %q", c.names, c.semaphore, got, c.want)
		}
	}
}

func TestShowData(t *testing.T) {
	if got := ShowData([]byte("10.0.0.1")); got != "10.0.0.1" {
		t.Errorf("text: %q", got)
	}
	if got := ShowData([]byte{0, 0xff}); got != "0x00ff" {
		t.Errorf("binary: %q", got)
	}
}

func TestWriteTextOfAMissingPath(t *testing.T) {
	var b bytes.Buffer
	l := &Listing{Path: "/a/lock", Recipe: RecipeNone}
	if err := l.WriteText(&b, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "/a/lock: no participants (no node there") {
		t.Errorf("text %q", b.String())
	}
}

func TestNodeKind(t *testing.T) {
	for name, want := range map[string]string{
		"_c_x-lock-0000000001":    KindMutex,
		"_c_x-__READ__0000000001": KindRead,
		"_c_x-__WRIT__0000000002": KindWrite,
		"_c_x-lease-0000000003":   KindLease,
		"locks":                   KindForeign,
		"leases":                  KindForeign,
		"orders":                  KindForeign,
		"a1b2c3d4e5f60718293a4b5c6d7e8f90__lock__0000000009": KindForeign,
	} {
		if got := NodeKind(name); got != want {
			t.Errorf("NodeKind(%q) = %q, want %q", name, got, want)
		}
	}
}
