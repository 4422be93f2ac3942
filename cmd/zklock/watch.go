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
// (path may not exist yet, and empty containers are reaped); a connection
// state change redraws too. The watches are ZooKeeper's, armed before each
// listing, so no change between a listing and the wait is missed. Only the
// first listing's failure ends the watch; later ones are shown until the
// next change. On a terminal each listing replaces the last; elsewhere they
// follow one another (--json: one line each).
func watchLs(ctx context.Context, client *framework.Client, path string, o lockqueue.Options, asJSON bool, w io.Writer) error {
	wctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	stateChanged := make(chan struct{}, 1)
	defer client.AddListener(state.ListenerFunc(func(state.ConnectionState) {
		select {
		case stateChanged <- struct{}{}:
		default:
		}
	}))()

	fired := make(chan string)
	armed := map[string]bool{} // paths with a watch outstanding
	arm := func(paths []string) error {
		for _, p := range paths {
			if armed[p] {
				continue
			}
			ch, err := watchNode(wctx, client, p)
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

	v := view{w: w, json: asJSON, terminal: isTerminal(w), path: path}
	var last *lockqueue.Listing
	for {
		err := arm(watchPaths(path, last))
		var r *lockqueue.Listing
		if err == nil {
			r, err = list(wctx, client, path, o)
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && last == nil:
			return err
		case err != nil:
			v.show(nil, err, client.State())
		default:
			last = r
			if slices.ContainsFunc(watchPaths(path, r), func(p string) bool { return !armed[p] }) {
				continue // watch what this listing found, then list again
			}
			if err := v.show(r, nil, client.State()); err != nil {
				return err
			}
		}
		for waiting := true; waiting; {
			select {
			case p := <-fired:
				delete(armed, p)
				waiting = false
			case <-stateChanged:
				waiting = client.State() == v.state // the one drawn: nothing to redraw
			case <-ctx.Done():
				return nil
			}
		}
		for more := true; more; { // one listing for changes that come together
			select {
			case p := <-fired:
				delete(armed, p)
			default:
				more = false
			}
		}
	}
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
	state    state.ConnectionState // the connection state last shown
}

// show draws r, or err when listing failed (not in JSON: its lines are
// listings), after a line that says when and in which connection state: on
// a terminal in place of the last drawing, elsewhere after it. Only a
// listing that cannot be written is an error.
func (v *view) show(r *lockqueue.Listing, err error, st state.ConnectionState) error {
	v.state = st
	switch {
	case v.json && err != nil:
		return nil
	case v.json:
		return writeJSONLine(v.w, r)
	}
	now := time.Now()
	var b bytes.Buffer
	if v.terminal {
		b.WriteString(clearScreen)
	} else if v.drawn {
		b.WriteString("\n")
	}
	v.drawn = true
	fmt.Fprintf(&b, "%s  zklock ls --watch %s  (connection %v; Ctrl-C to stop)\n\n", now.Format("15:04:05"), v.path, st)
	if err != nil {
		fmt.Fprintf(&b, "cannot list %s: %v\n(listing again at the next change of the tree or the connection)\n", v.path, err)
		v.w.Write(b.Bytes())
		return nil
	}
	if err := r.WriteText(&b, now); err != nil {
		return err
	}
	_, err = v.w.Write(b.Bytes())
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
