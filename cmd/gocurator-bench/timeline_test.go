package main

import (
	"strings"
	"testing"
)

// -timeline, with few cycles, on a real server: every Go implementation's
// cycle is laid out step by step from the frames its connection logged
// (the floor's listing after its create's reply, gocurator's before it).
func TestTimeline(t *testing.T) {
	srv, ctx := benchServer(t)
	var out strings.Builder
	if err := runTimeline(ctx, &out, srv.Addr(), "/timeline", 200, 50); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{
		nameFloor + ": 200 cycles", nameLimit + ": 200 cycles", nameOurs + ": 200 cycles",
		"create's reply read → listing written", // the floor's
		"create written → listing written",      // gocurator's
		"delete written → delete's reply read",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the timeline lacks %q", want)
		}
	}
}

// The drain's timeline, with few waiters, on a real server: every
// hand-off of each implementation is a delete, its notification, and the
// next delete.
func TestDrainTimeline(t *testing.T) {
	srv, ctx := benchServer(t)
	e := &env{srv: srv, servers: srv.Addr(), base: "/drain", logf: t.Logf}
	var out strings.Builder
	if err := e.drainTimeline(ctx, &out, 30); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	for _, want := range []string{nameFloor + ": 30 waiters drained", nameOurs + ": 30 waiters drained", "notification read", "the median hand-off:"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the drain's timeline lacks %q", want)
		}
	}
}
