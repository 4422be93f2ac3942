package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestPercentileAndMedian(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return slices.Sorted(slices.Values(out))
	}
	for _, tc := range []struct {
		samples []time.Duration
		p       float64
		want    int // ms
	}{
		{nil, 50, 0},
		{ms(7), 99, 7},
		{ms(5, 1, 3), 50, 3},
		{ms(4, 1, 3, 2), 50, 2}, // nearest rank: the lower middle
		{ms(4, 1, 3, 2), 100, 4},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10},
	} {
		if got := percentileSorted(tc.samples, tc.p); got != time.Duration(tc.want)*time.Millisecond {
			t.Errorf("percentileSorted(%v, %v) = %v, want %d ms", tc.samples, tc.p, got, tc.want)
		}
	}
	if !math.IsNaN(median(nil)) || median([]float64{3, 1, 2}) != 2 || median([]float64{4, 1, 3, 2}) != 2.5 {
		t.Error("median of nothing is NaN, of an odd count the middle, of an even count the mean of the middle two")
	}
}

// A row combines its repetitions' latencies measure by measure: the
// percentiles by their median, the slowest by the maximum, the stalls by
// their sum; a measure no repetition has is left out.
func TestRowOfLatencies(t *testing.T) {
	ms := time.Millisecond
	var reps []map[string]float64
	for _, lat := range [][]time.Duration{{1 * ms, 2 * ms, 3 * ms}, {2 * ms, 2500 * ms, 3 * ms, 101 * ms}, {4 * ms, 100 * ms, 5 * ms}} {
		m := map[string]float64{}
		latencyValues(m, "", lat)
		reps = append(reps, m)
	}
	r := rowOf(append(latencyMeasures("", "cycle"), perMeasures("cycle")...), reps)
	for key, want := range map[string]time.Duration{"p50": 3 * ms, "max": 2500 * ms, "slow": 2} { // over 100 ms, not at it
		if got := r.Value[key]; got != float64(want) {
			t.Errorf("%s: %v, want %v", key, got, float64(want))
		}
	}
	if _, ok := r.Value["cpu"]; ok {
		t.Error("a measure no repetition took has a value")
	}
}
