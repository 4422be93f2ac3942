package compat_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
)

// side is where contenders run: a Go client, or a Curator client of a Java
// peer.
type side struct {
	gc  *framework.Client // a Go client, or
	p   *peer             // a Java peer,
	jc  string            // the name of its client,
	sid int64             // and that client's session
}

// sides starts a Java peer named name, opens a Curator client "jc" in it
// and a Go client, both on the shared server, and returns their sides.
func sides(t testing.TB, name string) (java, golang side) {
	t.Helper()
	return javaSide(t, startPeer(t, name), "jc", ""), side{gc: newClient(t, "")}
}

// javaSide opens a Curator client named jc in p, connected to addr (the
// shared server if "") with options such as "ns=<namespace>".
func javaSide(t testing.TB, p *peer, jc, addr string, opts ...string) side {
	t.Helper()
	if addr == "" {
		addr = server.Addr()
	}
	return side{p: p, jc: jc, sid: p.client(t, jc, addr, opts...)}
}

// lang is the side's language, "go" or "java".
func (s side) lang() string {
	if s.gc != nil {
		return "go"
	}
	return "java"
}

// session is the side's session id.
func (s side) session() int64 {
	if s.gc != nil {
		return s.gc.SessionID()
	}
	return s.sid
}

// contend starts a contender labelled label on s for r's lock at base,
// taking qty leases where the recipe has leases, that enters the guards
// the moment it is granted (see holder). A Java contender has a lock object
// and a worker of its own, both named after label and the test.
func (s side) contend(t testing.TB, r recipe, base string, qty int, guards []*guard, label string) holder {
	t.Helper()
	return s.start(t, r, base, qty, guards, label, false)
}

// contendRevocable is contend, for a revocable recipe, with a holder that
// releases the lock when it is asked to revoke it: Curator's revocation
// listener releases on the contender's worker; a Go holder's leaves the
// guards and releases (goHolder.revoked).
func (s side) contendRevocable(t testing.TB, r recipe, base string, guards []*guard, label string) holder {
	t.Helper()
	return s.start(t, r, base, 1, guards, label, true)
}

func (s side) start(t testing.TB, r recipe, base string, qty int, guards []*guard, label string, revocable bool) holder {
	t.Helper()
	if s.p != nil {
		lock := r.javaLock(t, s.p, label+"-"+t.Name(), s.jc, base)
		if revocable {
			s.p.do(t, "-", "revocable", lock, "release-on="+lock)
		}
		return javaHold(s.p, s.sid, lock, lock, qty, guards, r.kind, r.max, label)
	}
	h := &goHolder{s: s, r: r, base: base, qty: qty, guards: guards, label: label, o: r.goOwner(t, s.gc, base, qty),
		done: make(chan struct{})}
	if revocable {
		h.revoked = make(chan error, 1)
		rh := h.o.(*recipes.Handle)
		rh.MakeRevocable(func() {
			h.leave(t)
			h.revoked <- rh.Release(context.Background())
		})
	}
	ctx := testutil.Context(t)
	go func() {
		defer close(h.done)
		if h.err = h.o.Acquire(ctx); h.err == nil {
			leave := goEnter(guards, r.kind, r.max, qty, label)
			h.mu.Lock()
			h.leaveGuards = leave
			h.mu.Unlock()
		}
	}()
	return h
}

// loop starts a contender labelled label on s that takes r's lock at base
// rounds times, entering the guards while it holds it, and sends how it
// ended (nil, or why it failed) on done.
func (s side) loop(t testing.TB, r recipe, base string, guards []*guard, rounds int, label string, done chan<- error) {
	t.Helper()
	ctx := testutil.Context(t)
	if s.p != nil {
		lock := r.javaLock(t, s.p, label+"-"+t.Name(), s.jc, base)
		call := s.p.send(lock, "loop", lock, "rounds="+strconv.Itoa(rounds), "guard="+guardURLs(guards, 1),
			"kind="+string(r.kind), "max="+strconv.Itoa(r.max), "label="+label, "hold="+strconv.FormatInt(holdTime.Milliseconds(), 10))
		go func() {
			_, err := call.Wait(ctx)
			done <- err
		}()
		return
	}
	o := r.goOwner(t, s.gc, base, 1)
	go func() { done <- goLoop(ctx, o, guards, r.kind, r.max, rounds, label) }()
}

// goLoop takes the lock rounds times through o, entering the guards while
// it holds it.
func goLoop(ctx context.Context, o owner, guards []*guard, kind guardKind, max, rounds int, label string) error {
	for i := 0; i < rounds; i++ {
		if err := o.Acquire(ctx); err != nil {
			return fmt.Errorf("%s round %d: %w", label, i, err)
		}
		leave := goEnter(guards, kind, max, 1, label)
		time.Sleep(holdTime) // time inside the critical section, not synchronisation
		leave()
		if err := o.Release(ctx); err != nil {
			return fmt.Errorf("%s round %d: %w", label, i, err)
		}
	}
	return nil
}
