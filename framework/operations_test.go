package framework

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

func TestOperationsRoundTrip(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	c := newClient(t, "", WithDefaultData([]byte("dflt")))

	p, err := c.Create(ctx, base+"/a/b", []byte("x"), CreatingParentsIfNeeded())
	if err != nil || p != base+"/a/b" {
		t.Fatalf("Create = %q, %v", p, err)
	}
	data, stat, err := c.GetData(ctx, p)
	if err != nil || string(data) != "x" || stat.Version != 0 {
		t.Fatalf("GetData = %q, %+v, %v", data, stat, err)
	}
	if _, err := c.SetData(ctx, p, []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetData(ctx, p, []byte("z"), 0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("SetData with a stale version = %v, want ErrBadVersion", err)
	}
	d, err := c.Create(ctx, base+"/a/d", nil) // nil data: the default
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.GetData(ctx, d); err != nil || string(data) != "dflt" {
		t.Fatalf("default data = %q, %v", data, err)
	}
	e, err := c.Create(ctx, base+"/a/e", []byte{}) // empty, not default
	if err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.GetData(ctx, e); err != nil || len(data) != 0 {
		t.Fatalf("empty data = %q, %v", data, err)
	}
	kids, _, err := c.Children(ctx, base+"/a")
	if err != nil || strings.Join(sorted(kids), ",") != "b,d,e" {
		t.Fatalf("Children = %v, %v", kids, err)
	}
	seq, err := c.Create(ctx, base+"/a/s-", nil, WithMode(PersistentSequential))
	if err != nil || !strings.HasPrefix(seq, base+"/a/s-") || len(seq) != len(base+"/a/s-")+10 {
		t.Fatalf("sequential Create = %q, %v", seq, err)
	}
	res, err := c.Multi(ctx,
		&zk.CreateRequest{Path: base + "/a/m", Data: []byte("m")},
		&zk.DeleteRequest{Path: seq, Version: -1},
		&zk.CheckVersionRequest{Path: p, Version: 1})
	if err != nil || len(res) != 3 || res[0].String != base+"/a/m" {
		t.Fatalf("Multi = %+v, %v", res, err)
	}
	if ok, _, err := c.Exists(ctx, seq); err != nil || ok {
		t.Fatalf("after multi's delete: exists %v, %v", ok, err)
	}
	for _, n := range []string{"b", "d", "e", "m"} {
		if err := c.Delete(ctx, base+"/a/"+n); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Delete(ctx, base+"/a/b"); !errors.Is(err, zk.ErrNoNode) {
		t.Fatalf("second Delete = %v, want ErrNoNode", err)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestErrorsKeepOpPathAndSentinel(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	c := newClient(t, "")

	_, _, err := c.GetData(ctx, base+"/missing")
	var oe *OpError
	if !errors.Is(err, zk.ErrNoNode) || !errors.As(err, &oe) || oe.Op != "get data" || oe.Path != base+"/missing" {
		t.Fatalf("GetData of a missing node = %#v", err)
	}
	if !strings.Contains(err.Error(), base+"/missing") {
		t.Fatalf("error text %q does not name the path", err)
	}
	if _, err := c.Create(ctx, base, nil, CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, base, nil); !errors.Is(err, zk.ErrNodeExists) {
		t.Fatalf("Create of an existing node = %v", err)
	}
}

func TestNamespaceRoundTrip(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	raw := testutil.Connect(t, server.Addr())
	ns := strings.TrimPrefix(base, "/") + "/ns"
	c := newClient(t, "", WithNamespace(ns))

	p, err := c.Create(ctx, "/locks/x", []byte("v"), CreatingParentContainersIfNeeded())
	if err != nil || p != "/locks/x" {
		t.Fatalf("Create in namespace = %q, %v", p, err)
	}
	if data, _, err := raw.Get(base + "/ns/locks/x"); err != nil || string(data) != "v" {
		t.Fatalf("server view of the node = %q, %v", data, err)
	}
	kids, _, err := c.Children(ctx, "/locks")
	if err != nil || len(kids) != 1 || kids[0] != "x" {
		t.Fatalf("Children = %v, %v", kids, err)
	}
	prot, err := c.Create(ctx, "/locks/lock-", nil, WithMode(EphemeralSequential), WithProtection())
	if err != nil || !strings.HasPrefix(prot, "/locks/_c_") {
		t.Fatalf("protected Create in namespace = %q, %v", prot, err)
	}
	res, err := c.Multi(ctx, &zk.CreateRequest{Path: "/locks/m"})
	if err != nil || len(res) != 1 || res[0].String != "/locks/m" {
		t.Fatalf("Multi in namespace = %+v, %v", res, err)
	}
	if ok, _, err := raw.Exists(base + "/ns/locks/m"); err != nil || !ok {
		t.Fatalf("multi create did not land in the namespace: exists %v, %v", ok, err)
	}
	root, _, err := c.Children(ctx, "/")
	if err != nil || len(root) != 1 || root[0] != "locks" {
		t.Fatalf("Children of the namespace root = %v, %v", root, err)
	}
}

// A create whose reply is lost after the server applied it: the retry finds
// the node by its protected prefix, so exactly one node exists.
func TestProtectedCreateSurvivesLostReply(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	raw := testutil.Connect(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	c := newClient(t, proxy.Addr())
	if _, err := c.Create(ctx, base, nil, CreatingParentsIfNeeded()); err != nil {
		t.Fatal(err)
	}

	fired := proxy.LoseNextReply(1) // create
	p, err := c.Create(ctx, base+"/lock-", nil, WithMode(EphemeralSequential), WithProtection())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	default:
		t.Fatal("the proxy did not lose a create reply")
	}
	kids, _, err := raw.Children(base)
	if err != nil || len(kids) != 1 || base+"/"+kids[0] != p {
		t.Fatalf("children after a lost reply = %v (%v), want just %s", kids, err, p)
	}
	if !IsProtectedName(kids[0]) || !strings.HasSuffix(kids[0], "-lock-0000000000") {
		t.Fatalf("node name %q is not Curator's protected form", kids[0])
	}
}

// A delete cut short by a partition keeps going in the background and
// completes once the connection is back.
func TestGuaranteedDeleteCompletesInBackground(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	raw := testutil.Connect(t, server.Addr())
	proxy := zktest.NewProxy(t, server.Addr())
	rec := testutil.NewStateRecorder()
	c, err := New(proxy.Addr(), retry.NewNTimes(0, 0), WithListener(rec),
		WithSessionTimeout(10*time.Second), WithConnectionTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	}()
	rec.WaitFor(ctx, t, state.Connected)
	node, err := c.Create(ctx, base+"/victim", nil, CreatingParentsIfNeeded())
	if err != nil {
		t.Fatal(err)
	}

	proxy.DropConnections()
	proxy.BlackHole()
	rec.WaitFor(ctx, t, state.Suspended)
	err = c.Delete(ctx, node, Guaranteed())
	if !errors.Is(err, zk.ErrNoServer) {
		t.Fatalf("Delete while partitioned = %v, want connection loss", err)
	}
	if ok, _, err := raw.Exists(node); err != nil || !ok {
		t.Fatalf("node gone while the client was partitioned: exists %v, %v", ok, err)
	}
	proxy.Restore()
	testutil.WaitGone(t, raw, node)
}

// A cancelled context ends a retry wait at once, and the error says both why
// the wait ended and what failed before it.
func TestCancelStopsRetryWait(t *testing.T) {
	testutil.CheckLeaks(t)
	waiting := make(chan struct{})
	policy := retryHook{wait: time.Hour, started: waiting}
	c, err := New("127.0.0.1:1", &policy, WithConnectionTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing the client: %v", err)
		}
	}()
	ctx, cancel := context.WithCancel(testutil.Context(t))
	go func() {
		defer cancel()
		select {
		case <-waiting:
		case <-ctx.Done(): // the test has ended: GetData below failed it
		}
	}()
	_, _, err = c.GetData(ctx, "/x")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, zk.ErrNoServer) {
		t.Fatalf("GetData = %v, want context.Canceled wrapping the connection loss", err)
	}
}

// retryHook is a policy that always allows one more retry after a long wait,
// and says when the first wait begins.
type retryHook struct {
	wait    time.Duration
	started chan struct{}
	once    bool
}

func (r *retryHook) AllowRetry(int, time.Duration) (time.Duration, bool) {
	if !r.once {
		r.once = true
		close(r.started)
	}
	return r.wait, true
}

func TestDigestAuthAndACL(t *testing.T) {
	testutil.CheckLeaks(t)
	ctx := testutil.Context(t)
	base := testutil.Path(t)
	testutil.CleanupTree(t, server.Addr(), base)
	owner := newClient(t, "", WithAuth("digest", []byte("alice:secret")),
		WithACLProvider(ACLProviderFunc(func(path string) []zk.ACL {
			if path != base+"/private" {
				return OpenACL // parents stay open, so cleanup can remove them
			}
			return append(zk.DigestACL(zk.PermAll, "alice", "secret"), zk.WorldACL(zk.PermRead)...)
		})))
	p, err := owner.Create(ctx, base+"/private", []byte("v"), CreatingParentsIfNeeded())
	if err != nil {
		t.Fatal(err)
	}
	stranger := newClient(t, "")
	if _, err := stranger.SetData(ctx, p, []byte("w"), -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("SetData without credentials = %v, want ErrNoAuth", err)
	}
	if data, _, err := stranger.GetData(ctx, p); err != nil || !bytes.Equal(data, []byte("v")) {
		t.Fatalf("world-readable GetData = %q, %v", data, err)
	}
	if _, err := owner.SetData(ctx, p, []byte("w"), -1); err != nil {
		t.Fatalf("owner SetData = %v", err)
	}
}

// The server reaps an empty container parent whenever its check runs, also
// between the look for the deepest existing ancestor and the create of the
// first missing node below it (a CI failure: the create of a lock node
// came back NoNode). Parents are made again, a bounded number of times.
func TestCreateParentsWhileAnAncestorIsReaped(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	raw := testutil.Connect(t, server.Addr())
	for _, always := range []bool{false, true} {
		c := newClient(t, "")
		anc := fmt.Sprintf("%s/always-%t", base, always)
		if _, err := c.Create(ctx, anc, nil, WithMode(Container), CreatingParentContainersIfNeeded()); err != nil {
			t.Fatal(err)
		}
		var reaped atomic.Int32
		c.cfg.beforeParentCreate = func(p string) {
			if p == anc+"/x" && (always || reaped.Load() == 0) {
				reaped.Add(1)
				if err := raw.Delete(anc, -1); err != nil {
					t.Errorf("reaping %s: %v", anc, err)
				}
			}
		}
		node, err := c.Create(ctx, anc+"/x/y/lock-", nil, WithMode(EphemeralSequential), WithProtection(),
			CreatingParentContainersIfNeeded())
		if cerr := c.Close(); cerr != nil {
			t.Fatalf("closing the client: %v", cerr)
		}
		if always {
			if !errors.Is(err, zk.ErrNoNode) || reaped.Load() != parentAttempts {
				t.Fatalf("create while the ancestor is always reaped = %q, %v after %d reapings", node, err, reaped.Load())
			}
			if ok, _, err := raw.Exists(anc); err != nil || ok {
				t.Fatalf("%s after a failed create: exists %v, %v", anc, ok, err)
			}
		} else if err != nil || reaped.Load() != 1 {
			t.Fatalf("create after one reaping = %q, %v (%d reapings)", node, err, reaped.Load())
		}
	}
}
