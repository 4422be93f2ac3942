package cache

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/testutil"
	"github.com/gocurator/curator/state"
)

// churn changes the tree at and below base at random, on a connection of
// its own, until stop: it makes nodes (two levels of five and four), sets
// their data, deletes leaves. It returns a function that stops it and waits.
func churn(t testing.TB, base string, seed uint64) (stop func()) {
	t.Helper()
	raw := testutil.Connect(t, server.Addr())
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(seed, 1))
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			p := fmt.Sprintf("%s/n%d", base, r.IntN(5))
			if r.IntN(2) == 0 {
				p += fmt.Sprintf("/m%d", r.IntN(4))
			}
			var err error
			switch r.IntN(3) {
			case 0:
				_, err = raw.Create(p, []byte(fmt.Sprint(n)), 0, openACL)
			case 1:
				_, err = raw.Set(p, []byte(fmt.Sprint(n)), -1)
			default:
				err = raw.Delete(p, -1)
			}
			if err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNotEmpty) {
				t.Errorf("churn: %v", err)
				return
			}
		}
	}()
	return func() {
		close(done)
		testutil.Wait(t, &wg, "the churn to stop")
	}
}

// stateEvents waits until the recorder has heard CacheStale and then
// CacheCurrent, and returns the node events between the two.
func (r *recorder) staleThenCurrent(t testing.TB, what string) (stale Event, between []Event) {
	t.Helper()
	deadline := time.After(testutil.Timeout)
	seen := false
	for {
		r.mu.Lock()
		for ; r.next < len(r.events); r.next++ {
			e := r.events[r.next]
			switch {
			case e.Type == CacheStale && !seen:
				seen, stale = true, e
			case e.Type == CacheCurrent && seen:
				r.next++
				r.mu.Unlock()
				return stale, between
			case seen && e.Node.Path != "":
				between = append(between, e)
			}
		}
		r.mu.Unlock()
		select {
		case <-r.added:
		case <-deadline:
			t.Fatalf("%s: no CacheStale then CacheCurrent within %v (stale seen: %v)", what, testutil.Timeout, seen)
		}
	}
}

// The cache through the faults a client meets, each while another client
// changes the tree all along: the connection dropped (the cache goes
// stale, and is current again once it has read the tree again), a read's
// reply lost (a connection loss), the reply to the watch's own addWatch
// lost, a partition shorter than the session (changes made meanwhile are
// told between CacheStale and CacheCurrent) and the session's expiry. After
// each, once the tree is quiet, the cache holds what the server does.
func TestCacheFaults(t *testing.T) {
	testutil.CheckLeaks(t)
	base := basePath(t)
	raw := testutil.Connect(t, server.Addr())
	if _, err := raw.Create(base, nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	proxy := zktest.NewProxy(t, server.Addr())
	client := newClient(t, proxy.Addr(), framework.WithSessionTimeout(3*time.Second))
	rec := newRecorder()
	c := mustCache(t, func() (*Cache, error) { return New(client, base, WithListener(rec)) })
	waitEqual(t, c, raw, base, -1, false, "loaded")

	faults := []struct {
		name  string
		fault func(t *testing.T, states *testutil.StateRecorder)
	}{
		{"connections dropped", func(t *testing.T, _ *testutil.StateRecorder) { proxy.DropConnections() }},
		{"a read's reply lost", func(t *testing.T, _ *testutil.StateRecorder) {
			lost := proxy.LoseNextReply(zktest.OpGetData)
			testutil.Recv(t, lost, "a cache's read whose reply is lost")
		}},
		{"addWatch's reply lost", func(t *testing.T, _ *testutil.StateRecorder) {
			lost := proxy.LoseNextReply(zktest.OpAddWatch)
			proxy.DropConnections() // the watch is set again on the next connection
			testutil.Recv(t, lost, "the watch's addWatch whose reply is lost")
		}},
		{"partition", func(t *testing.T, states *testutil.StateRecorder) {
			proxy.BlackHole()
			states.WaitFor(testutil.Context(t), t, state.Suspended)
			if !c.Stale() {
				t.Error("the cache is not stale while its client is SUSPENDED")
			}
			proxy.Restore()
		}},
		{"session expired", func(t *testing.T, states *testutil.StateRecorder) {
			testutil.Must(t, proxy.ExpireSession(client.SessionID()))
			states.WaitFor(testutil.Context(t), t, state.Lost)
		}},
	}
	for i, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			states := testutil.NewStateRecorder()
			defer client.AddListener(states)()
			stop := churn(t, base, uint64(i))
			f.fault(t, states)
			rec.staleThenCurrent(t, f.name)
			stop()
			waitEqual(t, c, raw, base, -1, false, f.name)
		})
	}
}

// Changes made while the cache's client cannot hear (a partition shorter
// than the session) are told, once it hears again, between CacheStale and
// CacheCurrent: a node made, one changed, one deleted. Meanwhile the cache
// says it is stale and still holds what it last knew.
func TestCacheTellsWhatChangedMeanwhile(t *testing.T) {
	testutil.CheckLeaks(t)
	base := basePath(t)
	raw := testutil.Connect(t, server.Addr())
	makeNodes(t, raw, base, base+"/keep", base+"/change", base+"/delete")
	proxy := zktest.NewProxy(t, server.Addr())
	states := testutil.NewStateRecorder()
	client := newClient(t, proxy.Addr(), framework.WithSessionTimeout(3*time.Second), framework.WithListener(states))
	rec := newRecorder()
	c := mustCache(t, func() (*Cache, error) { return New(client, base, WithListener(rec)) })
	waitEqual(t, c, raw, base, -1, false, "loaded")
	rec.rest()

	proxy.BlackHole()
	states.WaitFor(testutil.Context(t), t, state.Suspended)
	if _, err := raw.Create(base+"/new", []byte("n"), 0, openACL); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Set(base+"/change", []byte("2"), -1); err != nil {
		t.Fatal(err)
	}
	if err := raw.Delete(base+"/delete", -1); err != nil {
		t.Fatal(err)
	}
	if !c.Stale() {
		t.Fatal("not stale while partitioned")
	}
	if n, ok := c.Get(base + "/delete"); !ok || string(n.Data) != base+"/delete" {
		t.Fatalf("while stale the cache holds %+v %v; want what it last knew", n, ok)
	}
	proxy.Restore()
	stale, between := rec.staleThenCurrent(t, "the partition")
	if !errors.Is(stale.Err, ErrLapsed) {
		t.Errorf("CacheStale's Err: %v; want ErrLapsed", stale.Err)
	}
	var told []string
	for _, e := range between {
		told = append(told, e.String())
	}
	slices.Sort(told)
	want := []string{"node-changed " + base + "/change", "node-created " + base + "/new", "node-deleted " + base + "/delete"}
	if !slices.Equal(told, want) {
		t.Fatalf("told between CacheStale and CacheCurrent: %q; want %q", told, want)
	}
	waitEqual(t, c, raw, base, -1, false, "after the partition")
}

// Close never waits for a listener: a listener that closes its cache
// returns, and so does a Close called while a listener blocks; the
// events not yet told are dropped. The client's Close stops a cache: it
// tells CacheStale with an error wrapping framework.ErrClosed, and
// AwaitCurrent returns it.
func TestCacheCloseAndTheClientsClose(t *testing.T) {
	testutil.CheckLeaks(t)
	base := basePath(t)
	raw := testutil.Connect(t, server.Addr())
	if _, err := raw.Create(base, nil, 0, openACL); err != nil {
		t.Fatal(err)
	}
	client := newClient(t, "")
	self := make(chan *Cache, 1)
	closed := make(chan error, 1)
	self <- mustCache(t, func() (*Cache, error) {
		return New(client, base, WithListener(ListenerFunc(func(e Event) {
			if e.Type == CacheInitialized {
				c := <-self
				closed <- c.Close()
			}
		})))
	})
	testutil.Must(t, testutil.Recv(t, closed, "a listener's Close of its cache"))

	block, blocked := make(chan struct{}), make(chan struct{}, 1)
	c := mustCache(t, func() (*Cache, error) {
		return New(client, base, WithListener(ListenerFunc(func(e Event) {
			blocked <- struct{}{}
			<-block
		})))
	})
	testutil.Recv(t, blocked, "the listener to block")
	testutil.Must(t, c.Close()) // does not wait for it
	close(block)

	rec := newRecorder()
	last := mustCache(t, func() (*Cache, error) { return New(client, base, WithListener(rec)) })
	rec.want(t, NodeCreated, base)
	rec.want(t, CacheInitialized, "")
	testutil.Must(t, client.Close())
	e := rec.want(t, CacheStale, "")
	if errors.Is(e.Err, ErrLapsed) { // the connection closed first
		e = rec.want(t, CacheStale, "")
	}
	if !errors.Is(e.Err, framework.ErrClosed) {
		t.Fatalf("CacheStale at the client's Close: %v", e.Err)
	}
	if err := last.AwaitCurrent(testutil.Context(t)); !errors.Is(err, framework.ErrClosed) {
		t.Fatalf("AwaitCurrent after the client's Close: %v", err)
	}
}

// A node that an event's read puts into the copy while the cache reads its
// tree is listed by that build all the same: its children, made before
// the watch stood, come with no event of their own. Replies reach the
// cache's client 50 ms late, so that the change of x, made as soon as the
// server shows the cache's watch, is read before the listing of the
// cache's path (which the first read of the build calls for) is applied.
func TestCacheBuildListsANodeAnEventPutIn(t *testing.T) {
	testutil.CheckLeaks(t)
	base := basePath(t)
	raw := testutil.Connect(t, server.Addr())
	makeNodes(t, raw, base, base+"/x", base+"/x/y")
	proxy := zktest.NewProxy(t, server.Addr())
	client := newClient(t, proxy.Addr())
	proxy.SetDelays(0, 50*time.Millisecond)
	c := mustCache(t, func() (*Cache, error) { return New(client, base) })
	testutil.Until(t, "the server to show the cache's watch", func() (bool, string) {
		out, err := server.FourLetterWord("wchp")
		testutil.Must(t, err)
		return testutil.Watching(out, client.SessionID(), base), out
	})
	if _, err := raw.Set(base+"/x", []byte("changed"), -1); err != nil {
		t.Fatal(err)
	}
	waitEqual(t, c, raw, base, -1, false, "the first load")
}

// A cache says it is stale from the moment its client is SUSPENDED: a
// state listener that asks at SUSPENDED hears so, each of twenty times the
// connection drops (the cache's own CacheStale comes from its watch's
// lapse, a moment later on another goroutine).
func TestCacheStaleAtSuspended(t *testing.T) {
	testutil.CheckLeaks(t)
	base := basePath(t)
	proxy := zktest.NewProxy(t, server.Addr())
	client := newClient(t, proxy.Addr())
	rec := newRecorder()
	c := mustCache(t, func() (*Cache, error) { return New(client, base, WithListener(rec)) })
	rec.want(t, CacheInitialized, "")
	asked := make(chan bool, 1)
	defer client.AddListener(state.ListenerFunc(func(s state.ConnectionState) {
		if s == state.Suspended {
			asked <- c.Stale()
		}
	}))()
	for i := range 20 {
		proxy.DropConnections()
		if !testutil.Recv(t, asked, "SUSPENDED") {
			t.Fatalf("drop %d: not stale at SUSPENDED", i)
		}
		rec.staleThenCurrent(t, fmt.Sprintf("drop %d", i))
	}
}

// A cache closed before its first load (its servers answering nothing)
// ends a wait on Initialized: AwaitCurrent says why. Such a wait used to
// last for ever.
func TestInitializedEndsWhenTheCacheStopsFirst(t *testing.T) {
	testutil.CheckLeaks(t)
	proxy := zktest.NewProxy(t, server.Addr())
	client := newClient(t, proxy.Addr())
	proxy.BlackHole()
	c, err := New(client, basePath(t))
	testutil.Must(t, err)
	testutil.Must(t, c.Close())
	testutil.Recv(t, c.Initialized(), "Initialized, the cache closed before its first load")
	if err := c.AwaitCurrent(testutil.Context(t)); !errors.Is(err, ErrClosed) {
		t.Fatalf("AwaitCurrent after Close: %v, want ErrClosed", err)
	}
}
