package main

import "testing"

// TestS3Pattern tests scenario 3's queue; this file holds scenario 3's unit
// tests.
func TestS3Pattern(t *testing.T) {
	p := s3Pattern(50, 3)
	writers, readers := 0, 0
	for _, w := range p {
		if w {
			writers++
		} else {
			readers++
		}
	}
	if len(p) != 67 || writers != 17 || readers != 50 || !p[0] || p[1] || p[2] || p[3] || !p[4] {
		t.Errorf("pattern: %d participants, %d writers, %d readers, starts %v", len(p), writers, readers, p[:5])
	}
}
