package chaoscontender

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// call makes one request to the suite's referee, format and args giving its
// verb and query (GET <Referee>/<verb>?h=<holding>&...; see
// compat_test/chaos_referee_test.go), and returns the answer's word: "ok",
// "linger", "told" or "fenced".
func (r *run) call(format string, args ...any) (string, error) {
	resp, err := r.c.http.Get(r.ct.Referee + "/" + fmt.Sprintf(format, args...))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("referee answered %s: %s", resp.Status, body)
	}
	return string(body), err
}

// holding is one acquisition (or term) of a contender, from its grant until
// the contender gives it up.
type holding struct {
	id    string
	r     *run
	state atomic.Int32 // 0 until told (1) or ended (2), whichever comes first
}

// tell records that the holding was told its lock can no longer be trusted:
// it writes no more, and the referee takes it out of the guard. Once the
// holding has ended, it does nothing.
func (h *holding) tell() {
	at := time.Now()
	if h.state.CompareAndSwap(0, 1) {
		// A failed call leaves the holding in the guard until it leaves:
		// the run then sees an overlap it cannot excuse, and fails.
		_, _ = h.r.call("told?h=%s&at=%d", h.id, at.UnixMicro())
	}
}

func (h *holding) told() bool { return h.state.Load() == 1 }

// end ends the holding, and reports whether it was told.
func (h *holding) end() bool { return h.state.Swap(2) == 1 }
