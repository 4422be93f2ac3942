package atomic_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/recipes"
	zkatomic "github.com/gocurator/curator/recipes/atomic"
	"github.com/gocurator/curator/retry"
)

// server is the real ZooKeeper the package's tests share.
var server *zktest.Server

func TestMain(m *testing.M) {
	os.Exit(testutil.Main(m, &server, testutil.QuickServer(100*time.Millisecond)...))
}

func mustLong(t testing.TB, c *framework.Client, path string, policy retry.Policy, opts ...zkatomic.Option) *zkatomic.DistributedAtomicLong {
	t.Helper()
	l, err := zkatomic.NewDistributedAtomicLong(c, path, policy, opts...)
	testutil.Must(t, err)
	return l
}

// succeeded returns a function that returns an operation's result,
// failing t on its error or if it did not succeed.
func succeeded[T any](t testing.TB) func(zkatomic.AtomicValue[T], error) zkatomic.AtomicValue[T] {
	return func(v zkatomic.AtomicValue[T], err error) zkatomic.AtomicValue[T] {
		t.Helper()
		testutil.Must(t, err)
		if !v.Succeeded {
			t.Fatalf("did not succeed: %+v", v)
		}
		return v
	}
}

// A DistributedAtomicLong's operations, on Curator's bytes: an absent node
// is 0, Initialize makes it once, each change says what the value was and
// is, the node holds 8 bytes big-endian; a compare-and-set of the wrong
// value does not succeed; data that is no long is an error.
func TestDistributedAtomicLong(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := testclient.New(t, server.Addr())
	path := base + "/counter"
	l := mustLong(t, c, path, retry.NewNTimes(3, 0))
	must := succeeded[int64](t)
	if v := must(l.Get(ctx)); v.PreValue != 0 || v.PostValue != 0 {
		t.Fatalf("absent: %+v", v)
	}
	if ok, err := l.Initialize(ctx, 40); err != nil || !ok {
		t.Fatalf("Initialize: %v %v", ok, err)
	}
	if ok, err := l.Initialize(ctx, 7); err != nil || ok {
		t.Fatalf("Initialize again: %v %v", ok, err)
	}
	for _, step := range []struct {
		op        func() (zkatomic.AtomicValue[int64], error)
		pre, post int64
	}{
		{func() (zkatomic.AtomicValue[int64], error) { return l.Increment(ctx) }, 40, 41},
		{func() (zkatomic.AtomicValue[int64], error) { return l.Add(ctx, 10) }, 41, 51},
		{func() (zkatomic.AtomicValue[int64], error) { return l.Subtract(ctx, 8) }, 51, 43},
		{func() (zkatomic.AtomicValue[int64], error) { return l.Decrement(ctx) }, 43, 42},
		{func() (zkatomic.AtomicValue[int64], error) { return l.CompareAndSet(ctx, 42, -1) }, 42, -1},
		{func() (zkatomic.AtomicValue[int64], error) { return l.TrySet(ctx, 1<<40) }, -1, 1 << 40},
	} {
		v := must(step.op())
		if v.PreValue != step.pre || v.PostValue != step.post || v.Stats.OptimisticTries > 1 {
			t.Fatalf("%+v, want %d -> %d in one try (none: a compare-and-set)", v, step.pre, step.post)
		}
	}
	data, _, err := c.GetData(ctx, path)
	testutil.Must(t, err)
	if !bytes.Equal(data, binary.BigEndian.AppendUint64(nil, 1<<40)) {
		t.Fatalf("node holds %x, want Java's 8 bytes big-endian", data)
	}
	if v, err := l.CompareAndSet(ctx, 5, 6); err != nil || v.Succeeded || v.PreValue != 1<<40 {
		t.Fatalf("compare-and-set of a wrong value: %+v %v", v, err)
	}
	testutil.Must(t, l.ForceSet(ctx, -7))
	if v := must(l.Get(ctx)); v.PreValue != -7 {
		t.Fatalf("after ForceSet: %+v", v)
	}

	// Curator's bytesToValue: empty is 0, more than 8 bytes is the first 8,
	// fewer is corrupt.
	for _, tc := range []struct {
		data []byte
		want int64
	}{{[]byte{}, 0}, {append(binary.BigEndian.AppendUint64(nil, 9), 1, 2), 9}} {
		_, err := c.SetData(ctx, path, tc.data, -1)
		testutil.Must(t, err)
		if v := must(l.Get(ctx)); v.PreValue != tc.want {
			t.Fatalf("data %x read as %d, want %d", tc.data, v.PreValue, tc.want)
		}
	}
	_, err = c.SetData(ctx, path, []byte{1, 2, 3}, -1)
	testutil.Must(t, err)
	_, err = l.Get(ctx)
	testutil.ErrorIs(t, err, zkatomic.ErrCorruptValue, "[0x1, 0x2, 0x3]")
	_, err = l.Increment(ctx)
	testutil.ErrorIs(t, err, zkatomic.ErrCorruptValue)
}

// A DistributedAtomicValue sets bytes as they are; nil is empty.
func TestDistributedAtomicValue(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := testclient.New(t, server.Addr())
	v, err := zkatomic.NewDistributedAtomicValue(c, base+"/value", retry.NewNTimes(3, 0))
	testutil.Must(t, err)
	must := succeeded[[]byte](t)
	if r := must(v.Get(ctx)); r.PreValue != nil {
		t.Fatalf("absent: %+v", r)
	}
	if r, err := v.CompareAndSet(ctx, nil, []byte("x")); err != nil || r.Succeeded {
		t.Fatalf("compare-and-set of an absent node: %+v %v", r, err)
	}
	if r := must(v.TrySet(ctx, []byte("one"))); r.PreValue != nil || string(r.PostValue) != "one" {
		t.Fatalf("%+v", r)
	}
	if r := must(v.CompareAndSet(ctx, []byte("one"), nil)); string(r.PreValue) != "one" || r.PostValue == nil || len(r.PostValue) != 0 {
		t.Fatalf("%+v", r)
	}
	if r := must(v.Get(ctx)); r.PreValue == nil || len(r.PreValue) != 0 {
		t.Fatalf("nil set as %q, want empty data", r.PreValue)
	}
}

// Increments from many goroutines and clients, optimistic then promoted to
// the lock, lose no update and count none twice: the value is the number
// of increments that succeeded.
func TestAtomicLongContended(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	path, lock := base+"/counter", base+"/lock"
	const workers, each = 6, 20
	var ok, gaveUp, promoted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		c := testclient.New(t, server.Addr())
		l := mustLong(t, c, path, retry.NewNTimes(w%3, time.Millisecond),
			zkatomic.WithPromotedToLock(zkatomic.PromotedToLock{Path: lock, RetryPolicy: retry.NewNTimes(3, 0)}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				v, err := l.Increment(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if v.Stats.PromotedLockTries > 0 {
					promoted.Add(1)
				}
				if v.Succeeded {
					ok.Add(1)
				} else {
					gaveUp.Add(1)
				}
			}
		}()
	}
	testutil.Wait(t, &wg, "the incrementers")
	c := testclient.New(t, server.Addr())
	v := succeeded[int64](t)(mustLong(t, c, path, retry.NewNTimes(0, 0)).Get(ctx))
	if v.PreValue != ok.Load() {
		t.Fatalf("the counter is %d after %d increments succeeded (%d gave up)", v.PreValue, ok.Load(), gaveUp.Load())
	}
	t.Logf("%d succeeded, %d gave up, %d promoted to the lock", ok.Load(), gaveUp.Load(), promoted.Load())
}

// An operation whose optimistic tries do not succeed is promoted to the
// lock: past the promotion's timeout (another holds the lock) it gives up,
// not succeeded and no error; once it holds the lock, it succeeds. Each
// optimistic retry is told to the hook. A writer hammers the node so that
// the optimistic tries of a client a delay away conflict.
func TestAtomicPromotedToLock(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	path, lock := base+"/counter", base+"/lock"
	var retries, acquired atomic.Int64
	stopHammer := make(chan struct{})
	var stopOnce sync.Once
	hook := framework.WithEventHook(framework.EventFunc(func(e framework.Event) {
		switch {
		case e.Kind == framework.Retrying && e.Detail == (zkatomic.RetryEvent{}) && e.Op == "optimistic-set" && e.Path == path:
			retries.Add(1)
		case e.Kind == recipes.Acquired && e.Path == lock:
			acquired.Add(1)
			stopOnce.Do(func() { close(stopHammer) }) // the promoted try holds the lock: let it succeed
		}
	}))
	proxy := zktest.NewProxy(t, server.Addr())
	proxy.SetDelays(10*time.Millisecond, 10*time.Millisecond)
	c := testclient.New(t, proxy.Addr(), hook)
	l := mustLong(t, c, path, retry.NewNTimes(2, 0),
		zkatomic.WithPromotedToLock(zkatomic.PromotedToLock{Path: lock, Timeout: 300 * time.Millisecond,
			RetryPolicy: retry.NewNTimes(20, 5*time.Millisecond)}))
	hammer := mustLong(t, testclient.New(t, server.Addr()), path, retry.NewNTimes(0, 0))
	hammerDone := make(chan struct{})
	go func() {
		defer close(hammerDone)
		pace := time.NewTicker(2 * time.Millisecond) // a write every 2 ms: each try of l's spans 20 ms or more
		defer pace.Stop()
		for i := int64(0); ; i++ {
			select {
			case <-stopHammer:
				return
			case <-pace.C:
			}
			if err := hammer.ForceSet(ctx, i); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() {
		stopOnce.Do(func() { close(stopHammer) })
		testutil.Recv(t, hammerDone, "the hammer")
	}()

	held := mustMutex(t, testclient.New(t, server.Addr()), lock).NewHandle()
	testutil.Must(t, held.Acquire(ctx))
	v, err := l.Increment(ctx)
	testutil.Must(t, err)
	if v.Succeeded || v.Stats.OptimisticTries != 3 || v.Stats.PromotedLockTries != 0 || v.Stats.PromotedTime < 300*time.Millisecond {
		t.Fatalf("with the lock held elsewhere: %+v, want not succeeded after 3 optimistic tries and the 300ms promotion's timeout", v)
	}
	testutil.Must(t, held.Release(ctx))
	v = succeeded[int64](t)(l.Increment(ctx))
	if v.Stats.PromotedLockTries < 1 {
		t.Fatalf("succeeded without the lock against the hammer: %+v", v)
	}
	c.Close()
	<-c.Closed()
	if retries.Load() < 4 || acquired.Load() < 1 {
		t.Fatalf("the hook heard %d optimistic retries and %d acquisitions of the lock", retries.Load(), acquired.Load())
	}
}

func mustMutex(t testing.TB, c *framework.Client, path string) *recipes.InterProcessMutex {
	t.Helper()
	m, err := recipes.NewInterProcessMutex(c, path)
	testutil.Must(t, err)
	return m
}

// The invariant under faults: no increment that succeeded is lost. Clients
// behind fault proxies increment one counter while their connections drop,
// replies to their compare-and-sets are lost (the server applied them) and
// a session expires: each worker arms its proxy to lose the reply to its
// next set every sixth increment, drops its connection during another,
// and the first expires its session half-way. The counter ends at least at
// the increments that succeeded, and above them by no more than the
// increments that failed with an error (they may have been applied) and
// the replies lost (a change retried by the client fails its
// compare-and-set on itself, and is applied again, as in Curator).
func TestAtomicLongFaults(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	path, lock := base+"/counter", base+"/lock"
	const workers, each = 3, 30
	type arm struct {
		p     *zktest.Proxy
		fired <-chan struct{}
	}
	var ok, failed, gaveUp atomic.Int64
	var mu sync.Mutex
	var arms []arm
	var wg, faults sync.WaitGroup
	for w := range workers {
		p := zktest.NewProxy(t, server.Addr())
		c, err := framework.New(p.Addr(), retry.NewExponentialBackoff(10*time.Millisecond, 20, retry.WithMaxSleep(100*time.Millisecond)),
			framework.WithSessionTimeout(time.Second))
		testutil.Must(t, err)
		t.Cleanup(func() { c.Close() })
		l := mustLong(t, c, path, retry.NewNTimes(20, time.Millisecond),
			zkatomic.WithPromotedToLock(zkatomic.PromotedToLock{Path: lock, RetryPolicy: retry.NewNTimes(20, time.Millisecond)}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range each {
				switch {
				case k%6 == 1:
					mu.Lock()
					arms = append(arms, arm{p, p.LoseNextReply(zktest.OpSetData)})
					mu.Unlock()
				case k%6 == 4:
					faults.Add(1)
					go func() { // during the increment
						defer faults.Done()
						p.DropConnections()
					}()
				case w == 0 && k == each/2:
					if err := p.ExpireSession(c.SessionID()); err != nil {
						t.Error(err)
					}
				}
				v, err := l.Increment(ctx)
				switch {
				case err != nil:
					failed.Add(1)
				case v.Succeeded:
					ok.Add(1)
				default:
					gaveUp.Add(1)
				}
			}
		}()
	}
	testutil.Wait(t, &wg, "the incrementers")
	testutil.Wait(t, &faults, "the faults")
	lost := 0
	for _, a := range arms {
		if !a.p.Disarm(a.fired) { // taken: its reply was lost
			testutil.Recv(t, a.fired, "a reply being lost")
			lost++
		}
	}
	c := testclient.New(t, server.Addr())
	v := succeeded[int64](t)(mustLong(t, c, path, retry.NewNTimes(0, 0)).Get(ctx))
	got, succeeded := v.PreValue, ok.Load()
	t.Logf("counter %d: %d succeeded, %d failed, %d gave up; %d replies lost", got, succeeded, failed.Load(), gaveUp.Load(), lost)
	if lost == 0 {
		t.Fatal("no reply was lost: the test tested nothing")
	}
	if got < succeeded {
		t.Fatalf("lost increments: the counter is %d after %d succeeded", got, succeeded)
	}
	if got > succeeded+failed.Load()+int64(lost) {
		t.Fatalf("the counter is %d: more than the %d that succeeded, %d that failed and %d replies lost", got, succeeded, failed.Load(), lost)
	}
}

// Misuse is an error, never a panic or a hang.
func TestAtomicMisuse(t *testing.T) {
	ctx, base := testutil.Begin(t, server.Addr())
	c := testclient.New(t, server.Addr())
	policy := retry.NewNTimes(1, 0)
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"nil client", errOf(zkatomic.NewDistributedAtomicLong(nil, base, policy)), framework.ErrInvalidArgument},
		{"nil policy", errOf(zkatomic.NewDistributedAtomicLong(c, base, nil)), framework.ErrInvalidArgument},
		{"root", errOf(zkatomic.NewDistributedAtomicValue(c, "/", policy)), zk.ErrInvalidPath},
		{"no lock path", errOf(zkatomic.NewDistributedAtomicLong(c, base, policy, zkatomic.WithPromotedToLock(zkatomic.PromotedToLock{}))), zk.ErrInvalidPath},
		{"negative timeout", errOf(zkatomic.NewDistributedAtomicLong(c, base, policy,
			zkatomic.WithPromotedToLock(zkatomic.PromotedToLock{Path: base + "/lock", Timeout: -time.Second}))), framework.ErrInvalidArgument},
	} {
		testutil.ErrorIs(t, tc.err, tc.want)
	}
	for _, bad := range testutil.BadPaths(base) {
		testutil.ErrorIs(t, errOf(zkatomic.NewDistributedAtomicLong(c, bad.Path, policy)), zk.ErrInvalidPath, bad.Problem)
	}
	l := mustLong(t, c, base+"/n", policy)
	var nilCtx context.Context
	_, err := l.Increment(nilCtx)
	testutil.ErrorIs(t, err, framework.ErrInvalidArgument, "nil context")
	testutil.ErrorIs(t, l.ForceSet(nilCtx, 1), framework.ErrInvalidArgument, "nil context")
	closed := testclient.New(t, server.Addr())
	cl := mustLong(t, closed, base+"/n", policy)
	closed.Close()
	_, err = cl.Increment(ctx)
	testutil.ErrorIs(t, err, framework.ErrClosed)
	testutil.ErrorIs(t, errOf(zkatomic.NewDistributedAtomicLong(closed, base, policy)), framework.ErrClosed)
	for _, v := range []any{&zkatomic.DistributedAtomicLong{}, (*zkatomic.DistributedAtomicLong)(nil),
		&zkatomic.DistributedAtomicValue{}, (*zkatomic.DistributedAtomicValue)(nil)} {
		if testutil.CallEveryMethod(t, v, framework.ErrInvalidArgument) == 0 {
			t.Errorf("%T: no method called", v)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }
