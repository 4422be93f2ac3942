package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
	"strings"
)

// This file draws the report's plot: an SVG written by hand, with no
// dependency.
//
// linePlot is a line plot over a base-2 logarithmic x axis (numbers of
// sessions), with a linear y axis from 0.
type linePlot struct {
	Title, Note    string // Note: a smaller line under the title
	XLabel, YLabel string
	X              []float64 // ascending, all > 0
	Series         []plotSeries
}

// plotSeries is one line of a plot.
type plotSeries struct {
	Name  string
	Color string    // an SVG colour
	Dash  string    // an SVG stroke-dasharray; "" draws a solid line
	Y     []float64 // one per X; NaN where not measured, which breaks the line
}

// The plot's size and its margins around the axes (the legend is in the
// right one).
const (
	plotW, plotH           = 760, 440
	padL, padR, padT, padB = 76, 210, 60, 58
	plotInset              = 18 // between the y axis and the first point, the last point and the end of the x axis
)

// niceAxis returns the step of the y axis's ticks (1, 2, 2.5 or 5 times a
// power of ten, about five ticks) and its top, a multiple of the step
// above max.
func niceAxis(max float64) (step, top float64) {
	if !(max > 0) || math.IsInf(max, 0) {
		return 1, 1
	}
	raw := max / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * mag
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	return step, math.Ceil(max*1.04/step) * step
}

// writeSVG writes the plot as a standalone SVG document.
func (p linePlot) writeSVG(w io.Writer) {
	var b strings.Builder
	f := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	esc := html.EscapeString
	num := func(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }
	ymax := 0.0
	for _, s := range p.Series {
		for _, y := range s.Y {
			if !math.IsNaN(y) {
				ymax = max(ymax, y)
			}
		}
	}
	step, top := niceAxis(ymax)
	left, right, bottom, upper := float64(padL), float64(plotW-padR), float64(plotH-padB), float64(padT)
	px := func(x float64) float64 {
		lo, hi := math.Log2(p.X[0]), math.Log2(p.X[len(p.X)-1])
		if hi == lo {
			return (left + right) / 2
		}
		in := float64(plotInset)
		return left + in + (math.Log2(x)-lo)/(hi-lo)*(right-left-2*in)
	}
	py := func(y float64) float64 { return bottom - y/top*(bottom-upper) }

	f(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		plotW, plotH, plotW, plotH)
	f(`<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	f(`<text x="%d" y="24" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", plotW/2, esc(p.Title))
	if p.Note != "" {
		f(`<text x="%d" y="42" text-anchor="middle" font-size="11" fill="#555">%s</text>`+"\n", plotW/2, esc(p.Note))
	}
	// y grid and ticks
	for i := 0; float64(i)*step <= top*(1+1e-9); i++ {
		v := float64(i) * step
		y := py(v)
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e3e3e3"/>`+"\n", left, y, right, y)
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left-5, y, left, y)
		f(`<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, y+4, num(v))
	}
	// x ticks
	for _, x := range p.X {
		X := px(x)
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", X, bottom, X, bottom+5)
		f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", X, bottom+19, num(x))
	}
	// axes and their labels
	f(`<path d="M%.1f %.1f V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", left, upper, bottom, right)
	f(`<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", (left+right)/2, bottom+42, esc(p.XLabel))
	f(`<text transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", left-56, (upper+bottom)/2, esc(p.YLabel))
	// each series: its line, broken where a value is missing, its points
	// after it, and its legend entry
	for i, s := range p.Series {
		stroke := fmt.Sprintf(`stroke="%s" stroke-width="2"`, esc(s.Color))
		if s.Dash != "" {
			stroke += fmt.Sprintf(` stroke-dasharray="%s"`, esc(s.Dash))
		}
		var run []string
		var points strings.Builder
		flush := func() {
			if len(run) > 1 {
				f(`<polyline points="%s" fill="none" %s/>`+"\n", strings.Join(run, " "), stroke)
			}
			run = run[:0]
		}
		for i, x := range p.X {
			if i >= len(s.Y) || math.IsNaN(s.Y[i]) {
				flush()
				continue
			}
			run = append(run, fmt.Sprintf("%.1f,%.1f", px(x), py(s.Y[i])))
			fmt.Fprintf(&points, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"><title>%s, %s: %s</title></circle>`+"\n",
				px(x), py(s.Y[i]), esc(s.Color), esc(s.Name), num(x), fmtValue(unitRate, s.Y[i]))
		}
		flush()
		b.WriteString(points.String())
		y := upper + 10 + float64(i)*22
		f(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" %s/>`+"\n", right+20, y, right+48, y, stroke)
		f(`<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", right+34, y, esc(s.Color))
		f(`<text x="%.1f" y="%.1f">%s</text>`+"\n", right+56, y+4, esc(s.Name))
	}
	f("</svg>\n")
	io.WriteString(w, b.String())
}
