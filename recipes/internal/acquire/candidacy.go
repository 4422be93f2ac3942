package acquire

import (
	"context"
	"sync"
)

// Candidacy is a node that stands in a lock's queue across terms until it
// is withdrawn: a leader latch's (Curator's LeaderLatch). Each Wait waits
// for the node to hold and returns the term that begins then; when the term
// ends (the trust it came from ended), the next Wait looks again with the
// same node (renewed: the trust taken anew, the node's owner carried over,
// so that a node of an older session is read, and found not ours, rather
// than trusted), and creates a new node only once the old one is found
// gone. A term is a Grant that is none of the lock's holdings: its end is
// not settled, cleaned up or told by the engine (the latch tells it), and
// its node stays when it is lost, as in Curator.
//
// Its methods are for one goroutine (the latch's), but Node, which any may
// call.
type Candidacy struct {
	lock *Lock
	a    Attempt
	ls   *lister

	mu    sync.Mutex // guards n's path for Node
	n     node
	stood bool // n is a node of ours (created, not found gone)
}

// Stand returns a candidacy in l's queue, with the nodes a made as an
// Attempt would (a.Try, a.Guard, a.Still, a.Revoked and a.Observer are not
// looked at); it makes no node until Wait. Withdraw ends it.
func (l *Lock) Stand(a Attempt) *Candidacy {
	return &Candidacy{lock: l, a: a, ls: l.shared.listerFor(l.base, a.Driver)}
}

// Node returns the path of the candidacy's node, "" when it has none.
func (c *Candidacy) Node() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stood {
		return ""
	}
	return c.n.path
}

// Wait waits until the candidacy's node holds, creating one first if it
// has none, and returns the term that begins: its Done closes when the
// trust it came from ends (at the first error state by the client's error
// policy), or when it is released (Release; the node stays). An error
// wrapping ErrVanished means the node is gone, or another session's: the
// candidacy forgets it (that one goes when its session is closed, no
// sooner than the servers could have expired it: the margin its last term
// was promised), and the next Wait creates a new one. After another error
// the node stays, and the next Wait looks again.
func (c *Candidacy) Wait(ctx context.Context) (*Grant, error) {
	l := c.lock
	if c.stood {
		c.renew()
	} else {
		var n node
		if err := l.create(ctx, &c.a, &n, c.ls); err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.n, c.stood = n, true
		c.mu.Unlock()
	}
	if err := l.wait(ctx, &c.a, &c.n, c.ls); err != nil {
		if vanished(err) {
			c.forget()
		}
		return nil, err
	}
	return newGrant(l, &c.n, nil, false), nil
}

// renew makes the node ready for another look: the trust is taken anew, and
// the node's owner is carried over, not taken from the trust: the node was
// made in that session, and if the client is in another one now, the next
// look reads the node (and finds it not ours) rather than trusting it.
func (c *Candidacy) renew() {
	c.n.owner = c.n.ownerID()
	c.n.first = firstListing{}
	c.n.arm(c.lock.client)
}

// forget drops the node, without deleting it.
func (c *Candidacy) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n, c.stood = node{}, false
}

// Withdraw ends the candidacy: its node, if any, is deleted (guaranteed,
// waiting for it at most a few seconds), and its lister given back. A term
// under way is the caller's to release first.
func (c *Candidacy) Withdraw(ctx context.Context) {
	if c.stood {
		c.lock.giveUp(ctx, &c.n)
		c.forget()
	}
	if c.ls != nil {
		c.ls.release()
		c.ls = nil
	}
}
