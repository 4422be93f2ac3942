package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Compile-time checks.
var (
	_ Policy     = (*ExponentialBackoff)(nil)
	_ Policy     = (*NTimes)(nil)
	_ Policy     = (*UntilElapsed)(nil)
	_ Policy     = (*Forever)(nil)
	_ Policy     = (*SessionFailed)(nil)
	_ Classifier = (*SessionFailed)(nil)
)

func seeded() rand.Source { return rand.NewPCG(1, 2) }

func TestExponentialBounds(t *testing.T) {
	const base = 10 * time.Millisecond
	p := NewExponentialBackoff(base, 29, WithRand(seeded()))
	for rc := 0; rc < 29; rc++ {
		hi := time.Duration(int64(1)<<(rc+1)-1) * base
		seenHi := false
		for range 2000 {
			d, ok := p.AllowRetry(rc, 0)
			if !ok {
				t.Fatalf("retry %d refused", rc)
			}
			if d < base || d > hi || d%base != 0 {
				t.Fatalf("retry %d: sleep %v outside [%v, %v] or not a multiple of base", rc, d, base, hi)
			}
			if rc <= 2 && d == hi {
				seenHi = true
			}
		}
		if rc <= 2 && !seenHi {
			t.Errorf("retry %d: never drew the maximum %v in 2000 draws", rc, hi)
		}
	}
	// retry #0 always sleeps exactly base.
	for range 100 {
		if d, _ := p.AllowRetry(0, 0); d != base {
			t.Fatalf("retry 0 slept %v, want %v", d, base)
		}
	}
}

func TestExponentialExactSeeded(t *testing.T) {
	const base = time.Second
	p := NewExponentialBackoff(base, 10, WithRand(seeded()))
	r := rand.New(seeded())
	for rc := range 10 {
		want := time.Duration(max(1, r.Int64N(int64(1)<<(rc+1)))) * base
		got, ok := p.AllowRetry(rc, 0)
		if !ok || got != want {
			t.Errorf("retry %d: got (%v, %v), want (%v, true)", rc, got, ok, want)
		}
	}
	// Golden values for rand.NewPCG(1, 2), in units of base (math/rand/v2
	// pins PCG and Int64N outputs in its own regression tests).
	golden := []int64{1, 1, 1, 10, 16, 60, 121, 142, 409, 176}
	g := NewExponentialBackoff(base, 10, WithRand(seeded()))
	for rc, w := range golden {
		if got, _ := g.AllowRetry(rc, 0); got != time.Duration(w)*base {
			t.Errorf("golden retry %d: got %v, want %v", rc, got, time.Duration(w)*base)
		}
	}
	// Same seed, same sequence.
	a := NewExponentialBackoff(base, 10, WithRand(seeded()))
	b := NewExponentialBackoff(base, 10, WithRand(seeded()))
	for rc := range 10 {
		da, _ := a.AllowRetry(rc, 0)
		db, _ := b.AllowRetry(rc, 0)
		if da != db {
			t.Fatalf("retry %d: seeded policies differ: %v vs %v", rc, da, db)
		}
	}
}

func TestExponentialAllowRefuse(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		wantMax    int
	}{
		{"zero", 0, 0},
		{"negative", -5, 0},
		{"three", 3, 3},
		{"cap", 29, 29},
		{"above cap", 30, 29},
		{"huge", math.MaxInt, 29},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewExponentialBackoff(time.Millisecond, tt.maxRetries)
			if p.MaxRetries() != tt.wantMax {
				t.Errorf("MaxRetries() = %d, want %d", p.MaxRetries(), tt.wantMax)
			}
			for rc := 0; rc < tt.wantMax; rc++ {
				if _, ok := p.AllowRetry(rc, time.Hour); !ok {
					t.Errorf("retry %d refused", rc)
				}
			}
			for _, rc := range []int{tt.wantMax, tt.wantMax + 1, 1000} {
				if d, ok := p.AllowRetry(rc, 0); ok || d != 0 {
					t.Errorf("retry %d: got (%v, %v), want (0, false)", rc, d, ok)
				}
			}
		})
	}
	// Negative retryCount is treated as 0.
	p := NewExponentialBackoff(time.Millisecond, 1)
	if d, ok := p.AllowRetry(-1, 0); !ok || d != time.Millisecond {
		t.Errorf("AllowRetry(-1) = (%v, %v), want (1ms, true)", d, ok)
	}
}

func TestExponentialMaxSleep(t *testing.T) {
	const base = 100 * time.Millisecond
	tests := []struct {
		name string
		p    *ExponentialBackoff
		cap  time.Duration
	}{
		{"WithMaxSleep", NewExponentialBackoff(base, 29, WithMaxSleep(time.Second), WithRand(seeded())), time.Second},
		{"bounded", NewBoundedExponentialBackoff(base, time.Second, 29, WithRand(seeded())), time.Second},
		{"bounded smaller option wins", NewBoundedExponentialBackoff(base, time.Second, 29, WithMaxSleep(300*time.Millisecond), WithRand(seeded())), 300 * time.Millisecond},
		{"bounded smaller arg wins", NewBoundedExponentialBackoff(base, 300*time.Millisecond, 29, WithMaxSleep(time.Second), WithRand(seeded())), 300 * time.Millisecond},
		{"cap below base", NewBoundedExponentialBackoff(base, 10*time.Millisecond, 29), 10 * time.Millisecond},
		{"negative cap", NewExponentialBackoff(base, 29, WithMaxSleep(-time.Second)), 0},
		{"negative bounded cap", NewBoundedExponentialBackoff(base, -time.Second, 29), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.p.MaxSleep() != tt.cap {
				t.Errorf("MaxSleep() = %v, want %v", tt.p.MaxSleep(), tt.cap)
			}
			hitCap := false
			for rc := range 29 {
				for range 50 {
					d, ok := tt.p.AllowRetry(rc, 0)
					if !ok {
						t.Fatalf("retry %d refused", rc)
					}
					if d > tt.cap || d < min(base, tt.cap) {
						t.Fatalf("retry %d: sleep %v outside [%v, %v]", rc, d, min(base, tt.cap), tt.cap)
					}
					hitCap = hitCap || d == tt.cap
				}
			}
			if !hitCap {
				t.Errorf("cap %v never reached", tt.cap)
			}
		})
	}
	if got := NewExponentialBackoff(base, 1).MaxSleep(); got != time.Duration(math.MaxInt64) {
		t.Errorf("default MaxSleep() = %v, want unlimited", got)
	}
}

func TestExponentialNoOverflow(t *testing.T) {
	for _, base := range []time.Duration{time.Hour, 24 * time.Hour, time.Duration(math.MaxInt64 / 2), time.Duration(math.MaxInt64)} {
		p := NewExponentialBackoff(base, 29, WithRand(seeded()))
		for range 200 {
			d, ok := p.AllowRetry(28, 0)
			if !ok {
				t.Fatal("retry 28 refused")
			}
			if d < base {
				t.Fatalf("base %v: retry 28 slept %v (< base: overflow?)", base, d)
			}
		}
		q := NewBoundedExponentialBackoff(base, 48*time.Hour, 29, WithRand(seeded()))
		for range 200 {
			if d, _ := q.AllowRetry(28, 0); d <= 0 || d > max(48*time.Hour, 0) {
				t.Fatalf("bounded base %v: retry 28 slept %v", base, d)
			}
		}
	}
	// Negative base becomes 0.
	p := NewExponentialBackoff(-time.Second, 3)
	if d, ok := p.AllowRetry(2, 0); !ok || d != 0 || p.BaseSleep() != 0 {
		t.Errorf("negative base: got (%v, %v), BaseSleep %v", d, ok, p.BaseSleep())
	}
}

func TestExponentialConcurrent(t *testing.T) {
	p := NewExponentialBackoff(time.Millisecond, 29, WithRand(seeded()))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for rc := range 1000 {
				p.AllowRetry(rc%29, 0)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	recv(t, done, "the concurrent AllowRetry calls")
}

func TestNTimes(t *testing.T) {
	tests := []struct {
		name      string
		p         *NTimes
		allowed   int
		wantSleep time.Duration
	}{
		{"three", NewNTimes(3, 5*time.Millisecond), 3, 5 * time.Millisecond},
		{"zero", NewNTimes(0, time.Second), 0, 0},
		{"negative n", NewNTimes(-1, time.Second), 0, 0},
		{"negative sleep", NewNTimes(2, -time.Second), 2, 0},
		{"one time", NewOneTime(7 * time.Millisecond), 1, 7 * time.Millisecond},
		{"zero value", &NTimes{}, 0, 0},
		{"nil", nil, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for rc := 0; rc < tt.allowed; rc++ {
				if d, ok := tt.p.AllowRetry(rc, 100*time.Hour); !ok || d != tt.wantSleep {
					t.Errorf("retry %d: got (%v, %v), want (%v, true)", rc, d, ok, tt.wantSleep)
				}
			}
			if d, ok := tt.p.AllowRetry(tt.allowed, 0); ok || d != 0 {
				t.Errorf("retry %d: got (%v, %v), want (0, false)", tt.allowed, d, ok)
			}
		})
	}
}

func TestUntilElapsed(t *testing.T) {
	p := NewUntilElapsed(time.Second, 10*time.Millisecond)
	tests := []struct {
		p          *UntilElapsed
		retryCount int
		elapsed    time.Duration
		wantWait   time.Duration
		wantOK     bool
	}{
		{p, 0, 0, 10 * time.Millisecond, true},
		{p, 1000, time.Second - 1, 10 * time.Millisecond, true},
		{p, 0, time.Second, 0, false},
		{p, 0, time.Hour, 0, false},
		{p, math.MaxInt32 - 1, 0, 10 * time.Millisecond, true},
		{p, math.MaxInt32, 0, 0, false},
		{NewUntilElapsed(0, time.Millisecond), 0, 0, 0, false},
		{NewUntilElapsed(-time.Second, time.Millisecond), 0, 0, 0, false},
		{NewUntilElapsed(time.Second, -time.Millisecond), 0, 0, 0, true},
		{&UntilElapsed{}, 0, 0, 0, false},
		{nil, 0, 0, 0, false},
	}
	for i, tt := range tests {
		d, ok := tt.p.AllowRetry(tt.retryCount, tt.elapsed)
		if d != tt.wantWait || ok != tt.wantOK {
			t.Errorf("%d: AllowRetry(%d, %v) = (%v, %v), want (%v, %v)", i, tt.retryCount, tt.elapsed, d, ok, tt.wantWait, tt.wantOK)
		}
	}
}

func TestForever(t *testing.T) {
	tests := []struct {
		name string
		p    *Forever
		want time.Duration
	}{
		{"positive", NewForever(250 * time.Millisecond), 250 * time.Millisecond},
		{"zero", NewForever(0), time.Millisecond},
		{"negative", NewForever(-time.Second), time.Millisecond},
		{"zero value", &Forever{}, time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rc := range []int{0, 1, 29, math.MaxInt32, math.MaxInt} {
				if d, ok := tt.p.AllowRetry(rc, time.Duration(math.MaxInt64)); !ok || d != tt.want {
					t.Errorf("retry %d: got (%v, %v), want (%v, true)", rc, d, ok, tt.want)
				}
			}
		})
	}
	var nilp *Forever
	if _, ok := nilp.AllowRetry(0, 0); ok {
		t.Error("nil *Forever allowed a retry")
	}
}

func TestSessionFailed(t *testing.T) {
	p := NewSessionFailed(NewNTimes(2, time.Millisecond))
	if d, ok := p.AllowRetry(1, 0); !ok || d != time.Millisecond {
		t.Errorf("AllowRetry(1) = (%v, %v), want delegate's (1ms, true)", d, ok)
	}
	if _, ok := p.AllowRetry(2, 0); ok {
		t.Error("AllowRetry(2) allowed, delegate refuses")
	}
	classify := []struct {
		err  error
		want bool
	}{
		{zk.ErrSessionExpired, false},
		{fmt.Errorf("lock: %w", zk.ErrSessionExpired), false},
		{zk.ErrConnectionClosed, true},
		{fmt.Errorf("x: %w", zk.ErrNoServer), true},
		{zk.ErrSessionMoved, true},
		{zk.ErrNoNode, false},
		{nil, false},
	}
	for _, c := range classify {
		if got := p.Retryable(c.err); got != c.want {
			t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
		}
		if got := Retryable(p, c.err); got != c.want {
			t.Errorf("retry.Retryable(p, %v) = %v, want %v", c.err, got, c.want)
		}
	}
	// Nested: the outer rule holds whatever the delegate says.
	nested := NewSessionFailed(NewSessionFailed(NewForever(time.Millisecond)))
	if nested.Retryable(zk.ErrSessionExpired) || !nested.Retryable(zk.ErrConnectionClosed) {
		t.Error("nested SessionFailed misclassifies")
	}
	// Nil delegate, zero value and nil pointer never retry.
	for _, q := range []*SessionFailed{NewSessionFailed(nil), {}, nil} {
		if _, ok := q.AllowRetry(0, 0); ok {
			t.Errorf("%#v: AllowRetry allowed", q)
		}
		if q.Retryable(zk.ErrConnectionClosed) {
			t.Errorf("%#v: ErrConnectionClosed retryable", q)
		}
	}
}

// onlyNoNode retries only ErrNoNode, to show that Retryable defers to a Classifier.
type onlyNoNode struct{ NTimes }

func (*onlyNoNode) Retryable(err error) bool { return errors.Is(err, zk.ErrNoNode) }

func TestIsRetryable(t *testing.T) {
	opTimeout := fmt.Errorf("unknown error: %v", zk.ErrCode(-7)) // what go-zk v1.0.4 makes of code -7
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{zk.ErrConnectionClosed, true},
		{zk.ErrNoServer, true},
		{zk.ErrSessionExpired, true},
		{zk.ErrSessionMoved, true},
		{opTimeout, true},
		{fmt.Errorf("x: %w", zk.ErrConnectionClosed), true},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", zk.ErrSessionMoved)), true},
		{fmt.Errorf("op: %w", opTimeout), true},
		{errors.Join(errors.New("other"), zk.ErrNoServer), true},
		{fmt.Errorf("%w and %w", zk.ErrNoNode, zk.ErrSessionExpired), true},
		{errors.Join(errors.New("other"), fmt.Errorf("w: %w", opTimeout)), true},
		{zk.ErrNoNode, false},
		{zk.ErrNodeExists, false},
		{zk.ErrBadVersion, false},
		{zk.ErrNotEmpty, false},
		{zk.ErrNoAuth, false},
		{zk.ErrClosing, false},
		{zk.ErrUnknown, false},
		{fmt.Errorf("x: %w", zk.ErrNoNode), false},
		{fmt.Errorf("unknown error: %v", zk.ErrCode(-8)), false},
		{errors.New("zk: connection closed"), false}, // same text, different error
		{fmt.Errorf("x: %v", zk.ErrConnectionClosed), false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false},
	}
	for _, tt := range tests {
		if got := IsRetryable(tt.err); got != tt.want {
			t.Errorf("IsRetryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
		if got := Retryable(NewNTimes(1, 0), tt.err); got != tt.want {
			t.Errorf("Retryable(NTimes, %v) = %v, want %v", tt.err, got, tt.want)
		}
		if got := Retryable(nil, tt.err); got != tt.want {
			t.Errorf("Retryable(nil, %v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	c := &onlyNoNode{}
	if !Retryable(c, zk.ErrNoNode) || Retryable(c, zk.ErrConnectionClosed) {
		t.Error("Retryable ignored the policy's Classifier")
	}
}
