package main

import "testing"

// TestCheckFIFO tests scenario 6's order check; this file holds scenario 6's
// unit tests.
func TestCheckFIFO(t *testing.T) {
	if ok, d := checkFIFO(10, []int64{11, 15, 20}, 3); !ok {
		t.Errorf("ascending tokens: %s", d)
	}
	if ok, _ := checkFIFO(10, []int64{11, 20, 15}, 3); ok {
		t.Error("out-of-order tokens passed")
	}
	if ok, _ := checkFIFO(12, []int64{11, 15, 20}, 3); ok {
		t.Error("a token below the first holder's passed")
	}
	if ok, _ := checkFIFO(10, []int64{11, 15}, 3); ok {
		t.Error("a missing acquisition passed")
	}
}
