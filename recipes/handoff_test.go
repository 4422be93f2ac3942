package recipes

import "testing"

// Where a waiter may hold as soon as the node it watches is deleted, without
// listing again — and, as important, where it may not.
func TestHandoffDecisions(t *testing.T) {
	mutex := lockNameDriver(mutexLockName, 1)
	writer := standardDriver{key: readWriteSortKey, maxLeases: 1}
	reader := readDriver{}
	for _, tc := range []struct {
		name   string
		d      handoffDriver
		sorted []string
		our    string
		watch  string
		want   bool
	}{
		{"mutex second in line", mutex, []string{"a-lock-1", "b-lock-2"}, "b-lock-2", "a-lock-1", true},
		{"mutex third in line", mutex, []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "b-lock-2", false},
		{"semaphore v1 with two leases", lockNameDriver(mutexLockName, 2), []string{"a-lock-1", "b-lock-2", "c-lock-3"}, "c-lock-3", "a-lock-1", false},
		// the holder of __WRIT__1 may downgrade: its read node __READ__1 would
		// take the write node's place before the write node goes
		{"writer behind a writer", writer, []string{"a-__WRIT__1", "b-__WRIT__2"}, "b-__WRIT__2", "a-__WRIT__1", false},
		{"writer behind one reader", writer, []string{"a-__READ__1", "b-__WRIT__2"}, "b-__WRIT__2", "a-__READ__1", true},
		{"writer behind two readers", writer, []string{"a-__READ__1", "c-__READ__2", "b-__WRIT__3"}, "b-__WRIT__3", "c-__READ__2", false},
		{"reader behind its only writer", reader, []string{"r-__READ__1", "w-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "w-__WRIT__2", true},
		{"reader behind two writers", reader, []string{"w-__WRIT__1", "x-__WRIT__2", "o-__READ__3"}, "o-__READ__3", "x-__WRIT__2", false},
		{"downgrading reader", readDriver{ownWrite: "w-__WRIT__1"}, []string{"w-__WRIT__1", "o-__READ__1"}, "o-__READ__1", "w-__WRIT__1", false},
	} {
		if got := tc.d.handsOff(tc.sorted, tc.our, tc.watch); got != tc.want {
			t.Errorf("%s: handsOff = %v, want %v", tc.name, got, tc.want)
		}
	}
}
