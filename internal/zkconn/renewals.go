package zkconn

import (
	"sync"
	"sync/atomic"
)

// renewals tell, from the requests the servers have answered on a session,
// when they last heard from the client (newest: the send time of the newest
// request answered) and when the session's renewal had surely reached the
// servers' leader (renewed), which is what a session's expiry counts from.
//
// The two differ because a follower answers its clients on its own: it
// renews a session in its own tracker as a request comes and tells the
// leader on its next exchange with it. A follower cut off from the leader
// goes on answering, pings included, until it notices (up to syncLimit ×
// tickTime later), while the leader, which hears nothing more of the
// session, expires it its timeout after the last renewal it was told of.
// So an answer proves a renewal at the leader only once the follower has
// been seen answering a while longer: a request answered, followed by
// another answered at least margin later (a twentieth of the session
// timeout: docs/guarantees.md's bound on a follower's lag), was passed on
// before the follower could have noticed any cut. A connect request's
// answer is a renewal at once: a session is made, and revalidated at a
// reconnect, by the leader.
//
// For a client that sends nothing but go-zookeeper's pings (every third of
// the timeout), renewed is the ping before the last answered one.
type renewals struct {
	mu      sync.Mutex
	margin  int64   // ns: a twentieth of the session timeout
	newest  int64   // ns (mono); 0: nothing answered
	renewed int64   // ns (mono); 0: nothing renewed
	recent  []int64 // answered send times after renewed and within margin of newest (from head on), oldest first
	head    int

	when atomic.Pointer[func()] // called once renewed next moves forward (Conn.WhenRenewed)
}

// answered records that a request sent at sent (mono ns) was answered; a
// connect request's answer is a renewal (handshake).
func (r *renewals) answered(sent int64, handshake bool) {
	if r.record(sent, handshake) && r.when.Load() != nil {
		if f := r.when.Swap(nil); f != nil {
			(*f)()
		}
	}
}

// record is answered's bookkeeping; it reports whether renewed moved
// forward.
func (r *renewals) record(sent int64, handshake bool) (renewedMoved bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	before := r.renewed
	if handshake {
		r.newest, r.renewed = max(r.newest, sent), max(r.renewed, sent)
		r.recent, r.head = r.recent[:0], 0
		return r.renewed > before
	}
	if sent > r.newest {
		r.newest = sent
		r.recent = append(r.recent, sent)
	} else if sent <= r.newest-r.margin {
		r.renewed = max(r.renewed, sent) // an answer come late, to a request long since followed
	}
	for r.head < len(r.recent) && r.recent[r.head] <= r.newest-r.margin {
		r.renewed = max(r.renewed, r.recent[r.head])
		r.head++
	}
	// Entries leave from the head, one or a few a reply: the slice is
	// moved down only once the head has passed half of it, not on every
	// reply (a busy client's window holds a twentieth of T of requests).
	switch {
	case r.head == len(r.recent):
		r.recent, r.head = r.recent[:0], 0
	case r.head >= 1024 && 2*r.head >= len(r.recent):
		r.recent, r.head = r.recent[:copy(r.recent, r.recent[r.head:])], 0
	}
	return r.renewed > before
}

// times returns newest and renewed.
func (r *renewals) times() (newest, renewed int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.newest, r.renewed
}

// reset starts a new session's renewals, whose timeout gives margin, and
// returns the old session's renewed time.
func (r *renewals) reset(margin int64) (renewed int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	renewed = r.renewed
	r.newest, r.renewed, r.margin = 0, 0, margin
	r.recent, r.head = r.recent[:0], 0
	return renewed
}

// setMargin sets the margin, for the session's negotiated timeout.
func (r *renewals) setMargin(margin int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.margin = margin
}
