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
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// median returns the median of xs (the mean of the two middle values for an
// even count), NaN for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// slowCycle is the time above which a cycle counts as a stall: the
// latencies' "over 100 ms" measure.
const slowCycle = 100 * time.Millisecond

// latencyValues puts a repetition's latencies into m, as the measures of
// latencyMeasures(prefix, …): p50, p99, the slowest, and how many took over
// slowCycle, which the percentiles hide (a stall of seconds moves neither).
func latencyValues(m map[string]float64, prefix string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	s := slices.Sorted(slices.Values(lat))
	m[prefix+"p50"] = float64(percentileSorted(s, 50))
	m[prefix+"p99"] = float64(percentileSorted(s, 99))
	m[prefix+"max"] = float64(s[len(s)-1])
	m[prefix+"slow"] = float64(len(s) - sort.Search(len(s), func(i int) bool { return s[i] > slowCycle }))
}
