package cache_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes/cache"
	"github.com/gocurator/curator/retry"
)

// connect returns a connected client of the ZooKeeper in ZK_SERVERS
// ("zk1:2181,zk2:2181" in real life), a context for the example's calls, and
// a function that ends both.
func connect() (*framework.Client, context.Context, func(), error) {
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 5))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	done := func() {
		cancel()
		client.Close()
	}
	if err := client.BlockUntilConnected(ctx); err != nil {
		done()
		return nil, nil, nil, err
	}
	return client, ctx, done, nil
}

// A cache of a service's settings: the first load, then a change told to a
// listener with what the node held before.
func ExampleNew() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	if _, err := client.Create(ctx, "/examples/cache/rate", []byte("10"), framework.CreatingParentsIfNeeded()); err != nil {
		fmt.Println(err)
		return
	}
	defer client.Delete(ctx, "/examples/cache")
	defer client.Delete(ctx, "/examples/cache/rate")

	changed := make(chan cache.Event, 1)
	c, err := cache.New(client, "/examples/cache", cache.WithListener(cache.ListenerFunc(func(e cache.Event) {
		if e.Type == cache.NodeChanged {
			select {
			case changed <- e:
			default: // a listener never blocks: it would hold the cache's others up
			}
		}
	})))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.AwaitCurrent(ctx); err != nil { // the first load
		fmt.Println(err)
		return
	}
	n, _ := c.Get("/examples/cache/rate")
	fmt.Printf("%s = %s (%d nodes)\n", n.Path, n.Data, c.Len())

	if _, err := client.SetData(ctx, "/examples/cache/rate", []byte("12"), -1); err != nil {
		fmt.Println(err)
		return
	}
	e := <-changed
	fmt.Printf("%s: %s → %s\n", e.Node.Path, e.Old.Data, e.Node.Data)
	// Output:
	// /examples/cache/rate = 10 (2 nodes)
	// /examples/cache/rate: 10 → 12
}

// A PathChildrenCache of a group's members: the children only, as they
// come and go.
func ExampleNewPathChildrenCache() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()
	if _, err := client.Create(ctx, "/examples/members/a", nil, framework.CreatingParentsIfNeeded()); err != nil {
		fmt.Println(err)
		return
	}
	defer client.Delete(ctx, "/examples/members")
	defer client.Delete(ctx, "/examples/members/a")
	defer client.Delete(ctx, "/examples/members/b")

	c, err := cache.NewPathChildrenCache(client, "/examples/members")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	joined := make(chan string, 8)
	c.Listen(cache.ListenerFunc(func(e cache.Event) {
		if e.Type == cache.NodeCreated {
			select {
			case joined <- e.Node.Path:
			default:
			}
		}
	}))
	if err := c.AwaitCurrent(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(c.Children("/examples/members"))
	if _, err := client.Create(ctx, "/examples/members/b", nil, framework.WithMode(framework.Ephemeral)); err != nil {
		fmt.Println(err)
		return
	}
	for p := range joined {
		if p == "/examples/members/b" {
			break
		}
	}
	fmt.Println(c.Children("/examples/members"))
	// Output:
	// [a]
	// [a b]
}
