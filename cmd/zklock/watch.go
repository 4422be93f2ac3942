package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/state"
)

// clearScreen moves a terminal's cursor home and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// watchLs prints the queue at path as ls does, and again at every change,
// until ctx ends (a signal: then it returns nil). A change is a child
// coming or going at path, at its semaphore's locks or leases, or at a lock
// listed below a parent of locks, or one of these nodes appearing or going
// (path may not exist yet, and empty containers are reaped). The watches
// are ZooKeeper's, armed before each listing, so no change between a
// listing and the wait is missed. Each drawing begins with the
// connection's state (view.show). While the connection is down nothing is
// listed: the last listing stays, marked stale, and the list is made again
// when the connection is back (a listing the connection's loss cuts short
// is dropped). Only the first listing's failure ends the watch; later ones
// are shown until the next change. On a terminal each drawing replaces the
// last, and the screen is redrawn every second (AGE, and how long the
// connection has been down, tick); elsewhere drawings follow one another,
// one at each listing or change of the connection (--json: one line per
// listing).
func watchLs(ctx context.Context, client *framework.Client, path string, o lockqueue.Options, asJSON bool, w io.Writer) error {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	conn := connection{st: client.State()}
	stateChanged := make(chan struct{}, 1)
	defer client.AddListener(state.ListenerFunc(func(s state.ConnectionState) {
		conn.set(s, time.Now())
		select {
		case stateChanged <- struct{}{}:
		default:
		}
	}))()

	fired := make(chan string)
	armed := map[string]bool{} // paths with a watch outstanding
	arm := func(ctx context.Context, paths []string) error {
		for _, p := range paths {
			if armed[p] {
				continue
			}
			ch, err := watchNode(ctx, client, p)
			if err != nil {
				return err
			}
			armed[p] = true
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-ch:
					select {
					case fired <- p:
					case <-wctx.Done():
					}
				case <-wctx.Done():
				}
			}()
		}
		return nil
	}
	// listConnected arms the watches and lists, while the connection lasts:
	// cut reports that it was down, or went down before the listing was
	// done (the client's trust ends at SUSPENDED and LOST under the
	// standard error policy zklock ls uses).
	listConnected := func(last *lockqueue.Listing) (r *lockqueue.Listing, cut bool, err error) {
		trust, _ := client.Trust()
		if !client.State().IsConnected() {
			return nil, true, nil
		}
		lctx, stop := context.WithCancel(wctx)
		defer stop()
		defer context.AfterFunc(trust, stop)()
		if err = arm(lctx, watchPaths(path, last)); err == nil {
			r, err = list(lctx, client, path, o)
		}
		if err != nil && lctx.Err() != nil && wctx.Err() == nil {
			return nil, true, nil
		}
		return r, false, err
	}

	v := view{w: w, json: asJSON, terminal: isTerminal(w), path: path}
	var last *lockqueue.Listing
	var listErr error      // of the last listing, if it failed
	var listedAt time.Time // of last
	stale := false         // a listing was cut short by the connection's loss since last
	bannerNow := func() banner {
		st, since := conn.get()
		_, unreachable := client.Unreachable()
		return banner{state: st, since: since, unreachable: unreachable, stale: stale || !st.IsConnected(), listedAt: listedAt}
	}
	tick := time.NewTicker(time.Second) // a terminal's clocks; elsewhere a change of the banner
	defer tick.Stop()
	for relist := true; ; {
		fresh := false
		if relist {
			r, cut, err := listConnected(last)
			switch {
			case ctx.Err() != nil:
				return nil
			case cut:
				stale = true
			case err != nil && last == nil:
				return err
			case err != nil:
				listErr = err
			default:
				last, listErr, listedAt, stale, fresh = r, nil, time.Now(), false, true
				if slices.ContainsFunc(watchPaths(path, r), func(p string) bool { return !armed[p] }) {
					continue // watch what this listing found, then list again
				}
			}
		}
		if err := v.show(last, listErr, fresh, bannerNow()); err != nil {
			return err
		}
		relist = false
	wait:
		for {
			select {
			case p := <-fired:
				delete(armed, p)
				relist = true
				break wait
			case <-stateChanged:
				relist = client.State().IsConnected()
				break wait
			case <-tick.C:
				if v.terminal || bannerNow().key() != v.key {
					break wait
				}
			case <-ctx.Done():
				return nil
			}
		}
		for more := relist; more; { // one listing for changes that come together
			select {
			case p := <-fired:
				delete(armed, p)
			default:
				more = false
			}
		}
	}
}

// connection is the client's connection state as the watch last heard of
// it, and since when: the listener writes it, the watch reads it.
type connection struct {
	mu    sync.Mutex
	st    state.ConnectionState
	since time.Time
}

func (c *connection) set(st state.ConnectionState, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st, c.since = st, at
}

func (c *connection) get() (state.ConnectionState, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st, c.since
}

// watchNode sets a one-shot watch on p's children, or if p does not exist,
// on its creation.
func watchNode(ctx context.Context, client *framework.Client, p string) (<-chan zk.Event, error) {
	for {
		_, _, ch, err := client.ChildrenW(ctx, p)
		if !errors.Is(err, zk.ErrNoNode) {
			return ch, err
		}
		ok, _, ch, err := client.ExistsW(ctx, p)
		if err != nil || !ok {
			return ch, err
		}
		// Created in between: watch its children instead.
	}
}

// watchPaths returns the nodes whose children --watch watches, given the
// last listing r of path (nil before the first): path and its semaphore's
// locks and leases, whatever path is now, and each lock r lists below a
// parent of locks (with its locks and leases, for a semaphore).
func watchPaths(path string, r *lockqueue.Listing) []string {
	semaphore := func(p string) []string {
		return []string{framework.JoinPath(p, locktree.SemaphoreLocks), framework.JoinPath(p, locktree.SemaphoreLeases)}
	}
	paths := append([]string{path}, semaphore(path)...)
	if r != nil {
		for _, l := range r.Locks {
			paths = append(paths, l.Path)
			if l.Recipe == lockqueue.RecipeSemaphore {
				paths = append(paths, semaphore(l.Path)...)
			}
		}
	}
	return paths
}

// view draws the listings of ls --watch.
type view struct {
	w        io.Writer
	json     bool // one JSON line per listing
	terminal bool // redraw the screen; else append
	path     string
	drawn    bool
	key      string // what the last banner said, times aside (banner.key)
}

// banner is what the line under the title says of the connection, and
// whether the listing below it is stale.
type banner struct {
	state       state.ConnectionState
	since       time.Time // when the client entered state (zero: the first connection)
	unreachable error     // every server has refused (framework.Client.Unreachable), or nil
	stale       bool      // the listing is older than the connection's loss
	listedAt    time.Time // when the listing shown was made
}

// text returns the banner's lines at now: "connection CONNECTED", or
// "connection SUSPENDED since 15:04:05 (5s): no server answered for 5s:
// host:port (connection refused)", then, for a stale listing, a line that
// says so.
func (b banner) text(now time.Time) string {
	s := "connection " + b.state.String()
	if !b.state.IsConnected() && !b.since.IsZero() {
		s += fmt.Sprintf(" since %s (%v)", b.since.Format("15:04:05"), now.Sub(b.since).Round(time.Second))
	}
	var nse *framework.NoServerError
	if errors.As(b.unreachable, &nse) {
		shown := *nse
		shown.Waited = shown.Waited.Round(time.Second) // as the state's time is
		s += ": " + errs.Strip(shown.Error())
	}
	s += "\n"
	if b.stale && !b.listedAt.IsZero() {
		s += fmt.Sprintf("STALE: listed at %s, before the connection went down; listed again when it is back\n", b.listedAt.Format("15:04:05"))
	}
	return s
}

// key is what the banner says, its times aside: what a drawing that is
// not on a terminal is made again for.
func (b banner) key() string {
	key := b.state.String() + fmt.Sprint(b.stale)
	var nse *framework.NoServerError
	if errors.As(b.unreachable, &nse) {
		for _, s := range nse.Servers {
			key += "|" + s.String()
		}
	}
	return key
}

// show draws the listing r (fresh: just made), or err when listing
// failed, after a title line that says when, and the banner: on a
// terminal in place of the last drawing, elsewhere after it. In JSON
// only a fresh listing is drawn (its lines are listings). Only a listing
// that cannot be written is an error.
func (v *view) show(r *lockqueue.Listing, err error, fresh bool, b banner) error {
	key := b.key()
	if v.json {
		v.key = key
		if !fresh {
			return nil
		}
		return writeJSONLine(v.w, r)
	}
	v.key = key
	now := time.Now()
	var buf bytes.Buffer
	if v.terminal {
		buf.WriteString(clearScreen)
	} else if v.drawn {
		buf.WriteString("\n")
	}
	v.drawn = true
	fmt.Fprintf(&buf, "%s  zklock ls --watch %s  (Ctrl-C to stop)\n", now.Format("15:04:05"), v.path)
	buf.WriteString(b.text(now))
	buf.WriteString("\n")
	switch {
	case err != nil:
		fmt.Fprintf(&buf, "cannot list %s: %v\n(listing again at the next change of the tree or the connection)\n", v.path, err)
	case r == nil:
		fmt.Fprintf(&buf, "(not listed yet: the connection went down first)\n")
	default:
		if err := r.WriteText(&buf, now); err != nil {
			return err
		}
	}
	_, err = v.w.Write(buf.Bytes())
	return err
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
