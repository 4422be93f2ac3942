package atomic_test

import (
	"fmt"
	"time"

	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/recipes/atomic"
	"github.com/gocurator/curator/retry"
)

// connect is the examples' client of the ZooKeeper in ZK_SERVERS, with a
// context for their calls, and a function that ends both.
var connect = testclient.Connect

// A counter that Go and Java processes share: optimistic tries first, then
// under a lock; always look at Succeeded.
func ExampleDistributedAtomicLong() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	counter, err := atomic.NewDistributedAtomicLong(client, "/examples/counters/orders",
		retry.NewNTimes(10, 10*time.Millisecond),
		atomic.WithPromotedToLock(atomic.PromotedToLock{Path: "/examples/counters/orders-lock", Timeout: 5 * time.Second}))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := counter.ForceSet(ctx, 41); err != nil {
		fmt.Println(err)
		return
	}
	v, err := counter.Increment(ctx)
	switch {
	case err != nil:
		fmt.Println(err) // it may have been applied
	case !v.Succeeded:
		fmt.Println("busy: not incremented") // the retry policies gave up
	default:
		fmt.Println(v.PreValue, "->", v.PostValue)
	}
	// Output:
	// 41 -> 42
}

// Bytes set atomically, and a compare-and-set.
func ExampleDistributedAtomicValue() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	config, err := atomic.NewDistributedAtomicValue(client, "/examples/config/mode", retry.NewNTimes(3, 0))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := config.ForceSet(ctx, []byte("blue")); err != nil {
		fmt.Println(err)
		return
	}
	v, err := config.CompareAndSet(ctx, []byte("blue"), []byte("green"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s -> %s: %v\n", v.PreValue, v.PostValue, v.Succeeded)
	v, err = config.CompareAndSet(ctx, []byte("blue"), []byte("red"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s is not blue: %v\n", v.PreValue, v.Succeeded)
	// Output:
	// blue -> green: true
	// green is not blue: false
}
