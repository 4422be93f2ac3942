// Command gocurator-demo shows gocurator's main job: several clients, each
// with its own ZooKeeper session, taking one Curator-compatible lock in
// turn, and what the lock's tree looks like while they queue.
//
// Usage:
//
//	gocurator-demo [-servers host:port,...] [-workers 3] [-rounds 2] [-path /gocurator-demo/lock]
//
// Without -servers (or ZK_SERVERS in the environment) it starts a
// throwaway ZooKeeper on a free loopback port and removes it afterwards.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

func main() {
	servers := flag.String("servers", os.Getenv("ZK_SERVERS"), "ZooKeeper connect string; empty starts a throwaway server")
	workers := flag.Int("workers", 3, "Go workers, each with its own session")
	rounds := flag.Int("rounds", 2, "acquisitions per worker")
	path := flag.String("path", "/gocurator-demo/lock", "lock path")
	hold := flag.Duration("hold", 300*time.Millisecond, "how long each worker holds the lock")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *servers, *workers, *rounds, *path, *hold); err != nil {
		fmt.Fprintln(os.Stderr, "gocurator-demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, servers string, workers, rounds int, path string, hold time.Duration) error {
	if workers < 1 || rounds < 1 {
		return fmt.Errorf("-workers and -rounds must be at least 1")
	}
	if servers == "" {
		fmt.Println("starting a throwaway ZooKeeper (Debian's zookeeper package) ...")
		srv, err := zktest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Close()
		servers = srv.Addr()
	}
	fmt.Printf("ZooKeeper at %s; %d workers take %s in turn, %d times each\n\n", servers, workers, path, rounds)

	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var print sync.Mutex
	say := func(format string, args ...any) {
		print.Lock()
		defer print.Unlock()
		fmt.Printf("%s  "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
	var first *recipes.InterProcessMutex
	for w := 1; w <= workers; w++ {
		client, err := framework.New(servers, retry.NewExponentialBackoff(100*time.Millisecond, 5))
		if err != nil {
			return err
		}
		defer client.Close()
		mu, err := recipes.NewInterProcessMutex(client, path)
		if err != nil {
			return err
		}
		if first == nil {
			first = mu
		}
		name := fmt.Sprintf("go-worker-%d", w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := mu.NewHandle()
			for r := 0; r < rounds; r++ {
				err := recipes.WithLock(ctx, h, func(ctx context.Context) error {
					_, node := framework.SplitPath(h.LockPath())
					say("%-12s holds the lock  token %d  node %s", name, h.FencingToken(), node)
					select {
					case <-time.After(hold): // the "work"
					case <-ctx.Done():
						return ctx.Err()
					}
					say("%-12s releases", name)
					return nil
				})
				if err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
					return
				}
			}
		}()
	}
	go func() {
		time.Sleep(hold / 2)
		nodes, err := first.ParticipantNodes(ctx)
		if err == nil {
			var names []string
			for _, n := range nodes {
				_, name := framework.SplitPath(n)
				names = append(names, name)
			}
			say("queue as every participant sees it (holder first):\n              %s", strings.Join(names, "\n              "))
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	left, err := first.ParticipantNodes(ctx)
	if err != nil {
		return err
	}
	if len(left) != 0 {
		return fmt.Errorf("lock nodes left behind: %v", left)
	}
	fmt.Println("\ndone: each worker held the lock alone, in queue order; no lock node is left behind.")
	return nil
}
