package acquire

import "testing"

// canned is a hand-off driver whose rules answer as told.
type canned struct {
	queue
	handsOff  bool
	lookahead string
}

func (d canned) HandsOff([]string, string, string) bool    { return d.handsOff }
func (d canned) Lookahead([]string, string, string) string { return d.lookahead }

// planWait puts the rules together: a waiter that is handed off looks no
// further ahead, one further back does, and a driver with no hand-off, or
// a counting one (the semaphore's leases), watches what it was told or
// nothing. (The rules themselves are the recipes' drivers', tested there.)
func TestPlanWait(t *testing.T) {
	sorted := []string{"a-lock-1", "b-lock-2", "c-lock-3"}
	for _, tc := range []struct {
		name  string
		d     Driver
		watch string
		want  waitPlan
	}{
		{"handed off", canned{handsOff: true, lookahead: "a-lock-1"}, "b-lock-2", waitPlan{watch: "b-lock-2", handsOff: true}},
		{"further back", canned{lookahead: "a-lock-1"}, "b-lock-2", waitPlan{watch: "b-lock-2", lookahead: "a-lock-1"}},
		{"no hand-off driver", queue{}, "b-lock-2", waitPlan{watch: "b-lock-2"}},
		{"counting", counting{2}, "", waitPlan{}},
	} {
		if got := planWait(tc.d, sorted, "c-lock-3", tc.watch); got != tc.want {
			t.Errorf("%s: planWait = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
