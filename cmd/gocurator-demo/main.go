// Command gocurator-demo shows gocurator's main job: Go workers and a Java
// Curator 5.4 worker, each with its own ZooKeeper session, taking one
// Curator-compatible lock in turn, and the lock's queue as `zklock ls`
// shows it while they wait.
//
// Usage:
//
//	gocurator-demo [-servers host:port,...] [-workers 3] [-java=true] [-rounds 2] [-path /gocurator-demo/lock] [-hold 300ms]
//
// Without -servers (or ZK_SERVERS in the environment) it starts a
// throwaway ZooKeeper on a free loopback port and removes it afterwards.
// The Java worker is a JVM running Curator's InterProcessMutex
// (internal/curatorpeer); it needs Java and Debian's Curator jars, which
// `make demo` installs.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/curatorpeer"
	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/retry"
)

func main() {
	var c config
	flag.StringVar(&c.servers, "servers", os.Getenv("ZK_SERVERS"), "ZooKeeper connect string; empty starts a throwaway server")
	flag.IntVar(&c.workers, "workers", 3, "Go workers, each with its own session")
	flag.BoolVar(&c.java, "java", true, "add a Java Curator worker (needs Java and Debian's libcurator-recipes-java)")
	flag.IntVar(&c.rounds, "rounds", 2, "acquisitions per worker")
	flag.StringVar(&c.path, "path", "/gocurator-demo/lock", "lock path")
	flag.DurationVar(&c.hold, "hold", 300*time.Millisecond, "how long each worker holds the lock")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "gocurator-demo:", err)
		os.Exit(1)
	}
}

// config is the demo's flags.
type config struct {
	servers string
	workers int
	java    bool
	rounds  int
	path    string
	hold    time.Duration
}

// indent lines up continuation lines under a say line's text.
const indent = "              "

// demo is one run: its output and its workers' errors.
type demo struct {
	config
	observer *framework.Client   // lists the queue; takes no lock
	clients  []*framework.Client // the Go workers'
	printMu  sync.Mutex
	wg       sync.WaitGroup
	errs     chan error
}

// say prints a line with the time.
func (d *demo) say(format string, args ...any) {
	d.printMu.Lock()
	defer d.printMu.Unlock()
	fmt.Printf("%s  "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func run(ctx context.Context, c config) error {
	if c.workers < 0 || c.rounds < 1 || c.workers == 0 && !c.java {
		return fmt.Errorf("-rounds must be at least 1, and there must be a worker (-workers or -java)")
	}
	if c.java {
		// Find Java and compile the peer first: a missing JDK is the
		// likeliest failure, and its error says what to install.
		if err := curatorpeer.Prepare(ctx); err != nil {
			return fmt.Errorf("the Java worker: %w", err)
		}
	}
	if c.servers == "" {
		fmt.Println("starting a throwaway ZooKeeper (Debian's zookeeper package) ...")
		srv, err := zktest.StartServer()
		if err != nil {
			return err
		}
		defer srv.Close()
		c.servers = srv.Addr()
	}
	d := &demo{config: c, errs: make(chan error, c.workers+1)}
	var err error
	if d.observer, err = connect(ctx, c.servers); err != nil {
		return err
	}
	defer d.observer.Close()
	defer func() {
		for _, c := range d.clients {
			c.Close()
		}
	}()

	// Set every worker up first, so that they all start queueing at once.
	var rounds []func() error // a worker's round: by index, the worker of names[i]
	var names, sessions []string
	if c.java {
		fmt.Println("starting a Java Curator worker (a JVM running Curator 5.4's InterProcessMutex) ...")
		peer, err := curatorpeer.Start(ctx, "java-worker", curatorpeer.Options{})
		if err != nil {
			return fmt.Errorf("the Java worker: %w", err)
		}
		defer func() {
			if err := peer.Close(); err != nil {
				fmt.Fprintln(os.Stderr, "gocurator-demo:", err)
			}
		}()
		round, session, err := d.javaWorker(ctx, peer, "java-worker")
		if err != nil {
			return err
		}
		rounds, names = append(rounds, round), append(names, "java-worker")
		sessions = append(sessions, fmt.Sprintf("%-12s Java Curator 5.4  session %s", "java-worker", session))
	}
	for w := 1; w <= c.workers; w++ {
		name := fmt.Sprintf("go-worker-%d", w)
		round, session, err := d.goWorker(ctx, name)
		if err != nil {
			return err
		}
		rounds, names = append(rounds, round), append(names, name)
		sessions = append(sessions, fmt.Sprintf("%-12s gocurator         session %s", name, session))
	}
	fmt.Printf("ZooKeeper at %s; %d workers, each with its own session, take %s in turn, %d rounds:\n  %s\n\n",
		c.servers, len(rounds), c.path, c.rounds, strings.Join(sessions, "\n  "))

	done := make(chan struct{})
	queueShown := make(chan struct{})
	go func() {
		defer close(queueShown)
		d.showQueue(ctx, len(rounds), done)
	}()
	for i, round := range rounds {
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			for range c.rounds {
				if err := round(); err != nil {
					d.errs <- fmt.Errorf("%s: %w", names[i], err)
					return
				}
			}
		}()
	}
	d.wg.Wait()
	close(done)
	<-queueShown
	if ctx.Err() != nil {
		return errors.New("interrupted; every worker has let go")
	}
	close(d.errs)
	for err := range d.errs {
		return err
	}
	left, _, err := d.observer.Children(ctx, c.path)
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return err
	}
	if len(left) != 0 {
		return fmt.Errorf("lock nodes left behind: %v", left)
	}
	fmt.Println("\ndone: each worker, Go or Java, held the lock alone, in queue order; no lock node is left behind.")
	return nil
}

// connect makes a client with its own session and waits for the session.
func connect(ctx context.Context, servers string) (*framework.Client, error) {
	client, err := framework.New(servers, retry.NewExponentialBackoff(100*time.Millisecond, 5))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.BlockUntilConnected(cctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("connecting to %s: %w", servers, err)
	}
	return client, nil
}

// work holds the lock for the hold time: the worker's "work".
func (d *demo) work(ctx context.Context, name string) error {
	select {
	case <-time.After(d.hold):
	case <-ctx.Done():
		return ctx.Err()
	}
	d.say("%-12s releases", name)
	return nil
}

// goWorker connects a Go worker and returns its round (take the lock, work,
// release), and its session id.
func (d *demo) goWorker(ctx context.Context, name string) (func() error, string, error) {
	client, err := connect(ctx, d.servers)
	if err != nil {
		return nil, "", err
	}
	d.clients = append(d.clients, client)
	mu, err := recipes.NewInterProcessMutex(client, d.path)
	if err != nil {
		return nil, "", err
	}
	h := mu.NewHandle()
	return func() error {
		return recipes.WithLock(ctx, h, func(ctx context.Context) error {
			token, err := h.FencingToken(ctx) // no token, no work: the lock is not to be trusted
			if err != nil {
				return err
			}
			_, node := framework.SplitPath(h.LockPath())
			d.say("%-12s holds the lock  token %d  node %s", name, token, node)
			return d.work(ctx, name)
		})
	}, fmt.Sprintf("0x%x", client.SessionID()), nil
}

// javaWorker opens a Curator client and an InterProcessMutex in peer and
// returns the Java worker's round, and its session id.
// Curator does not report the fencing token, so the worker reads it, and
// its node, from the queue.
func (d *demo) javaWorker(ctx context.Context, peer *curatorpeer.Peer, name string) (func() error, string, error) {
	sid, err := peer.Client(ctx, "jc", d.servers)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	if _, err := peer.Call(ctx, "-", "mutex", "m", "jc", d.path); err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	session := fmt.Sprintf("0x%x", sid)
	return func() error {
		reply, err := peer.Call(ctx, "w", "acquire", "m") // Curator's acquire() on the peer's thread "w"
		if err != nil {
			return err
		}
		if ok, err := curatorpeer.Acquired(reply); err != nil || !ok {
			return fmt.Errorf("acquire: %q, %v", reply, err)
		}
		l, err := lockqueue.List(ctx, d.observer, d.path, lockqueue.Options{})
		if err != nil {
			return err
		}
		if len(l.Participants) == 0 || l.Participants[0].Session != session {
			return fmt.Errorf("the Java worker says it holds the lock, but the queue's head is not its node: %+v", l.Participants)
		}
		head := l.Participants[0]
		d.say("%-12s holds the lock  token %d  node %s", name, head.Token, head.Node)
		if err := d.work(ctx, name); err != nil {
			return err
		}
		_, err = peer.Call(ctx, "w", "release", "m")
		return err
	}, session, nil
}

// showQueue waits, with a children watch, until n workers are queued on the
// lock, and prints the queue as `zklock ls` does. It gives up when done is
// closed (the workers have finished) first.
func (d *demo) showQueue(ctx context.Context, n int, done <-chan struct{}) {
	for {
		names, _, changed, err := d.observer.ChildrenW(ctx, d.path)
		if errors.Is(err, zk.ErrNoNode) { // nobody has queued yet: wait for the container
			var exists bool
			exists, _, changed, err = d.observer.ExistsW(ctx, d.path)
			if exists {
				continue
			}
		}
		if err != nil {
			d.say("cannot watch %s: %v", d.path, err)
			return
		}
		if len(names) >= n {
			break
		}
		select {
		case <-changed:
		case <-done:
			return
		case <-ctx.Done():
			return
		}
	}
	l, err := lockqueue.List(ctx, d.observer, d.path, lockqueue.Options{})
	if err != nil {
		d.say("cannot list %s: %v", d.path, err)
		return
	}
	var b bytes.Buffer
	if err := l.WriteText(&b, time.Now()); err != nil {
		return
	}
	text := strings.ReplaceAll(strings.TrimRight(b.String(), "\n"), "\n", "\n"+indent)
	d.say("all %d workers queued; the queue as `zklock ls %s` shows it:\n%s%s", n, d.path, indent, text)
}
