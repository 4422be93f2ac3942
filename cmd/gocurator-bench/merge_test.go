package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// -merge puts a run's scenarios into a results file in place of theirs, in
// the scenarios' order, each noting that it ran on its own, and keeps the
// others and the header; a quick run does not merge into a full one.
func TestMergeInto(t *testing.T) {
	path := filepath.Join(t.TempDir(), "performance.json")
	old := &Results{Generated: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Versions: versions{Revision: "old"},
		Scenarios: []*Scenario{{Key: "1"}, {Key: "8", Title: "before"}, {Key: "1e"}}}
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := &Results{Generated: time.Date(2026, 2, 2, 0, 0, 0, 0, time.UTC), Versions: versions{Revision: "new"},
		Counts: counts{Reps: 3, S8Nodes: 10000, S8Updates: 200}, LoadStart: []float64{0.1, 0.2, 0.3},
		Scenarios: []*Scenario{{Key: "8", Title: "after"}, {Key: "2d"}}}
	res, err := mergeInto(path, run)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, s := range res.Scenarios {
		keys = append(keys, s.Key)
	}
	if strings.Join(keys, ",") != "1,8,2d,1e" || res.scenario("8").Title != "after" || res.Versions.Revision != "old" ||
		res.Counts.S8Nodes != 10000 {
		t.Fatalf("merged: %v, %q, revision %s, counts %+v", keys, res.scenario("8").Title, res.Versions.Revision, res.Counts)
	}
	if n := res.scenario("8").Notes; len(n) != 1 || !strings.Contains(n[0], "ran on its own") || !strings.Contains(n[0], "revision new") ||
		!strings.Contains(n[0], "0.10, 0.20, 0.30") {
		t.Fatalf("the merged scenario's note: %q", n)
	}
	run.Quick = true
	if _, err := mergeInto(path, run); err == nil {
		t.Fatal("a quick run merged into a full one")
	}
}
