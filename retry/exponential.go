package retry

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// MaxExponentialRetries is the largest maxRetries an [ExponentialBackoff]
// accepts. It is Curator's ExponentialBackoffRetry.MAX_RETRIES_LIMIT (29):
// beyond it, 2^(retryCount+1) would overflow Java's int.
const MaxExponentialRetries = 29

// unlimitedSleep is the default maximum sleep: no cap (Curator uses
// Integer.MAX_VALUE milliseconds).
const unlimitedSleep = time.Duration(math.MaxInt64)

// ExponentialBackoff is a policy that retries a set number of times, with
// randomised, exponentially growing sleeps. It is Curator's
// ExponentialBackoffRetry (and, built with [NewBoundedExponentialBackoff],
// BoundedExponentialBackoffRetry). It sleeps base × max(1, r) before retry
// number retryCount, where r is a uniformly random integer in
// [0, 2^(retryCount+1)), capped at a maximum sleep. So retry 0 sleeps base,
// retry 1 sleeps 1 to 3 × base, retry 2 1 to 7 × base, and so on.
//
// It is safe for concurrent use. The zero value never retries.
type ExponentialBackoff struct {
	base       time.Duration
	maxSleep   time.Duration
	maxRetries int

	mu  sync.Mutex // guards rnd
	rnd *rand.Rand // nil: use the global math/rand/v2 functions
}

// ExponentialOption configures [NewExponentialBackoff] and
// [NewBoundedExponentialBackoff].
type ExponentialOption interface {
	applyExponential(exponentialOptions) exponentialOptions
}

type exponentialOptionFunc func(exponentialOptions) exponentialOptions

func (f exponentialOptionFunc) applyExponential(o exponentialOptions) exponentialOptions { return f(o) }

type exponentialOptions struct {
	maxSleep time.Duration
	src      rand.Source
}

// WithMaxSleep caps every sleep of the policy at d (Curator's maxSleepMs
// argument). The default is no cap. A negative d is treated as 0, which
// makes every sleep 0.
func WithMaxSleep(d time.Duration) ExponentialOption {
	return exponentialOptionFunc(func(o exponentialOptions) exponentialOptions { o.maxSleep = max(d, 0); return o })
}

// WithRand makes the policy draw its random numbers from src instead of the
// global math/rand/v2 generator. Pass a seeded source (for example
// rand.NewPCG(1, 2)) to get reproducible sleeps in tests. The policy
// serialises its use of src, so src need not be safe for concurrent use,
// but it must not be used elsewhere at the same time. A nil src restores
// the default.
func WithRand(src rand.Source) ExponentialOption {
	return exponentialOptionFunc(func(o exponentialOptions) exponentialOptions { o.src = src; return o })
}

// NewExponentialBackoff returns a policy of up to maxRetries retries with
// randomised, exponentially growing sleeps (see [ExponentialBackoff]). It is
// Curator's ExponentialBackoffRetry(base, maxRetries[, maxSleep]), with base
// a time.Duration: Curator's baseSleepTimeMs 1000 is time.Second (1000 here
// is a microsecond).
//
// Out-of-range arguments are clamped, never rejected: maxRetries above
// [MaxExponentialRetries] (29) becomes 29, as in Curator (which logs a
// warning); a negative maxRetries becomes 0 (never retry); a negative base
// becomes 0. Nil options are ignored.
func NewExponentialBackoff(base time.Duration, maxRetries int, opts ...ExponentialOption) *ExponentialBackoff {
	o := exponentialOptions{maxSleep: unlimitedSleep}
	for _, opt := range opts {
		if opt != nil {
			o = opt.applyExponential(o)
		}
	}
	e := &ExponentialBackoff{
		base:       max(base, 0),
		maxSleep:   o.maxSleep,
		maxRetries: min(max(maxRetries, 0), MaxExponentialRetries),
	}
	if o.src != nil {
		e.rnd = rand.New(o.src)
	}
	return e
}

// NewBoundedExponentialBackoff returns [NewExponentialBackoff]'s policy with
// every sleep capped at maxSleep. It is Curator's
// BoundedExponentialBackoffRetry(base, maxSleep, maxRetries). If opts also
// contain [WithMaxSleep], the smaller cap applies. Arguments are clamped as
// in NewExponentialBackoff, and a negative maxSleep is treated as 0.
func NewBoundedExponentialBackoff(base, maxSleep time.Duration, maxRetries int, opts ...ExponentialOption) *ExponentialBackoff {
	e := NewExponentialBackoff(base, maxRetries, opts...)
	e.maxSleep = min(e.maxSleep, max(maxSleep, 0))
	return e
}

// AllowRetry implements [Policy]: it allows the retry while retryCount is
// below maxRetries and returns the randomised sleep for it. A negative
// retryCount is treated as 0.
func (e *ExponentialBackoff) AllowRetry(retryCount int, _ time.Duration) (time.Duration, bool) {
	if e == nil {
		return 0, false
	}
	retryCount = max(retryCount, 0)
	if retryCount >= e.maxRetries {
		return 0, false
	}
	return e.sleep(retryCount), true
}

// sleep computes base × max(1, rand[0, 2^(retryCount+1))) capped at maxSleep,
// saturating instead of overflowing. retryCount is in [0, 29).
func (e *ExponentialBackoff) sleep(retryCount int) time.Duration {
	factor := max(1, e.randInt64N(int64(1)<<(retryCount+1)))
	var d time.Duration
	if e.base != 0 && factor > int64(math.MaxInt64)/int64(e.base) {
		d = unlimitedSleep
	} else {
		d = e.base * time.Duration(factor)
	}
	return min(d, e.maxSleep)
}

func (e *ExponentialBackoff) randInt64N(n int64) int64 {
	if e.rnd == nil {
		return rand.Int64N(n)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rnd.Int64N(n)
}

// BaseSleep returns the base sleep time of the policy (Curator's
// getBaseSleepTimeMs).
func (e *ExponentialBackoff) BaseSleep() time.Duration {
	if e == nil {
		return 0
	}
	return e.base
}

// MaxRetries returns the number of retries the policy allows, after
// clamping (Curator's getN).
func (e *ExponentialBackoff) MaxRetries() int {
	if e == nil {
		return 0
	}
	return e.maxRetries
}

// MaxSleep returns the cap on a single sleep; math.MaxInt64 when unlimited
// (Curator's BoundedExponentialBackoffRetry.getMaxSleepTimeMs).
func (e *ExponentialBackoff) MaxSleep() time.Duration {
	if e == nil {
		return 0
	}
	return e.maxSleep
}
