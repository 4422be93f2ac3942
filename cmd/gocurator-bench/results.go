package main

import (
	"math"
	"slices"
	"time"
)

// Results is one run of the bench: what docs/performance.json holds and
// docs/performance.md is rendered from (report.go).
type Results struct {
	Generated          time.Time
	Elapsed            time.Duration
	Quick              bool
	Counts             counts
	CPU                string
	LoadStart, LoadEnd []float64 // 1, 5 and 15 minute load averages; nil: unknown
	Versions           versions
	ServerSetup        string
	EnsembleSetup      string        `json:",omitempty"`
	JavaOff            string        `json:",omitempty"` // why Java Curator was not measured
	Latency            *latencySetup `json:",omitempty"` // what the latency section ran behind, if it ran
	Scenarios          []*Scenario
}

// versions are what ran.
type versions struct {
	Go, GoZK, Revision, ZKServer string
	Java, Curator, ZKClient      string
}

// counts are the sizes of one run; the same for every implementation.
type counts struct {
	Reps      int           // measured repetitions (medians are reported)
	WarmGo    time.Duration // warm-up of each Go implementation per scenario
	WarmJava  time.Duration // warm-up (JIT) of the JVM per scenario
	Duration  time.Duration // measured window of each timed loop repetition
	S2Client  int           // sessions on the hot mutex: the scenario's headline
	S2Sweep   []int         // the numbers of sessions of its sweep
	S3Reader  int           // readers in the read-write queue
	S3Group   int           // readers between two writers
	S4Client  int           // sessions on the semaphore
	S4Leases  int           // its leases
	S5Paths   int           // lock paths
	S5Worker  int           // goroutines (threads) on one session
	S6Wait    int           // waiting handles, as many for every implementation (the scenario takes time as their square)
	S7Handoff int           // leader hand-offs of each kind per repetition
	S8Nodes   int           `json:",omitempty"` // the nodes of the cached tree (about: see s8Count)
	S8Updates int           `json:",omitempty"` // updates timed per repetition
}

func fullCounts() counts {
	return counts{Reps: 3, WarmGo: time.Second, WarmJava: 4 * time.Second, Duration: 2 * time.Second,
		S2Client: 8, S2Sweep: []int{1, 2, 4, 8, 16, 32}, S3Reader: 50, S3Group: 3, S4Client: 16, S4Leases: 3, S5Paths: 200, S5Worker: 16, S6Wait: 5000, S7Handoff: 200, S8Nodes: 10000, S8Updates: 200}
}

func quickCounts() counts {
	return counts{Reps: 1, WarmGo: 200 * time.Millisecond, WarmJava: time.Second, Duration: 400 * time.Millisecond,
		S2Client: 8, S2Sweep: []int{1, 8, 32}, S3Reader: 20, S3Group: 3, S4Client: 16, S4Leases: 3, S5Paths: 200, S5Worker: 16, S6Wait: 500, S7Handoff: 20, S8Nodes: 2000, S8Updates: 20}
}

// Scenario is one scenario's results: the measures it takes, and a row of
// them per implementation.
type Scenario struct {
	Key      string // "1" … "7"; "1e", "2e": scenarios 1 and 2 on the ensemble
	Title    string
	Setup    string
	Measures []Measure
	Rows     map[string]Row // by implementation
	Sweep    []SweepPoint   `json:",omitempty"` // scenario 2: rows at each number of sessions
	Notes    []string       `json:",omitempty"`
	// HeapBy is, in scenario 6, where a waiter's heap goes, by
	// implementation (waiterHeap).
	HeapBy map[string][]heapShare `json:",omitempty"`
}

// Measure is one number a scenario takes of every implementation.
type Measure struct {
	Key, Label string
	Unit       string // unitTime, unitRate, unitBytes, unitCount or unitNumber
	Better     string `json:",omitempty"` // "lower", "higher", or "" when neither (no ratios)
	Agg        string `json:",omitempty"` // repetitions combine by: "" median, "max", "sum"
}

// The units of measures.
const (
	unitTime   = "ns"
	unitRate   = "/s"
	unitBytes  = "B"
	unitCount  = "count"
	unitNumber = "number"
)

// Row is one implementation's measures in one scenario.
type Row struct {
	Status string             `json:",omitempty"` // empty when measured; else why not
	Value  map[string]float64 `json:",omitempty"` // by measure key, the repetitions combined
	// Reps are each measure's values, one per repetition, in the order the
	// repetitions ran (the i-th of every implementation ran in the same
	// round): the spread the report shows, and what a target is judged on
	// in each repetition.
	Reps map[string][]float64 `json:",omitempty"`
}

// SweepPoint is a scenario's rows at one number of sessions.
type SweepPoint struct {
	Sessions int
	Rows     map[string]Row
}

// The implementations' names, as the report shows them.
const (
	nameOurs    = "gocurator"
	nameCurator = "Curator 5.4 (Java)"
	nameFloor   = "floor (raw go-zk)"
	nameLimit   = "limit (raw go-zk)"
)

// perMeasures are the measures of perAcquisition, per what: per
// acquisition, per lease, per hand-off.
func perMeasures(what string) []Measure {
	return []Measure{
		{Key: "packets", Label: "server packets per " + what, Unit: unitNumber, Better: "lower"},
		{Key: "cpu", Label: "client CPU per " + what, Unit: unitTime, Better: "lower"},
	}
}

// latencyMeasures are the measures of latencyValues with prefix, of what.
func latencyMeasures(prefix, what string) []Measure {
	return []Measure{
		{Key: prefix + "p50", Label: "p50 " + what, Unit: unitTime, Better: "lower"},
		{Key: prefix + "p99", Label: "p99 " + what, Unit: unitTime, Better: "lower"},
		{Key: prefix + "max", Label: "slowest " + what, Unit: unitTime, Better: "lower", Agg: "max"},
		{Key: prefix + "slow", Label: what + " over 100 ms", Unit: unitCount, Agg: "sum"},
	}
}

// perAcquisition is a repetition's client CPU and server packets per
// acquisition: perMeasures.
func perAcquisition(r repResult) map[string]float64 {
	if r.ops == 0 {
		return map[string]float64{}
	}
	return map[string]float64{"cpu": float64(r.cpu) / float64(r.ops), "packets": float64(r.packets) / float64(r.ops)}
}

// rowOf is a row of measures from its repetitions' values.
func rowOf(measures []Measure, reps []map[string]float64) Row {
	r := Row{Value: map[string]float64{}, Reps: map[string][]float64{}}
	for _, m := range measures {
		var xs []float64
		for _, rep := range reps {
			if x, ok := rep[m.Key]; ok && !math.IsNaN(x) && !math.IsInf(x, 0) {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 {
			continue
		}
		r.Reps[m.Key] = xs
		switch m.Agg {
		case "max":
			r.Value[m.Key] = slices.Max(xs)
		case "sum":
			for _, x := range xs {
				r.Value[m.Key] += x
			}
		default:
			r.Value[m.Key] = median(xs)
		}
	}
	return r
}

// spread returns the least and the greatest of a measure's values over the
// repetitions; ok is false for fewer than two.
func (r Row) spread(key string) (lo, hi float64, ok bool) {
	xs := r.Reps[key]
	if len(xs) < 2 {
		return 0, 0, false
	}
	return slices.Min(xs), slices.Max(xs), true
}

// scenario returns the scenario of key, nil if not run.
func (r *Results) scenario(key string) *Scenario {
	for _, s := range r.Scenarios {
		if s.Key == key {
			return s
		}
	}
	return nil
}

// measure returns the scenario's measure of key.
func (s *Scenario) measure(key string) (Measure, bool) {
	for _, m := range s.Measures {
		if m.Key == key {
			return m, true
		}
	}
	return Measure{}, false
}
