package framework

import (
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// Every exported method of a zero or nil Client returns (its errors wrapping
// ErrInvalidArgument) instead of panicking.
func TestZeroClient(t *testing.T) {
	for _, c := range []*Client{{}, nil} {
		testutil.CallEveryMethod(t, c, ErrInvalidArgument)
	}
}
