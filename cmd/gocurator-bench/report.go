package main

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"strings"
	"text/template"
	"time"
)

// This file renders docs/performance.md from a run's Results with
// report.md.tmpl: the template lays the report out; the tables' cells are
// formatted here.

//go:embed report.md.tmpl
var reportTemplate string

var reportTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"join":  strings.Join,
	"loads": fmtLoads,
	"dur":   func(d time.Duration) string { return fmtValue(unitTime, float64(d)) },
	"twice": func(d time.Duration) time.Duration { return 2 * d },
}).Parse(reportTemplate))

// hotMutexSVG is the file name of the plot of scenario 2's sweep, which the
// command writes next to the report.
const hotMutexSVG = "hot-mutex-sessions.svg"

// implOrder is the order of the implementations' columns; refs are the
// implementations gocurator's values are divided by.
var (
	implOrder = []string{nameOurs, nameCurator, nameFloor, nameLimit}
	refs      = []string{nameCurator, nameFloor, nameLimit}
)

// table is a Markdown table's cells; all columns but the first are
// right-aligned.
type table struct {
	Head []string
	Rows [][]string
}

// section is a scenario as the template shows it.
type section struct {
	*Scenario
	Table        *table
	Missing      []string // "impl: why not measured"
	LatencyIntro bool     // the first of the latency section's: the section's introduction comes before it
}

// render writes the report of r.
func (r *Results) render(w io.Writer) error {
	v := struct {
		*Results
		LoadHigh    bool
		Targets     []targetResult
		Bounds      []targetResult // the missed targets with a bound
		Sections    []section
		PlotFile    string
		LatencyKeys []string
	}{Results: r, LoadHigh: loadHigh(r.LoadStart), Targets: r.targetResults(), PlotFile: hotMutexSVG}
	for _, t := range v.Targets {
		if t.Bound != "" {
			v.Bounds = append(v.Bounds, t)
		}
	}
	for _, s := range r.Scenarios {
		sec := section{Scenario: s, Table: measureTable(s)}
		if delayed(s.Key) && r.Latency != nil {
			sec.LatencyIntro = len(v.LatencyKeys) == 0
			v.LatencyKeys = append(v.LatencyKeys, s.Key)
		}
		for _, name := range implOrder {
			if st := s.Rows[name].Status; st != "" {
				sec.Missing = append(sec.Missing, name+": "+st)
			}
		}
		v.Sections = append(v.Sections, sec)
	}
	return reportTmpl.Execute(w, v)
}

// loadHigh reports whether a run started at a load average of 1 or more
// (or unknown): other work shared the CPUs.
func loadHigh(load []float64) bool { return len(load) == 0 || load[0] >= 1 }

// measureTable is a row per measure of s and a column per implementation
// measured, then gocurator's ratios to the references.
func measureTable(s *Scenario) *table {
	rows := s.Rows
	t := &table{Head: []string{"Measure"}}
	var impls, against []string
	for _, name := range implOrder {
		if rows[name].Value != nil {
			impls = append(impls, name)
			t.Head = append(t.Head, name)
		}
	}
	for _, name := range refs {
		if rows[name].Value != nil {
			against = append(against, name)
			t.Head = append(t.Head, "ours / "+short(name))
		}
	}
	for _, m := range s.Measures {
		line := []string{m.Label}
		if m.Better != "" {
			line[0] += " (" + m.Better + " is better)"
		}
		for _, name := range impls {
			cell := "—"
			if x, ok := rows[name].Value[m.Key]; ok {
				cell = fmtValue(m.Unit, x) + fmtSpread(rows[name], m, x)
			}
			line = append(line, cell)
		}
		for _, name := range against {
			ours, ok := rows[nameOurs].Value[m.Key]
			theirs, ok2 := rows[name].Value[m.Key]
			cell := "—"
			if ok && ok2 && m.Better != "" {
				cell = fmtRatio(ours / theirs)
			}
			line = append(line, cell)
		}
		t.Rows = append(t.Rows, line)
	}
	return t
}

// sweepImpls are the implementations of scenario 2's sweep, in the order of
// the plot's legend, with their lines' colours and dashes.
var sweepImpls = []plotSeries{
	{Name: nameOurs, Color: "#1f6fb4"},
	{Name: nameCurator, Color: "#d62728"},
	{Name: nameFloor, Color: "#666666", Dash: "6 4"},
}

// hotMutexPlot is the plot of scenario 2's sweep: the median acquisitions
// per second of each implementation against the number of sessions. ok is
// false when the sweep was not run.
func (r *Results) hotMutexPlot() (plot linePlot, ok bool) {
	s := r.scenario("2")
	if s == nil || len(s.Sweep) == 0 {
		return linePlot{}, false
	}
	plot = linePlot{Title: "One hot mutex: acquisitions per second against sessions",
		Note:   fmt.Sprintf("gocurator-bench, %s; median of %d repetition(s) of %s each", r.Generated.UTC().Format("2006-01-02 15:04 MST"), r.Counts.Reps, r.Counts.Duration),
		XLabel: "sessions, each acquire+release in a loop on one lock path", YLabel: "acquisitions per second (higher is better)"}
	if r.Quick || loadHigh(r.LoadStart) {
		plot.Note += " (smoke run or loaded machine: do not quote)"
	}
	for _, pt := range s.Sweep {
		plot.X = append(plot.X, float64(pt.Sessions))
	}
	for _, ser := range sweepImpls {
		for _, pt := range s.Sweep {
			y, ok := pt.Rows[ser.Name].Value["rate"]
			if !ok {
				y = math.NaN()
			}
			ser.Y = append(ser.Y, y)
		}
		plot.Series = append(plot.Series, ser)
	}
	return plot, true
}

// summary is a repetition's values of measures on one line, for the log.
func summary(measures []Measure, v map[string]float64) string {
	var parts []string
	for _, m := range measures {
		if x, ok := v[m.Key]; ok {
			parts = append(parts, m.Key+" "+fmtValue(m.Unit, x))
		}
	}
	return strings.Join(parts, ", ")
}

// ---- formatting ----

// short is an implementation's name without what follows its first word:
// "Curator", "floor", "limit".
func short(name string) string { return strings.Fields(name)[0] }

// fmtValue formats x of unit for the report: a time in the unit that
// suits it, bytes as KiB from 1 KiB on.
func fmtValue(unit string, x float64) string {
	d := time.Duration(x)
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0):
		return "—"
	case unit == unitTime && d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond))
	case unit == unitTime && d < 10*time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	case unit == unitTime && d < time.Second:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	case unit == unitTime:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case unit == unitBytes && math.Abs(x) >= 1024:
		return fmt.Sprintf("%.2f KiB", x/1024)
	case unit == unitBytes:
		return fmt.Sprintf("%.0f B", x)
	case unit == unitRate || unit == unitCount:
		return fmt.Sprintf("%.0f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// fmtSpread is " ±x%" beside a median x of m that varied over the
// repetitions: half their range, relative to x; "" when it did not vary,
// for a count or a sum, and for fewer than two repetitions.
func fmtSpread(r Row, m Measure, x float64) string {
	lo, hi, ok := r.spread(m.Key)
	if !ok || m.Agg != "" || m.Unit == unitCount || x == 0 || hi == lo {
		return ""
	}
	return fmt.Sprintf(" ±%.0f%%", 50*(hi-lo)/math.Abs(x))
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", x)
}

func fmtLoads(load []float64) string {
	if len(load) != 3 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f, %.2f, %.2f", load[0], load[1], load[2])
}
