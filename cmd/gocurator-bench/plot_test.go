package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
)

func TestNiceAxis(t *testing.T) {
	for _, tc := range []struct{ max, step, top float64 }{
		{887, 200, 1000},
		{1298, 500, 1500},
		{1150, 250, 1250},
		{96, 20, 100},
		{0, 1, 1},
		{math.NaN(), 1, 1},
	} {
		step, top := niceAxis(tc.max)
		if step != tc.step || top != tc.top {
			t.Errorf("niceAxis(%v) = %v, %v; want %v, %v", tc.max, step, top, tc.step, tc.top)
		}
	}
}

// The plot is well-formed XML with a line per series (broken where a value
// is missing), a point per value and a legend entry per series.
func TestPlotSVG(t *testing.T) {
	p := linePlot{Title: "T <&>", XLabel: "sessions", YLabel: "per second", X: []float64{1, 2, 4, 8},
		Series: []plotSeries{
			{Name: "a", Color: "#123456", Y: []float64{10, 20, 30, 40}},
			{Name: "b (Java)", Color: "red", Dash: "4 2", Y: []float64{5, math.NaN(), 15, 25}},
		}}
	var b bytes.Buffer
	p.writeSVG(&b)
	out := b.String()
	d := xml.NewDecoder(strings.NewReader(out))
	count := map[string]int{}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, out)
		}
		if se, ok := tok.(xml.StartElement); ok {
			count[se.Name.Local]++
		}
	}
	// a: one line; b: its first point alone, then a line of two
	if count["polyline"] != 2 {
		t.Errorf("%d polylines, want 2", count["polyline"])
	}
	if count["circle"] != 7+2 { // the points and the legend's markers
		t.Errorf("%d circles, want 9", count["circle"])
	}
	for _, want := range []string{"T &lt;&amp;&gt;", ">b (Java)</text>", `stroke-dasharray="4 2"`, ">8</text>", ">40</text>"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
}
