package chaoscontender

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// referee is the chaos suite's referee as a holder calls it: GET
// <url>/<verb>?h=<holding>&..., answered 200 with a word ("ok", "linger",
// "told", "fenced"); see compat_test/chaos_referee_test.go.
type referee struct {
	url  string
	http *http.Client
}

// call makes one request, format and args giving its verb and query, and
// returns the answer's word.
func (r referee) call(format string, args ...any) (string, error) {
	resp, err := r.http.Get(r.url + "/" + fmt.Sprintf(format, args...))
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
	id  string
	ref referee

	mu             sync.Mutex
	wasTold, ended bool
}

// tell records that the holding was told its lock can no longer be trusted:
// it writes no more, and the referee takes it out of the guard. Once the
// holding has ended, it does nothing.
func (h *holding) tell() {
	at := time.Now()
	h.mu.Lock()
	if h.wasTold || h.ended {
		h.mu.Unlock()
		return
	}
	h.wasTold = true
	h.mu.Unlock()
	// A failed call leaves the holding in the guard until it leaves: the
	// run then sees an overlap it cannot excuse, and fails.
	_, _ = h.ref.call("told?h=%s&at=%d", h.id, at.UnixMicro())
}

func (h *holding) told() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.wasTold
}

// end ends the holding, and reports whether it was told.
func (h *holding) end() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	return h.wasTold
}
