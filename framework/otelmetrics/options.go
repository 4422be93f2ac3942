package otelmetrics

import (
	"fmt"

	"github.com/gocurator/curator/framework"
)

// Option configures New.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	pathLabel func(path string) string
	buckets   []float64
}

// defaultBuckets are the duration histograms' bucket boundaries in
// seconds, from a millisecond (an uncontended acquire) to an hour (a long
// term of leadership).
var defaultBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}

// WithPathLabel sets the function that makes a recipe's path into the value
// of the gocurator.path attribute, for a program whose paths are too many
// to be series of their own: "/locks/orders/1234" into "/locks/orders", say.
// By default it is the path itself. A nil f makes New fail with
// framework.ErrInvalidArgument.
func WithPathLabel(f func(path string) string) Option {
	return optionFunc(func(c *config) { c.pathLabel = f })
}

// WithBuckets sets the bucket boundaries, in seconds, of the duration
// histograms (the default runs from 1 ms to an hour); they must be
// increasing. An SDK's views may still override them.
func WithBuckets(bounds ...float64) Option {
	return optionFunc(func(c *config) { c.buckets = append([]float64(nil), bounds...) })
}

// newConfig applies opts to the defaults and checks the result.
func newConfig(opts []Option) (config, error) {
	c := config{pathLabel: func(path string) string { return path }, buckets: defaultBuckets}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	if c.pathLabel == nil {
		return c, fmt.Errorf("%w: otelmetrics: nil path label function", framework.ErrInvalidArgument)
	}
	if len(c.buckets) == 0 {
		return c, fmt.Errorf("%w: otelmetrics: no buckets", framework.ErrInvalidArgument)
	}
	for i := 1; i < len(c.buckets); i++ {
		if !(c.buckets[i] > c.buckets[i-1]) {
			return c, fmt.Errorf("%w: otelmetrics: buckets not increasing: %v", framework.ErrInvalidArgument, c.buckets)
		}
	}
	return c, nil
}
