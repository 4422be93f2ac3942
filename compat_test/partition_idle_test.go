package compat_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/netpart"
	"github.com/gocurator/curator/internal/testutil"
)

// idleAttempts is how many cuts TestPartitionIdleSessionHolder tries to
// land just before a ping of the holder's client.
const idleAttempts = 3

// A holder under the Session policy whose client is idle (it holds, and
// sends nothing but go-zookeeper's pings, every T/3) on a follower that is
// cut off, with it, from the leader just before one of those pings: the
// follower answers that ping while it has not noticed yet (syncLimit ×
// tickTime, below T/20 here, as docs/guarantees.md asks), but never passes
// the renewal on to the leader. The client's last contact is that ping,
// while the leader's last renewal is the ping before, T/3 earlier: the
// leader expires the session, and a contender on the majority side takes
// the lock, up to T/3 − T/20 − the lag before a local LOST counted from
// the last contact (+ 0.95 T) would tell the holder. The LOST deadline
// counts from the last renewal the leader is sure to have had
// (zkconn.Conn.LastRenewal: the ping before), and the holder is told
// first.
func TestPartitionIdleSessionHolder(t *testing.T) {
	if err := netpart.Available(); err != nil {
		t.Skipf("partitions: skipped: %v", err)
	}
	testutil.CheckLeaks(t)
	set, err := partitionSettingsOf("below", 3)
	testutil.Must(t, err)
	r := startPartitions(t, set, []string{"pb1", "pa1"})
	ctx := testutil.Context(t)
	leader, err := r.leader(ctx)
	testutil.Must(t, err)
	f := (leader + 1) % 3
	var rest []string
	for i, m := range r.ens.Members() {
		if i != f {
			rest = append(rest, m.Addr())
		}
	}
	// pb1 on the follower alone, pa1 on the other two.
	holder := r.startClient("pb1", r.ens.Members()[f].Addr())
	other := r.startClient("pa1", strings.Join(rest, ","))
	mutex := chaosRoles[0] // a mutex, one contender
	mutex.n = 1
	one := []chaosRole{mutex}
	r.ref.linger(holder.name, 1) // its holder holds until told
	holder.startContenders(r.referee, one, time.Minute, time.Minute)
	if !poll(ctx, time.Now().Add(30*time.Second), 10*time.Millisecond, func() bool { return len(r.ref.insideOf(holder.name)) > 0 }) {
		t.Fatal("pb1 never held the lock")
	}
	other.startContenders(r.referee, one, time.Minute, time.Minute)
	defer func() {
		if err := r.net.Heal(); err != nil {
			t.Errorf("healing: %v", err)
		}
		r.stopAll()
		if err := testutil.DeleteTree(r.checker, chaosBase); err != nil {
			t.Errorf("cleaning up %s: %v", chaosBase, err)
		}
	}()

	for attempt := 1; attempt <= idleAttempts; attempt++ {
		inside := r.ref.insideOf(holder.name)
		if len(inside) != 1 {
			t.Fatalf("attempt %d: pb1 has %d holdings inside, want 1", attempt, len(inside))
		}
		h := inside[0]
		at, answered, err := r.cutBeforePing(ctx, f, holder)
		testutil.Must(t, err)
		if !answered {
			t.Logf("attempt %d: the follower answered no ping of pb1 after the cut; again", attempt)
			testutil.Must(t, r.net.Heal())
			testutil.Must(t, r.restore(ctx))
			testutil.Must(t, r.waitAllConnected(ctx))
			continue
		}
		// pb1's holder told (it lingers until told: its client's LOST
		// alone is not the notice) and pa1's takeover, whichever order
		// they come in.
		var notice, takeover time.Time
		poll(ctx, at.Add(3*partitionsSession), 10*time.Millisecond, func() bool {
			notice, _ = r.ref.outcome(h)
			takeover = r.ref.firstEntry(other.labels, at)
			return !notice.IsZero() && !takeover.IsZero()
		})
		_, staleAccepted, _, refused := r.ref.audit()
		ms := func(x time.Time) string {
			if x.IsZero() {
				return "never"
			}
			return "+" + x.Sub(at).Round(time.Millisecond).String()
		}
		report := fmt.Sprintf("cut at %s just before pb1's ping: pb1's holder %s was told %s (states: %s); pa1 held the lock %s; "+
			"the fenced resource refused %d stale writes and accepted %d", at.Format("15:04:05.000"), h.id, ms(notice),
			statesSince(holder, at), ms(takeover), refused, len(staleAccepted))
		t.Log(report)
		if len(staleAccepted) > 0 {
			t.Errorf("stale writes accepted: %v", staleAccepted)
		}
		switch {
		case notice.IsZero() || takeover.IsZero():
			t.Fatalf("within %v of the cut, pb1's holder was not told or pa1 did not hold: %s", 3*partitionsSession, report)
		case !notice.Before(takeover):
			t.Errorf("a Session-policy holder on an idle client was told %v after another client held its lock "+
				"(the leader expired the session T after the renewal before the client's last contact): %s",
				notice.Sub(takeover).Round(time.Millisecond), report)
		}
		return
	}
	t.Fatalf("no cut in %d attempts landed just before a ping of pb1", idleAttempts)
}

// cutBeforePing cuts member m and client c off from every other member and
// client 100 ms before c's next ping (c idle, pinging every T/3: when m
// answered the last one is read from m's "cons", polled), and reports when
// the cut was in place and whether m then answered c (after the cut,
// before it noticed).
func (r *partitionRun) cutBeforePing(ctx context.Context, m int, c *chaosClient) (time.Time, bool, error) {
	addr := r.net.Addr(c.name)
	// lresp: when m last answered c (ms since the epoch, by m's clock).
	lresp := func() (int64, string) {
		for _, e := range consOf(r, m) {
			if e.addr == addr {
				return e.lresp, e.lop
			}
		}
		return 0, ""
	}
	// A ping answered right after another (nothing else in between): c is
	// idle, and the next comes T/3 after it.
	var pinged time.Time
	last, lastOp := lresp()
	idle := false
	if !poll(ctx, time.Now().Add(3*partitionsSession), 5*time.Millisecond, func() bool {
		l, op := lresp()
		if l != last {
			if idle && op == "PING" {
				pinged = time.Now()
			}
			idle = op == "PING" && lastOp == "PING"
			last, lastOp = l, op
		}
		return !pinged.IsZero()
	}) {
		return time.Time{}, false, fmt.Errorf("%s sent more than pings to %s (or nothing) for %v: not idle", c.name, memberNode(m), 3*partitionsSession)
	}
	var nodes []string
	for _, n := range r.net.Nodes() {
		if n != memberNode(m) && n != c.name {
			nodes = append(nodes, n)
		}
	}
	pause(ctx, time.Until(pinged.Add(partitionsSession/3-100*time.Millisecond)))
	if err := r.net.Apply(netpart.Split([]string{memberNode(m), c.name}, nodes)); err != nil {
		return time.Time{}, false, err
	}
	at := time.Now()
	// Until m stops serving (it closes its connections: cons lists none),
	// look for an answer after the cut.
	before, _ := lresp()
	answered := false
	poll(ctx, at.Add(2*time.Second), 5*time.Millisecond, func() bool {
		l, _ := lresp()
		answered = answered || l > before
		return l == 0
	})
	return at, answered, nil
}
