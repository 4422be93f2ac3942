package framework_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

func ExampleNew() {
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 3),
		framework.WithSessionTimeout(10*time.Second),
		framework.WithListener(state.ListenerFunc(func(s state.ConnectionState) {
			fmt.Println("state:", s)
		})))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.BlockUntilConnected(ctx); err != nil {
		fmt.Println(err)
		return
	}
	client.Close()
	// Output: state: CONNECTED
}

func ExampleClient_Create() {
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 3))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A protected, ephemeral-sequential node under container parents: what
	// every lock recipe creates.
	path, err := client.Create(ctx, "/example/create/job-", []byte("payload"),
		framework.WithMode(framework.EphemeralSequential),
		framework.WithProtection(),
		framework.CreatingParentContainersIfNeeded())
	if err != nil {
		fmt.Println(err)
		return
	}
	_, name := framework.SplitPath(path)
	fmt.Println(framework.IsProtectedName(name), strings.HasSuffix(name, "-job-0000000000"))

	_, _, err = client.GetData(ctx, "/example/create/missing")
	fmt.Println(errors.Is(err, zk.ErrNoNode))
	fmt.Println(err)

	if err := client.Delete(ctx, path, framework.Guaranteed()); err != nil {
		fmt.Println(err)
	}
	// Output:
	// true true
	// true
	// gocurator: get data /example/create/missing: zk: node does not exist
}

func ExampleWithNamespace() {
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewOneTime(100*time.Millisecond),
		framework.WithNamespace("example/ns"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	p, err := client.Create(ctx, "/config", []byte("v1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created", p, "(on the server: /example/ns/config)")
	if err := client.Delete(ctx, p); err != nil {
		fmt.Println(err)
	}
	// Output: created /config (on the server: /example/ns/config)
}

// Session returns the current session and a channel closed when it ends
// (LOST, or Close); SessionTimeout the timeout the server granted.
func ExampleClient_Session() {
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 3),
		framework.WithSessionTimeout(10*time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := client.BlockUntilConnected(ctx); err != nil {
		fmt.Println(err)
		return
	}
	id, ended := client.Session()
	fmt.Println("session:", id != 0, "timeout:", client.SessionTimeout())
	client.Close()
	select {
	case <-ended:
		fmt.Println("ended with Close")
	case <-ctx.Done():
		fmt.Println("not ended by Close:", ctx.Err())
	}
	// Output:
	// session: true timeout: 10s
	// ended with Close
}

// A persistent recursive watch: every change below a path, one event
// each, for as long as the watcher is open; the client sets the watch
// again after each reconnection (a reset: changes made meanwhile came with
// no event, read what you follow again).
func ExampleClient_NewPersistentWatcher() {
	client, err := framework.New(os.Getenv("ZK_SERVERS"), retry.NewExponentialBackoff(100*time.Millisecond, 3))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	events := make(chan framework.WatchEvent, 16)
	w, err := client.NewPersistentWatcher("/example/watched", true, func(e framework.WatchEvent) {
		select {
		case events <- e:
		default: // never block: the watcher's next events wait for this function
		}
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()
	if e := <-events; e.Reset {
		fmt.Println("the watch stands")
	}
	if _, err := client.Create(ctx, "/example/watched/a", nil, framework.CreatingParentsIfNeeded()); err != nil {
		fmt.Println(err)
		return
	}
	defer client.Delete(ctx, "/example/watched")
	defer client.Delete(ctx, "/example/watched/a")
	for _, want := range []string{"/example/watched", "/example/watched/a"} {
		e := <-events
		fmt.Println(e.Type, e.Path == want)
	}
	// Output:
	// the watch stands
	// EventNodeCreated true
	// EventNodeCreated true
}
