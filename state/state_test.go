package state

import "testing"

func TestStringCoversEveryState(t *testing.T) {
	for s, want := range map[ConnectionState]string{
		0: "NOT_CONNECTED", Connected: "CONNECTED", Suspended: "SUSPENDED", Reconnected: "RECONNECTED",
		Lost: "LOST", ReadOnly: "READ_ONLY", 42: "ConnectionState(42)", -1: "ConnectionState(-1)",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
	var heard []ConnectionState
	ListenerFunc(func(s ConnectionState) { heard = append(heard, s) }).StateChanged(Lost)
	if len(heard) != 1 || heard[0] != Lost {
		t.Fatalf("ListenerFunc heard %v", heard)
	}
}
