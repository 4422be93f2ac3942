package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/testutil"
)

// WithTTL refuses what the servers would refuse, before sending anything:
// a TTL out of [1ms, MaxTTL], or a mode that cannot have one. The package's
// server runs without TTLs (extendedTypesEnabled false, ZooKeeper's
// default): a TTL create there fails at once, unretried (recipes/nodes'
// tests make TTL nodes on a server with them).
func TestWithTTL(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := newClient(t, "")
	for _, tc := range []struct {
		ttl  time.Duration
		mode CreateMode
		want string
	}{
		{0, Persistent, ""}, // no TTL
		{time.Microsecond, Persistent, "must be from 1ms"},
		{MaxTTL + time.Millisecond, Persistent, "must be from 1ms"},
		{-time.Second, PersistentSequential, "must be from 1ms"},
		{time.Second, Ephemeral, "only a Persistent or PersistentSequential node"},
		{time.Second, EphemeralSequential, "only a Persistent or PersistentSequential node"},
		{time.Second, Container, "only a Persistent or PersistentSequential node"},
	} {
		_, err := c.Create(ctx, base+"/n", nil, WithMode(tc.mode), WithTTL(tc.ttl), CreatingParentsIfNeeded())
		if tc.want == "" {
			testutil.Must(t, err)
			testutil.Must(t, c.Delete(ctx, base+"/n"))
			continue
		}
		testutil.ErrorIs(t, err, ErrInvalidArgument, tc.want)
	}
	start := time.Now()
	_, err := c.Create(ctx, base+"/ttl", nil, WithTTL(time.Minute), CreatingParentsIfNeeded())
	if err == nil || !strings.Contains(err.Error(), "-6") || time.Since(start) > 5*time.Second {
		t.Fatalf("a TTL create on servers without TTLs: %v after %v, want Unimplemented (-6) at once", err, time.Since(start))
	}
	if ok, _, err := c.Exists(ctx, base+"/ttl"); err != nil || ok {
		t.Fatalf("the refused TTL node is there (%v, %v)", ok, err)
	}
}

// DefaultData is a copy of the data a nil create writes.
func TestDefaultData(t *testing.T) {
	c := newClient(t, "", WithDefaultData([]byte("mine")))
	d := c.DefaultData()
	if string(d) != "mine" {
		t.Fatalf("DefaultData %q", d)
	}
	d[0] = 'x'
	if string(c.DefaultData()) != "mine" {
		t.Fatal("DefaultData is not a copy")
	}
	if (*Client)(nil).DefaultData() != nil || newClient(t, "").DefaultData() == nil {
		t.Fatal("nil client's, or the default (the local address)")
	}
}
