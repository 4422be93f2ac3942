package framework

import (
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// Every exported method of a zero or nil Client returns (its errors, never
// nil, wrapping ErrInvalidArgument) instead of panicking or hanging; the
// walk really calls the methods.
func TestZeroClient(t *testing.T) {
	for name, c := range map[string]*Client{"zero": {}, "nil": nil} {
		if n := testutil.CallEveryMethod(t, c, ErrInvalidArgument); n == 0 {
			t.Fatalf("no method of a %s Client called", name)
		}
	}
}
