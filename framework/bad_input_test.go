package framework

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// New refuses bad connect strings, namespaces and options with an error
// wrapping ErrInvalidArgument that names the problem, and makes no client.
func TestNewRefusesBadArguments(t *testing.T) {
	testutil.CheckLeaks(t)
	p := retry.NewOneTime(time.Millisecond)
	addr := server.Addr()
	for _, tc := range []struct {
		name    string
		connect string
		policy  retry.Policy
		opts    []Option
		want    string
	}{
		{"empty connect string", "", p, nil, "connect string is empty"},
		{"blank connect string", "  ", p, nil, "connect string is empty"},
		{"only a comma", ",", p, nil, "empty server"},
		{"empty server", "a:1,,b:2", p, nil, "empty server"},
		{"no host", ":2181", p, nil, "no host"},
		{"empty port", "zk1:", p, nil, `bad port ""`},
		{"port not a number", "zk1:abc", p, nil, `bad port "abc"`},
		{"port 0", "zk1:0", p, nil, `bad port "0"`},
		{"negative port", "zk1:-1", p, nil, `bad port "-1"`},
		{"port too large", "zk1:65536", p, nil, `bad port "65536"`},
		{"too many colons", "zk1:1:2", p, nil, "too many colons"},
		{"unclosed bracket", "[::1:2181", p, nil, "missing ']'"},
		{"chroot", "zk1:2181/app", p, nil, "chroot"},
		{"space in host", "zk 1:2181", p, nil, "space or control character"},
		{"NUL in host", "zk\x001:2181", p, nil, "space or control character"},
		{"nil retry policy", addr, nil, nil, "retry policy"},
		{"namespace starting with /", addr, p, []Option{WithNamespace("/ns")}, "must not start with /"},
		{"namespace ending with /", addr, p, []Option{WithNamespace("ns/")}, "must not end with /"},
		{"namespace with //", addr, p, []Option{WithNamespace("a//b")}, "empty segment"},
		{"namespace .", addr, p, []Option{WithNamespace(".")}, "relative segment ."},
		{"namespace with ..", addr, p, []Option{WithNamespace("a/../b")}, "relative segment .."},
		{"namespace with NUL", addr, p, []Option{WithNamespace("a\x00b")}, "NUL character"},
		{"namespace with a control character", addr, p, []Option{WithNamespace("a\x01b")}, "invalid character"},
		{"zero session timeout", addr, p, []Option{WithSessionTimeout(0)}, "session timeout"},
		{"negative connection timeout", addr, p, []Option{WithConnectionTimeout(-1)}, "connection timeout"},
		// Curator's milliseconds, read as nanoseconds: 30µs, which no
		// server can serve (the client never connects, saying the server
		// "closed the connection before a session began").
		{"session timeout in Curator's milliseconds", addr, p, []Option{WithSessionTimeout(30000)},
			"session timeout 30µs: did you mean 30000*time.Millisecond?"},
		{"connection timeout in Curator's milliseconds", addr, p, []Option{WithConnectionTimeout(15000)},
			"connection timeout 15µs: did you mean 15000*time.Millisecond?"},
		{"session timeout below the floor", addr, p, []Option{WithSessionTimeout(99 * time.Millisecond)},
			"session timeout 99ms is below the least WithSessionTimeout takes, 100ms"},
		{"session timeout beyond the protocol", addr, p, []Option{WithSessionTimeout(MaxSessionTimeout + time.Millisecond)},
			"is above the most WithSessionTimeout takes"},
		{"connection timeout below the floor", addr, p, []Option{WithConnectionTimeout(time.Millisecond)},
			"connection timeout 1ms is below the least WithConnectionTimeout takes, 10ms"},
		{"expiration percent 0", addr, p, []Option{WithSimulatedSessionExpirationPercent(0)}, "percent"},
		{"expiration percent 101", addr, p, []Option{WithSimulatedSessionExpirationPercent(101)}, "percent"},
		{"nil error policy", addr, p, []Option{WithErrorPolicy(nil)}, "error policy"},
		{"empty auth scheme", addr, p, []Option{WithAuth("", nil)}, "auth scheme"},
		{"zero jute.maxbuffer", addr, p, []Option{WithJuteMaxBuffer(0)}, "jute.maxbuffer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.connect, tc.policy, tc.opts...)
			if c != nil {
				c.Close()
				t.Fatalf("New made a client (err %v)", err)
			}
			testutil.ErrorIs(t, err, ErrInvalidArgument, tc.want)
		})
	}
}

// pathOp is one of the client's operations on a path, for the tables below.
type pathOp struct {
	name string // as error messages name it
	do   opFunc
}

type opFunc = func(ctx context.Context, c *Client, path string) error

// errOf, errOf3 and errOf4 keep only the error of a call's results.
func errOf[T any](_ T, err error) error                  { return err }
func errOf3[A, B any](_ A, _ B, err error) error         { return err }
func errOf4[A, B, C any](_ A, _ B, _ C, err error) error { return err }

// multiOf is a Multi of the one request req makes for the path.
func multiOf(req func(path string) any) opFunc {
	return func(ctx context.Context, c *Client, p string) error { return errOf(c.Multi(ctx, req(p))) }
}

// pathOps returns every operation of the client that takes a path.
func pathOps() []pathOp {
	data := []byte("x")
	return []pathOp{
		{"create", func(ctx context.Context, c *Client, p string) error {
			return errOf(c.Create(ctx, p, data, CreatingParentsIfNeeded()))
		}},
		{"create", func(ctx context.Context, c *Client, p string) error {
			return errOf(c.Create(ctx, p, nil, WithMode(EphemeralSequential), WithProtection(), CreatingParentContainersIfNeeded()))
		}},
		{"delete", func(ctx context.Context, c *Client, p string) error { return c.Delete(ctx, p) }},
		{"delete", func(ctx context.Context, c *Client, p string) error { return c.Delete(ctx, p, Guaranteed()) }},
		{"exists", func(ctx context.Context, c *Client, p string) error { return errOf3(c.Exists(ctx, p)) }},
		{"exists", func(ctx context.Context, c *Client, p string) error { return errOf4(c.ExistsW(ctx, p)) }},
		{"get data", func(ctx context.Context, c *Client, p string) error { return errOf3(c.GetData(ctx, p)) }},
		{"get data", func(ctx context.Context, c *Client, p string) error { return errOf4(c.GetDataW(ctx, p)) }},
		{"set data", func(ctx context.Context, c *Client, p string) error { return errOf(c.SetData(ctx, p, data, -1)) }},
		{"get children", func(ctx context.Context, c *Client, p string) error { return errOf3(c.Children(ctx, p)) }},
		{"get children", func(ctx context.Context, c *Client, p string) error { return errOf4(c.ChildrenW(ctx, p)) }},
		{"sync", func(ctx context.Context, c *Client, p string) error { return c.Sync(ctx, p) }},
		{"multi", multiOf(func(p string) any { return &zk.CreateRequest{Path: p, Data: data} })},
		{"multi", multiOf(func(p string) any { return &zk.DeleteRequest{Path: p, Version: -1} })},
		{"multi", multiOf(func(p string) any { return &zk.SetDataRequest{Path: p, Data: data, Version: -1} })},
		{"multi", multiOf(func(p string) any { return &zk.CheckVersionRequest{Path: p, Version: -1} })},
	}
}

// Every operation refuses every bad path before sending anything, with an
// error that unwraps to zk.ErrInvalidPath and names the operation and the
// problem; on a closed client it fails at once with ErrClosed (and
// zk.ErrClosing); with a context that has already ended, with the context's
// error. Multi refuses operations it cannot send, nil ones included, and
// sends none of the others. Nothing is created.
func TestOpsRefuseBadInput(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	nothingCreated := testutil.NothingCreated(t, server.Addr(), base)
	c, closed := newClient(t, ""), newClient(t, "")
	if err := closed.Close(); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, op := range pathOps() {
		for _, bad := range testutil.BadPaths(base) {
			testutil.ErrorIs(t, op.do(ctx, c, bad.Path), zk.ErrInvalidPath, op.name, bad.Problem)
			testutil.ErrorIs(t, op.do(ctx, c, bad.Path), ErrInvalidArgument, op.name, bad.Problem)
		}
		err := op.do(ctx, closed, base+"/x")
		testutil.ErrorIs(t, err, ErrClosed, op.name, "client is closed")
		testutil.ErrorIs(t, err, zk.ErrClosing)
		testutil.ErrorIs(t, op.do(cancelled, c, base+"/x"), context.Canceled, op.name)
		testutil.ErrorIs(t, op.do(nil, c, base+"/x"), ErrInvalidArgument, op.name, "nil context")
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	testutil.ErrorIs(t, c.BlockUntilConnected(nil), ErrInvalidArgument, "nil context") //nolint:staticcheck
	for _, bad := range []any{nil, "not an op", (*zk.CreateRequest)(nil), (*zk.DeleteRequest)(nil),
		(*zk.SetDataRequest)(nil), (*zk.CheckVersionRequest)(nil), zk.CreateRequest{Path: base}} {
		_, err := c.Multi(ctx, &zk.CreateRequest{Path: base}, bad)
		testutil.ErrorIs(t, err, ErrInvalidArgument, "multi", "operation 1", "unsupported operation")
	}
	if !closed.IsClosed() {
		t.Error("IsClosed after Close = false")
	}
	testutil.ErrorIs(t, closed.BlockUntilConnected(ctx), ErrClosed, "client is closed")
	if err := closed.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	nothingCreated()
}

// Data too large for the server's jute.maxbuffer is refused by the client,
// before it is sent: the server would drop the connection (SUSPENDED, and
// every lock of the client with it) and the retries would do it again. The
// largest request the server takes still goes through, and the client
// stays connected and usable.
func TestOversizedData(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	states := testutil.NewStateRecorder()
	c := newClient(t, "", WithListener(states))
	states.WaitFor(ctx, t, state.Connected)
	if _, err := c.Create(ctx, base, nil, CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}
	node := base + "/x"
	for _, tc := range []struct {
		name string
		do   func(data []byte) error
	}{
		{"create", func(data []byte) error { return errOf(c.Create(ctx, node, data)) }},
		{"protected create", func(data []byte) error {
			return errOf(c.Create(ctx, node, data, WithMode(EphemeralSequential), WithProtection()))
		}},
		{"set data", func(data []byte) error { return errOf(c.SetData(ctx, base, data, -1)) }},
		{"multi create", func(data []byte) error { return errOf(c.Multi(ctx, &zk.CreateRequest{Path: node, Data: data})) }},
		{"multi set data", func(data []byte) error {
			return errOf(c.Multi(ctx, &zk.SetDataRequest{Path: base, Data: data, Version: -1}))
		}},
	} {
		// 2 MiB is more than go-zookeeper's send buffer too.
		for _, size := range []int{DefaultJuteMaxBuffer, 2 << 20} {
			testutil.ErrorIs(t, tc.do(make([]byte, size)), ErrInvalidArgument, "jute.maxbuffer", "would drop the connection")
		}
	}
	// The data that makes a create of node exactly as large as the server
	// allows, and one byte more.
	fits := make([]byte, DefaultJuteMaxBuffer-requestHeaderSize-createSize(node, nil, OpenACL))
	testutil.ErrorIs(t, errOf(c.Create(ctx, node, append(fits, 0))), ErrInvalidArgument, "jute.maxbuffer")
	if kids, _, err := c.Children(ctx, base); err != nil || len(kids) != 0 {
		t.Fatalf("children after refused creates = %v, %v", kids, err)
	}
	if _, err := c.Create(ctx, node, fits); err != nil {
		t.Fatalf("create of the largest request the server takes = %v", err)
	}
	if data, _, err := c.GetData(ctx, node); err != nil || len(data) != len(fits) {
		t.Fatalf("GetData of the largest node = %d bytes, %v", len(data), err)
	}
	if err := c.Delete(ctx, node); err != nil {
		t.Fatal(err)
	}
	if err := states.Equal(state.Connected); err != nil {
		t.Fatalf("the connection was disturbed: %v", err)
	}

	small := newClient(t, "", WithJuteMaxBuffer(1000))
	testutil.ErrorIs(t, errOf(small.Create(ctx, node, make([]byte, 1000))), ErrInvalidArgument, "(1000 bytes")
}
