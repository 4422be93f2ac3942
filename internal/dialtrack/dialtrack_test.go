package dialtrack

import (
	"net"
	"testing"
	"time"
)

// Current follows the newest open connection, and falls back to an older
// one when the newest closes.
func TestCurrent(t *testing.T) {
	var lns []net.Listener
	for i := 0; i < 2; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		lns = append(lns, ln)
	}
	var tr Tracker
	if got := tr.Current(); got != "" {
		t.Fatalf("Current with no connection = %q", got)
	}
	a, err := tr.Dial("tcp", lns[0].Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.Dial("tcp", lns[1].Addr().String(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Current(); got != lns[1].Addr().String() {
		t.Fatalf("Current = %q, want the newest, %s", got, lns[1].Addr())
	}
	b.Close()
	b.Close()
	if got := tr.Current(); got != lns[0].Addr().String() {
		t.Fatalf("Current after the newest closed = %q, want %s", got, lns[0].Addr())
	}
	a.Close()
	if got := tr.Current(); got != "" {
		t.Fatalf("Current with all closed = %q", got)
	}
	if _, err := tr.Dial("tcp", "127.0.0.1:1", time.Second); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
	if got := tr.Current(); got != "" {
		t.Fatalf("Current after a failed dial = %q", got)
	}
}
