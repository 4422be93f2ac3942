package main

import (
	"math"
	"slices"
	"sort"
	"time"
)

// percentileSorted returns the p-th percentile (0 < p ≤ 100) of sorted
// samples by the nearest-rank method: the smallest sample such that at
// least p% of the samples are less than or equal to it. It returns 0 for no
// samples.
func percentileSorted(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	if p <= 0 {
		return sorted[0]
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	if rank < 1 {
		rank = 1
	}
	if rank > len(sorted) {
		rank = len(sorted)
	}
	return sorted[rank-1]
}

// median returns the median of xs (the mean of the two middle values for an
// even count), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medianDuration is median for durations.
func medianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	m := median(xs)
	if math.IsNaN(m) {
		return 0
	}
	return time.Duration(math.Round(m))
}

// ratio returns a/b, or NaN when either is unknown (NaN) or b is 0.
func ratio(a, b float64) float64 {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return math.NaN()
	}
	return a / b
}

// slowCycle is the cycle time above which the report counts a cycle as a
// stall.
const slowCycle = 100 * time.Millisecond

// latency sums up an implementation's cycle times in a scenario: the
// medians over the repetitions of their p50 and p99, and each repetition's
// p50, p99, slowest cycle and number of cycles over slowCycle, which show
// what the percentiles hide (a stall of seconds inside one repetition moves
// neither).
type latency struct {
	P50, P99               time.Duration // medians over repetitions
	RepP50, RepP99, RepMax []time.Duration
	RepSlow                []int
}

// latencyOf sums up the cycle times of each repetition.
func latencyOf(reps [][]time.Duration) latency {
	var l latency
	for _, lat := range reps {
		s := slices.Clone(lat)
		slices.Sort(s)
		slow := len(s) - sort.Search(len(s), func(i int) bool { return s[i] > slowCycle })
		l.RepP50 = append(l.RepP50, percentileSorted(s, 50))
		l.RepP99 = append(l.RepP99, percentileSorted(s, 99))
		l.RepMax = append(l.RepMax, percentileSorted(s, 100))
		l.RepSlow = append(l.RepSlow, slow)
	}
	l.P50, l.P99 = medianDuration(l.RepP50), medianDuration(l.RepP99)
	return l
}

// Max is the slowest cycle of all repetitions.
func (l latency) Max() time.Duration {
	var m time.Duration
	for _, d := range l.RepMax {
		m = max(m, d)
	}
	return m
}

// Slow is the number of cycles over slowCycle in all repetitions.
func (l latency) Slow() int {
	n := 0
	for _, s := range l.RepSlow {
		n += s
	}
	return n
}
