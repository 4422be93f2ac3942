package nodes_test

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/testclient"
	"github.com/gocurator/curator/recipes/nodes"
)

// connect is the examples' client of the ZooKeeper in ZK_SERVERS, with a
// context for their calls, and a function that ends both.
var connect = testclient.Connect

// A service registers itself with an ephemeral node that the library keeps
// in place: made again, with its data, if it is deleted or its session
// expires.
func ExamplePersistentNode() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	node, err := nodes.NewPersistentNode(client, framework.Ephemeral, "/examples/services/billing-1", []byte("10.0.0.7:8080"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := node.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close() // deletes the node
	if err := node.WaitForInitialCreate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("registered at", node.ActualPath())

	// Someone deletes it: it comes back.
	back := make(chan string, 1)
	node.AddListener(func(path string) { back <- path })
	if err := client.Delete(ctx, node.ActualPath()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("made again at", <-back)
	data, _, err := client.GetData(ctx, node.ActualPath())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("with", string(data))
	// Output:
	// registered at /examples/services/billing-1
	// made again at /examples/services/billing-1
	// with 10.0.0.7:8080
}

// A TTL node stays while this process runs, and goes by itself a TTL after
// it stops (its servers must allow TTL nodes: extendedTypesEnabled).
func ExamplePersistentTtlNode() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	node, err := nodes.NewPersistentTtlNode(client, "/examples/jobs/report-42", time.Minute, []byte("running"))
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := node.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer node.Close() // leaves the node to its TTL
	if err := node.WaitForInitialCreate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("kept alive by touching", node.ChildPath())
	// Output:
	// kept alive by touching /examples/jobs/report-42/touch
}

// Two workers join a group (in real life, two processes): each keeps an
// ephemeral node named after its id, holding its data, and sees the group
// as a map of id to data.
func ExampleGroupMember() {
	client, ctx, done, err := connect()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer done()

	join := func(id, data string) (*nodes.GroupMember, error) {
		m, err := nodes.NewGroupMember(client, "/examples/workers", id, []byte(data))
		if err != nil {
			return nil, err
		}
		return m, m.Start()
	}
	first, err := join("worker-1", "10.0.0.7:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Close() // leaves the group: deletes its node
	// Its data changes: written to its node once it is made.
	if err := first.SetThisData(ctx, []byte("10.0.0.7:8080 draining")); err != nil {
		fmt.Println(err)
		return
	}

	second, err := join("worker-2", "10.0.0.8:8080")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close()
	if err := second.AwaitCurrent(ctx); err != nil { // its first look at the group
		fmt.Println(err)
		return
	}
	group := second.CurrentMembers()
	ids := slices.Sorted(maps.Keys(group))
	for _, id := range ids {
		fmt.Printf("%s: %s\n", id, group[id])
	}
	// Output:
	// worker-1: 10.0.0.7:8080 draining
	// worker-2: 10.0.0.8:8080
}
