package acquire

import (
	"context"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/gocurator/curator/framework"
)

// clientShared is what the lock values of one client share, and what other
// processes never see: their watches (one per watched node: watches.go) and
// their listers (one per lock path and order: lister.go). Each Lock of the
// client refers to it (NewLock); nothing else keeps it, so once no lock
// value of the client, no waiter and no watch under way refers to it, it
// is collected, and the client with it when the program has dropped that.
type clientShared struct {
	client *framework.Client

	watchesMu sync.Mutex
	watches   map[watchKey]*Watch

	listersMu sync.Mutex
	listers   map[listerKey]*lister
	// spare keeps listers nobody uses any more (up to maxSpareListers), so
	// that a lone waiter's lister (made and forgotten at every uncontended
	// acquire) costs no allocation. (A sync.Pool would drop some at random
	// under the race detector, and all at each GC.)
	spare []*lister

	// setCtx is the context shared watches are set under now, ending at
	// setEnd (setContext).
	setMu     sync.Mutex
	setCtx    context.Context
	setCancel context.CancelFunc
	setEnd    time.Time
}

// sharing finds a client's clientShared: it holds both weakly, so that it
// keeps neither reachable (a closed client, say); an entry goes once its
// clientShared is collected (forgetShared).
var (
	sharingMu sync.Mutex
	sharing   = map[weak.Pointer[framework.Client]]weak.Pointer[clientShared]{}
)

// sharedOf returns client's clientShared, made if it has none now.
func sharedOf(client *framework.Client) *clientShared {
	k := weak.Make(client)
	sharingMu.Lock()
	defer sharingMu.Unlock()
	if s := sharing[k].Value(); s != nil {
		return s
	}
	s := &clientShared{client: client, watches: map[watchKey]*Watch{}, listers: map[listerKey]*lister{}}
	sharing[k] = weak.Make(s)
	runtime.AddCleanup(s, forgetShared, k)
	return s
}

// forgetShared forgets the entry of the client of k once its clientShared
// has been collected (unless a new one has taken its place).
func forgetShared(k weak.Pointer[framework.Client]) {
	sharingMu.Lock()
	defer sharingMu.Unlock()
	if w, ok := sharing[k]; ok && w.Value() == nil {
		delete(sharing, k)
	}
}
