package main

import (
	"errors"
	"math"
	"time"
)

// errSkipped marks a row that was deliberately not measured; its message
// is the row's status.
var errSkipped = errors.New("not measured")

// counts are the sizes of one run; the same for every implementation.
type counts struct {
	Reps      int           // measured repetitions (medians are reported)
	WarmGo    time.Duration // warm-up of each Go implementation per scenario
	WarmJava  time.Duration // warm-up (JIT) of the JVM per scenario
	S1Ops     int           // acquire+release cycles per repetition
	Duration  time.Duration // measured window of each throughput repetition
	S2Client  int           // sessions on the hot mutex: the scenario's headline
	S2Sweep   []int         // the numbers of sessions of its sweep (gocurator, Curator, floor)
	S3Reader  int           // readers in the read-write queue
	S3Group   int           // readers between two writers
	S4Client  int           // sessions on the semaphore
	S4Leases  int           // its leases
	S5Paths   int           // lock paths
	S5Worker  int           // goroutines (threads) on one session
	S6Wait    int           // waiting handles
	S7Handoff int           // leader hand-offs of each kind per repetition
}

func fullCounts() counts {
	return counts{Reps: 3, WarmGo: time.Second, WarmJava: 4 * time.Second, S1Ops: 1500, Duration: 2 * time.Second,
		S2Client: 8, S2Sweep: []int{1, 2, 4, 8, 16, 32}, S3Reader: 50, S3Group: 3, S4Client: 16, S4Leases: 3, S5Paths: 200, S5Worker: 16, S6Wait: 10000, S7Handoff: 200}
}

func quickCounts() counts {
	return counts{Reps: 1, WarmGo: 200 * time.Millisecond, WarmJava: time.Second, S1Ops: 200,
		Duration: 500 * time.Millisecond, S2Client: 8, S2Sweep: []int{1, 8, 32}, S3Reader: 20, S3Group: 3, S4Client: 16, S4Leases: 3,
		S5Paths: 200, S5Worker: 16, S6Wait: 500, S7Handoff: 20}
}

// row is one implementation's result in one scenario.
type row struct {
	Impl   string
	Status string // empty when measured; else why not (not supported, not yet, error)

	// scenario 1: each acquire+release; scenario 7: each hand-off after the
	// leader's Close
	Lat          latency
	PacketsPerOp float64 // server packets per acquire+release

	// scenario 7: each hand-off after the leader's session ended
	SessionLat latency

	// scenarios 2, 4, 5: acquisitions (leases) per second
	Rate     float64 // median
	RepRates []float64

	// scenario 3
	PacketsPerAcq    float64 // median
	PacketsPerWriter float64 // median: packets per writer release
	Drain            time.Duration
	RepPacketsPerAcq []float64
	RepDrain         []time.Duration
	Participants     int
	Writers          int

	// scenario 6
	Waiters        int
	HeapPerWaiter  float64 // bytes of HeapInuse (after GC) per waiting handle
	StackPerWaiter float64 // bytes of StackInuse per waiting goroutine
	FIFO           bool
	FIFODetail     string
	Setup          time.Duration // time until every waiter waited
	AcquireAll     time.Duration // time from the first release until all had acquired
}

func (r row) ok() bool { return r.Status == "" }

// scenarioResult is one scenario: a row per implementation.
type scenarioResult struct {
	ID    int
	Title string
	Setup string
	Rows  []row
	Notes []string
	Sweep []sweepPoint // scenario 2: rows at each number of sessions
}

// sweepPoint is a scenario's rows at one number of sessions.
type sweepPoint struct {
	Sessions int
	Rows     []row
}

// find returns the row of impl, if measured.
func (pt sweepPoint) find(impl string) (row, bool) { return findRow(pt.Rows, impl) }

// value returns a metric of impl's row, NaN if it was not measured.
func (pt sweepPoint) value(impl string, f func(row) float64) float64 {
	return rowValue(pt.Rows, impl, f)
}

// find returns the row of impl, if measured.
func (s *scenarioResult) find(impl string) (row, bool) {
	if s == nil {
		return row{}, false
	}
	return findRow(s.Rows, impl)
}

// value returns a metric of impl's row, NaN if it was not measured.
func (s *scenarioResult) value(impl string, f func(row) float64) float64 {
	if s == nil {
		return math.NaN()
	}
	return rowValue(s.Rows, impl, f)
}

func findRow(rows []row, impl string) (row, bool) {
	for _, r := range rows {
		if r.Impl == impl && r.ok() {
			return r, true
		}
	}
	return row{}, false
}

func rowValue(rows []row, impl string, f func(row) float64) float64 {
	r, ok := findRow(rows, impl)
	if !ok {
		return math.NaN()
	}
	return f(r)
}
