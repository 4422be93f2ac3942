package barriers_test

import (
	"fmt"
	"sync"

	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/recipes/barriers"
)

// connect is the examples' client of the ZooKeeper in ZK_SERVERS, with a
// context for their calls, and a function that ends both.
var connect = testclient.Connect

// Workers wait at a barrier that a coordinator removes once the day's data
// is in.
func ExampleDistributedBarrier() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	b, err := barriers.NewDistributedBarrier(client, "/examples/barriers/data-loaded")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := b.SetBarrier(ctx); err != nil { // the coordinator
		fmt.Println(err)
		return
	}
	passed := make(chan error)
	go func() { passed <- b.WaitOnBarrier(ctx) }() // a worker
	if err := b.RemoveBarrier(ctx); err != nil {   // the data is in
		fmt.Println(err)
		return
	}
	fmt.Println("worker passed:", <-passed)
	// Output:
	// worker passed: <nil>
}

// Three members (in as many processes, Go or Java) begin together, and end
// together.
func ExampleDistributedDoubleBarrier() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	const members = 3
	var wg sync.WaitGroup
	results := make(chan string, 2*members)
	for range members {
		member, err := barriers.NewDistributedDoubleBarrier(client, "/examples/barriers/nightly", members)
		if err != nil {
			fmt.Println(err)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := member.Enter(ctx); err != nil { // until all three have entered
				results <- err.Error()
				return
			}
			results <- "entered"
			// ... the member's share of the work ...
			if err := member.Leave(ctx); err != nil { // until all three have left
				results <- err.Error()
				return
			}
			results <- "left"
		}()
	}
	wg.Wait()
	close(results)
	count := map[string]int{}
	for r := range results {
		count[r]++
	}
	fmt.Println(count)
	// Output:
	// map[entered:3 left:3]
}
