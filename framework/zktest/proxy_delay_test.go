package zktest

import (
	"encoding/binary"
	"fmt"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/zkwire"
)

// TestProxyDelays checks SetDelays on a real server, with a client of its
// own that speaks ZooKeeper's wire protocol, so that it writes requests
// back to back and sees every reply in the order it comes: every round trip
// through the proxy takes at least the two one-way delays (each direction
// on its own), each delays its own direction (the server makes a node no
// sooner than the delay to it after the create was written, and the reply
// comes no sooner than the delay back after that), a burst of pipelined creates is answered in the order sent,
// their sequence numbers in that order too (so neither direction reorders),
// and what a round trip grows by is logged.
func TestProxyDelays(t *testing.T) {
	s := NewServer(t)
	p := NewProxy(t, s.Addr())
	const d = 250 * time.Microsecond
	direct, proxied := dialWire(t, s.Addr()), dialWire(t, p.Addr())
	for range 2000 { // the server's JIT compiles the request's path
		direct.roundTrip(t)
	}

	// Each direction on its own, then both: a delay far above a round
	// trip's own time, so that a direction left undelayed fails.
	const long = 30 * time.Millisecond
	for i, tc := range []struct {
		name               string
		toServer, toClient time.Duration
	}{
		{"to the server", long, 0},
		{"to the client", 0, long},
		{"both ways", long, long},
	} {
		p.SetDelays(tc.toServer, tc.toClient)
		for range 5 {
			if rtt, least := proxied.roundTrip(t), tc.toServer+tc.toClient; rtt < least {
				t.Fatalf("%s: a round trip of %v, with %v to the server and %v to the client", tc.name, rtt, tc.toServer, tc.toClient)
			}
		}
		// Each way on its own: a node created through the proxy has the
		// time the server made it (its ctime, the server's wall clock in
		// ms, the machine's), which the request reached toServer after it
		// was written at the earliest, and its reply the client toClient
		// after that at the earliest. Both are lower bounds: load only
		// makes the times later.
		written, ctime, answered := proxied.createTimed(t, direct, fmt.Sprintf("/one-way-%d", i))
		if made := ctime.Add(time.Millisecond); made.Before(written.Add(tc.toServer)) { // ctime is truncated to the ms
			t.Errorf("%s: the server made the node %v after the create was written, before the %v to the server had passed",
				tc.name, ctime.Sub(written).Round(time.Millisecond), tc.toServer)
		}
		if answered.Before(ctime.Add(tc.toClient)) {
			t.Errorf("%s: the reply came %v after the server made the node, before the %v to the client had passed",
				tc.name, answered.Sub(ctime), tc.toClient)
		}
	}

	// What a datacenter's 0.25 ms each way adds to a round trip, measured.
	p.SetDelays(d, d)
	var base []time.Duration
	for range 200 {
		base = append(base, direct.roundTrip(t))
	}
	var with []time.Duration
	for range 200 {
		rtt := proxied.roundTrip(t)
		if rtt < 2*d {
			t.Fatalf("a round trip of %v, with %v each way", rtt, d)
		}
		with = append(with, rtt)
	}
	t.Logf("a round trip grows by %v through the proxy at %v each way (2d = %v): p50 %v direct, %v through it",
		p50(with)-p50(base), d, 2*d, p50(base), p50(with))

	// A burst of creates, written at once, comes back in order: by xid,
	// with sequence numbers increasing in the same order.
	const n = 50
	xids, seqs := proxied.createBurst(t, "/delayed-", n)
	for i := range n {
		if xids[i] != proxied.xid-n+int32(i)+1 {
			t.Fatalf("reply %d has xid %d; the burst's xids were %d to %d in order", i, xids[i], proxied.xid-n+1, proxied.xid)
		}
		if i > 0 && seqs[i] <= seqs[i-1] {
			t.Fatalf("create %d made sequence %d after %d: the server saw the burst out of order", i, seqs[i], seqs[i-1])
		}
	}
}

func p50(xs []time.Duration) time.Duration {
	s := slices.Sorted(slices.Values(xs))
	return s[len(s)/2]
}

// wireClient is a ZooKeeper session on a connection of its own, written
// and read by hand.
type wireClient struct {
	conn net.Conn
	xid  int32
}

// dialWire opens a new session at addr; the test's end closes it.
func dialWire(t *testing.T, addr string) *wireClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(zkwire.ConnectRequestFrame(0, 10000, nil)); err != nil {
		t.Fatal(err)
	}
	f, err := zkwire.ReadFrame(conn)
	if err != nil {
		t.Fatal(err)
	}
	if _, sid, _, ok := zkwire.ParseConnectResponse(f); !ok || sid == 0 {
		t.Fatalf("bad connect response % x", f)
	}
	return &wireClient{conn: conn}
}

// request returns the frame of a request of op with body, under the next
// xid.
func (c *wireClient) request(op int32, body []byte) []byte {
	c.xid++
	b := binary.BigEndian.AppendUint32(nil, uint32(c.xid))
	b = binary.BigEndian.AppendUint32(b, uint32(op))
	return zkwire.PutFrame(append(b, body...))
}

func appendString(b []byte, s string) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(s))), s...)
}

// reply reads the next reply and returns its xid and body, failing on a
// server error.
func (c *wireClient) reply(t *testing.T) (int32, []byte) {
	t.Helper()
	f, err := zkwire.ReadFrame(c.conn)
	if err != nil {
		t.Fatal(err)
	}
	f = f[zkwire.FrameHeaderLen:]
	if len(f) < zkwire.ReplyHeaderLen {
		t.Fatalf("short reply % x", f)
	}
	if code := int32(binary.BigEndian.Uint32(f[12:16])); code != 0 {
		t.Fatalf("server error %d", code)
	}
	return int32(binary.BigEndian.Uint32(f[0:4])), f[zkwire.ReplyHeaderLen:]
}

// roundTrip times one exists request of "/", from its write to its reply.
func (c *wireClient) roundTrip(t *testing.T) time.Duration {
	t.Helper()
	req := c.request(OpExists, append(appendString(nil, "/"), 0))
	start := time.Now()
	if _, err := c.conn.Write(req); err != nil {
		t.Fatal(err)
	}
	if xid, _ := c.reply(t); xid != c.xid {
		t.Fatalf("reply xid %d to request %d", xid, c.xid)
	}
	return time.Since(start)
}

// createBody is the body of a create request of path, with no data, open
// to all (world:anyone), in mode (ZooKeeper's CreateMode: 0 persistent, 3
// ephemeral sequential, ...).
func createBody(path string, mode uint32) []byte {
	b := appendString(nil, path)
	b = binary.BigEndian.AppendUint32(b, 0) // data: empty
	b = binary.BigEndian.AppendUint32(b, 1) // one ACL: world:anyone, all
	b = binary.BigEndian.AppendUint32(b, 31)
	b = appendString(appendString(b, "world"), "anyone")
	return binary.BigEndian.AppendUint32(b, mode)
}

// createTimed creates a persistent node at path, and returns when the
// create was written, when the server made it (its ctime, read through
// stat, a client of the server's own), and when its reply was read.
func (c *wireClient) createTimed(t *testing.T, stat *wireClient, path string) (written, ctime, answered time.Time) {
	t.Helper()
	req := c.request(OpCreate, createBody(path, 0)) // PERSISTENT
	written = time.Now()
	if _, err := c.conn.Write(req); err != nil {
		t.Fatal(err)
	}
	if xid, _ := c.reply(t); xid != c.xid {
		t.Fatalf("reply xid %d to request %d", xid, c.xid)
	}
	answered = time.Now()
	if _, err := stat.conn.Write(stat.request(OpExists, append(appendString(nil, path), 0))); err != nil {
		t.Fatal(err)
	}
	_, st := stat.reply(t)
	if len(st) < 24 {
		t.Fatalf("bad exists reply % x", st)
	}
	return written, time.UnixMilli(int64(binary.BigEndian.Uint64(st[16:24]))), answered // czxid, mzxid, ctime
}

// createBurst writes n creates of ephemeral sequential nodes at prefix in
// one write, and returns their replies' xids and the sequence numbers made,
// in the order the replies came.
func (c *wireClient) createBurst(t *testing.T, prefix string, n int) (xids []int32, seqs []int64) {
	t.Helper()
	var burst []byte
	for range n {
		burst = append(burst, c.request(OpCreate, createBody(prefix, 3))...) // EPHEMERAL_SEQUENTIAL
	}
	if _, err := c.conn.Write(burst); err != nil {
		t.Fatal(err)
	}
	for range n {
		xid, body := c.reply(t)
		if len(body) < 4 || len(body) != 4+int(binary.BigEndian.Uint32(body)) {
			t.Fatalf("bad create reply % x", body)
		}
		var seq int64
		if _, err := fmt.Sscanf(string(body[4+len(prefix):]), "%d", &seq); err != nil {
			t.Fatalf("created %q: %v", body[4:], err)
		}
		xids, seqs = append(xids, xid), append(seqs, seq)
	}
	return xids, seqs
}

// Notifications counts the watch events the server sends through the
// proxy, and nothing else.
func TestProxyNotifications(t *testing.T) {
	s := NewServer(t)
	p := NewProxy(t, s.Addr())
	conn, _ := connect(t, p.Addr(), 10*time.Second)
	other, _ := connect(t, s.Addr(), 10*time.Second)
	if _, err := conn.Create("/notified", nil, 0, acl); err != nil {
		t.Fatal(err)
	}
	_, _, ch, err := conn.GetW("/notified")
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Notifications(); n != 0 {
		t.Fatalf("%d notifications before any watch fired", n)
	}
	if err := other.Delete("/notified", -1); err != nil {
		t.Fatal(err)
	}
	recvWithin(t, ch, time.Minute, "the watch's event")
	if n := p.Notifications(); n != 1 {
		t.Fatalf("%d notifications after one watch fired", n)
	}
}
