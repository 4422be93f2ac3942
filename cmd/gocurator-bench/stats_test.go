package main

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100-i) * time.Millisecond // 100 ms .. 1 ms, unsorted
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one", ms(7), 99, 7 * time.Millisecond},
		{"p50 of odd count", ms(5, 1, 3), 50, 3 * time.Millisecond},
		{"p50 of even count is the lower middle (nearest rank)", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p100 is the max", ms(4, 1, 3, 2), 100, 4 * time.Millisecond},
		{"p0 is the min", ms(4, 1, 3, 2), 0, time.Millisecond},
		{"p99 of 100", hundred, 99, 99 * time.Millisecond},
		{"p50 of 100", hundred, 50, 50 * time.Millisecond},
		{"p99 of 10 is the max", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p90 of 10", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 90, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sorted := slices.Sorted(slices.Values(tc.samples))
			if got := percentileSorted(sorted, tc.p); got != tc.want {
				t.Errorf("percentileSorted(%v, %v) = %v, want %v", sorted, tc.p, got, tc.want)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing should be NaN")
	}
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 10, 1000}, 10},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if got := medianDuration([]time.Duration{3, 1, 2}); got != 2 {
		t.Errorf("medianDuration = %v, want 2", got)
	}
	if got := medianDuration(nil); got != 0 {
		t.Errorf("medianDuration(nil) = %v, want 0", got)
	}
}

func TestRatio(t *testing.T) {
	if got := ratio(3, 2); got != 1.5 {
		t.Errorf("ratio(3, 2) = %v", got)
	}
	for _, tc := range [][2]float64{{1, 0}, {math.NaN(), 1}, {1, math.NaN()}} {
		if got := ratio(tc[0], tc[1]); !math.IsNaN(got) {
			t.Errorf("ratio(%v, %v) = %v, want NaN", tc[0], tc[1], got)
		}
	}
}

func TestRateAndS3Rows(t *testing.T) {
	r := rateRow([]repResult{{ops: 100, elapsed: time.Second}, {ops: 300, elapsed: time.Second}, {ops: 100, elapsed: 500 * time.Millisecond}})
	if r.Rate != 200 {
		t.Errorf("rate %v, want the median 200", r.Rate)
	}
	s := s3Row([]repResult{{packets: 660, drain: time.Second, acquisitions: 66, participants: 67, wrote: 17}})
	if s.PacketsPerAcq != 10 || math.Abs(s.PacketsPerWriter-660.0/17) > 1e-9 || s.Drain != time.Second {
		t.Errorf("s3 row %+v", s)
	}
}

func TestLatencyOf(t *testing.T) {
	ms := time.Millisecond
	l := latencyOf([][]time.Duration{
		{1 * ms, 2 * ms, 3 * ms},
		{2 * ms, 2500 * ms, 3 * ms, 101 * ms},
		{4 * ms, 100 * ms, 5 * ms},
	})
	if want := []time.Duration{3 * ms, 2500 * ms, 100 * ms}; !slices.Equal(l.RepMax, want) {
		t.Errorf("RepMax %v, want %v", l.RepMax, want)
	}
	if want := []int{0, 2, 0}; !slices.Equal(l.RepSlow, want) { // over 100 ms, not at it
		t.Errorf("RepSlow %v, want %v", l.RepSlow, want)
	}
	if l.Max() != 2500*ms || l.Slow() != 2 {
		t.Errorf("Max %v Slow %d, want 2.5s and 2", l.Max(), l.Slow())
	}
	if l.P50 != 3*ms { // the median of the repetitions' p50s: 2, 3 and 5 ms
		t.Errorf("P50 %v, want 3ms", l.P50)
	}
}
