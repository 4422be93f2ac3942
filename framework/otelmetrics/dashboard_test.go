package otelmetrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	dto "github.com/prometheus/client_model/go"
)

// dashboardFile is the Grafana dashboard of docs/grafana.
const dashboardFile = "../../docs/grafana/gocurator.json"

// checkDashboard fails the test unless every query of the dashboard names
// metrics that families (a scrape of the example's /metrics) has, with
// labels they have, and, where a query asks for a label's value (outcome
// "timeout"), with that value among them.
func checkDashboard(t *testing.T, families map[string]*dto.MetricFamily) {
	t.Helper()
	queries := dashboardQueries(t)
	if len(queries) == 0 {
		t.Fatalf("%s: no queries", dashboardFile)
	}
	for _, q := range queries {
		sel, err := parsePromQL(q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		if len(sel.metrics) == 0 {
			t.Errorf("%s: names no metric", q)
		}
		var labels []string // of the metrics the query names
		for _, name := range sel.metrics {
			f, extra := family(families, name)
			if f == nil {
				t.Errorf("%s: %s is not a metric the example exports", q, name)
				continue
			}
			labels = append(append(labels, extra...), labelsOf(f)...)
			for _, m := range sel.matchers[name] {
				values := valuesOf(f, m.label)
				switch {
				case values == nil:
					t.Errorf("%s: %s has no label %s", q, name, m.label)
				case m.op == "=" && !slices.Contains(values, m.value):
					t.Errorf("%s: %s{%s=%q}: no such series (values: %q)", q, name, m.label, m.value, values)
				}
			}
		}
		for _, l := range sel.grouping {
			if !slices.Contains(labels, l) {
				t.Errorf("%s: groups by %s, a label none of its metrics has", q, l)
			}
		}
	}
}

// dashboardQueries returns the PromQL of the dashboard's panels' targets
// and of its variables.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
		Templating struct {
			List []struct {
				Type  string
				Query json.RawMessage
			}
		}
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	var qs []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", dashboardFile, p.Title)
		}
		for _, target := range p.Targets {
			qs = append(qs, target.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("%s: a variable's query: %v", dashboardFile, err)
		}
		qs = append(qs, q.Query)
	}
	return qs
}

// family is the family that the sample name belongs to (a histogram's
// _bucket, _sum and _count are its), with the labels the name adds (le).
func family(families map[string]*dto.MetricFamily, name string) (*dto.MetricFamily, []string) {
	if f := families[name]; f != nil {
		return f, nil
	}
	for suffix, extra := range map[string][]string{"_bucket": {"le"}, "_sum": nil, "_count": nil} {
		if f := families[strings.TrimSuffix(name, suffix)]; strings.HasSuffix(name, suffix) && f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
			return f, extra
		}
	}
	return nil, nil
}

func labelsOf(f *dto.MetricFamily) []string {
	var ls []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if !slices.Contains(ls, l.GetName()) {
				ls = append(ls, l.GetName())
			}
		}
	}
	return ls
}

// valuesOf are the values label takes in f; nil if f has no such label.
func valuesOf(f *dto.MetricFamily, label string) []string {
	var vs []string
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && !slices.Contains(vs, l.GetValue()) {
				vs = append(vs, l.GetValue())
			}
		}
	}
	return vs
}

// promSelectors is what a PromQL query selects: its metric names, the
// label matchers of each, and the labels it groups by.
type promSelectors struct {
	metrics  []string
	matchers map[string][]promMatcher
	grouping []string
}

type promMatcher struct{ label, op, value string }

// promKeywords are PromQL's words that are neither metrics nor functions.
var promKeywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"}

// parsePromQL reads q as far as the dashboard's queries need: selectors
// (a metric, {matchers}), functions and aggregations (a name and "(", or
// by/without),
// by/without (labels), range selectors ([...], skipped), numbers, and
// Grafana's label_values(metric, label).
func parsePromQL(q string) (promSelectors, error) {
	sel := promSelectors{matchers: map[string][]promMatcher{}}
	toks, err := promTokens(q)
	if err != nil {
		return sel, err
	}
	for i := 0; i < len(toks); i++ {
		tok, next := toks[i], ""
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case !isIdent(tok):
		case tok == "by" || tok == "without":
			labels, n, err := identList(toks[i+1:])
			if err != nil {
				return sel, err
			}
			sel.grouping = append(sel.grouping, labels...)
			i += n
		case tok == "label_values" && next == "(":
			args, n, err := identList(toks[i+1:])
			if err != nil || len(args) != 2 {
				return sel, fmt.Errorf("label_values(metric, label): %v", args)
			}
			sel.metrics, sel.grouping = append(sel.metrics, args[0]), append(sel.grouping, args[1])
			i += n
		case next == "(" || next == "by" || next == "without" || slices.Contains(promKeywords, tok):
			// a function or an aggregation, or a keyword
		default:
			sel.metrics = append(sel.metrics, tok)
			if next == "{" {
				ms, n, err := matchers(toks[i+2:])
				if err != nil {
					return sel, err
				}
				sel.matchers[tok] = append(sel.matchers[tok], ms...)
				i += n + 1
			}
		}
	}
	return sel, nil
}

// identList reads "(a, b, ...)" from toks; n is the tokens it took.
func identList(toks []string) (idents []string, n int, err error) {
	if len(toks) == 0 || toks[0] != "(" {
		return nil, 0, fmt.Errorf("( expected")
	}
	for n = 1; n < len(toks) && toks[n] != ")"; n++ {
		if toks[n] != "," {
			if !isIdent(toks[n]) {
				return nil, 0, fmt.Errorf("a name expected in a list, got %s", toks[n])
			}
			idents = append(idents, toks[n])
		}
	}
	if n == len(toks) {
		return nil, 0, fmt.Errorf(") expected")
	}
	return idents, n + 1, nil
}

// matchers reads `label op "value", ... }` from toks; n is the tokens it
// took, the } included.
func matchers(toks []string) (ms []promMatcher, n int, err error) {
	for n < len(toks) && toks[n] != "}" {
		if n+2 >= len(toks) || !isIdent(toks[n]) || !strings.HasPrefix(toks[n+2], `"`) {
			return nil, 0, fmt.Errorf("label matcher expected at %q", toks[n:])
		}
		ms = append(ms, promMatcher{toks[n], toks[n+1], strings.Trim(toks[n+2], `"`)})
		n += 3
		if n < len(toks) && toks[n] == "," {
			n++
		}
	}
	if n == len(toks) {
		return nil, 0, fmt.Errorf("} expected")
	}
	return ms, n + 1, nil
}

// promTokens splits q into names, strings (quoted), operators and
// punctuation; numbers and range selectors are dropped.
func promTokens(q string) ([]string, error) {
	var toks []string
	rs := []rune(q)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '[':
			end := strings.IndexRune(string(rs[i:]), ']')
			if end < 0 {
				return nil, fmt.Errorf("] expected")
			}
			i += len([]rune(string(rs[i:])[:end])) + 1
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, string(rs[i:j+1]))
			i = j + 1
		case r == '_' || r == ':' || unicode.IsLetter(r):
			j := i
			for j < len(rs) && (rs[j] == '_' || rs[j] == ':' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, string(rs[i:j]))
			i = j
		case unicode.IsDigit(r) || r == '.':
			for i < len(rs) && (unicode.IsDigit(rs[i]) || rs[i] == '.') {
				i++
			}
		case strings.ContainsRune("=!", r) && i+1 < len(rs) && strings.ContainsRune("=~", rs[i+1]):
			toks = append(toks, string(rs[i:i+2]))
			i += 2
		default:
			toks = append(toks, string(r))
			i++
		}
	}
	return toks, nil
}

func isIdent(tok string) bool {
	return tok != "" && (tok[0] == '_' || tok[0] == ':' || unicode.IsLetter(rune(tok[0])))
}
