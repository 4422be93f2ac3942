package zkconn

import (
	"testing"
	"time"
)

// The last renewal the leader surely had: a handshake at once; then an
// answer only once another, at least a twentieth of the timeout later, was
// answered too (a follower answering that long after was still in touch
// with its leader). An idle client's is the ping before the last; a busy
// one's trails its newest answer by the margin.
func TestRenewals(t *testing.T) {
	const T = 6 * time.Second
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	var r renewals
	r.setMargin(int64(T / 20)) // 300 ms
	r.answered(ms(1000), true)
	check := func(what string, newest, renewed int64) {
		t.Helper()
		n, rn := r.times()
		if n != newest || rn != renewed {
			t.Fatalf("%s: newest %v, renewed %v; want %v, %v", what, time.Duration(n), time.Duration(rn), time.Duration(newest), time.Duration(renewed))
		}
	}
	check("a handshake", ms(1000), ms(1000))
	r.answered(ms(3000), false) // a ping, T/3 later
	check("one ping answered: it may be a cut-off follower's", ms(3000), ms(1000))
	r.answered(ms(5000), false) // the next ping
	check("an idle client: the ping before the last", ms(5000), ms(3000))
	for at := int64(5001); at <= 5500; at++ { // busy: a request every millisecond
		r.answered(ms(at), false)
	}
	check("a busy client: the margin behind its newest", ms(5500), ms(5200))
	r.answered(ms(5100), false) // a late answer, within the margin of the newest: proves nothing more
	check("a late answer", ms(5500), ms(5200))
	for at := int64(5501); at <= 9000; at++ { // busy for longer than its window holds: the window moves down
		r.answered(ms(at), false)
		if _, rn := r.times(); rn != ms(at-300) {
			t.Fatalf("busy at %d ms: renewed %v, want the margin behind", at, time.Duration(rn))
		}
	}
	if old := r.reset(int64(T / 20)); old != ms(8700) {
		t.Fatalf("reset returned %v, want the old session's renewal", time.Duration(old))
	}
	check("a new session", 0, 0)
}

// BenchmarkRenewalsBusy is one answer of a busy client: a request every
// 10 µs, a 40 s session (a margin of 2 s: 200,000 answers in the window).
func BenchmarkRenewalsBusy(b *testing.B) {
	var r renewals
	r.setMargin(int64(2 * time.Second))
	r.answered(1, true)
	for i := range b.N {
		r.answered(int64(i+2)*int64(10*time.Microsecond), false)
	}
}
