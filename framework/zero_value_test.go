package framework

import (
	"fmt"
	"testing"

	"github.com/gocurator/curator/internal/testutil"
)

// Every exported method of a zero or nil Client returns (its errors wrapping
// ErrInvalidArgument) instead of panicking or hanging: the walk really
// calls the methods, and ends within testutil.Timeout.
func TestZeroClient(t *testing.T) {
	for name, c := range map[string]*Client{"zero": {}, "nil": nil} {
		done := make(chan []string, 1)
		go func() { done <- testutil.CallEveryMethod(t, c, ErrInvalidArgument) }()
		if called := testutil.Recv(t, done, fmt.Sprintf("every method of a %s Client called", name)); len(called) == 0 {
			t.Fatalf("no method of a %s Client called", name)
		}
	}
}
