package main

import (
	"testing"
	"time"
)

// TestS1Row tests scenario 1's row; this file holds scenario 1's unit tests.
func TestS1Row(t *testing.T) {
	rep := func(packets int64, lat ...time.Duration) repResult { return repResult{lat: lat, packets: packets} }
	r := s1Row([]repResult{
		rep(6, 1, 2, 3),
		rep(6, 4, 5, 6),
		rep(6, 7, 8, 90),
	})
	if r.Lat.P50 != 5 || r.Lat.P99 != 6 {
		t.Errorf("p50 %v p99 %v, want the medians of the repetitions' percentiles: 5 and 6", r.Lat.P50, r.Lat.P99)
	}
	if r.PacketsPerOp != 2 {
		t.Errorf("packets per op %v, want 2", r.PacketsPerOp)
	}
}
