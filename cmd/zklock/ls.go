package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/lockqueue"
)

// Bounds of ls's looks beyond PATH: how far below a PATH that is no lock
// it looks for locks, how many it lists, and how many top-level nodes it
// tries as a namespace holding PATH.
const (
	lsFindDepth   = 3
	lsFindMax     = 20
	lsMaxTopLevel = 64
)

// lsResult is what ls prints: the listing of PATH and, when PATH is not a
// lock but a parent of locks (recipe "parent"), the locks below it.
type lsResult struct {
	*lockqueue.Listing
	// Locks are the locks below Path, each with its queue, when Path is a
	// parent of locks.
	Locks []*lockqueue.Listing `json:"locks,omitempty"`
	// MoreLocks is true when ls stopped looking before it had seen
	// everything below Path: there may be more locks than Locks.
	MoreLocks bool `json:"more_locks,omitempty"`
}

// lsOptions are ls's own flags.
type lsOptions struct {
	lockqueue.Options
	watch bool // redraw at every change
}

// lsFlags returns ls's flag set, bound to o and g.
func lsFlags(g *globalOptions, o *lsOptions) *flag.FlagSet {
	fs := newFlagSet("ls", "zklock ls [--watch] [--recipe mutex|rw|semaphore] [--max-leases N] [global flags] PATH", g)
	fs.BoolVar(&o.watch, "watch", false, "redraw the queue at every change (ZooKeeper watches) until interrupted")
	fs.StringVar(&o.Recipe, "recipe", "", "read PATH as this `layout` (mutex, rw or semaphore) instead of detecting it")
	fs.IntVar(&o.MaxLeases, "max-leases", 0, "the semaphore's lease limit, to tell a lease being counted as held or waiting")
	return fs
}

// cmdLs parses ls's arguments, connects and lists, once or (--watch) at
// every change.
func cmdLs(ctx context.Context, g *globalOptions, args []string, s streams) error {
	var o lsOptions
	fs := lsFlags(g, &o)
	path, err := parseOnePath(fs, g, args, "PATH", "")
	if err == nil {
		err = checkLsOptions(&o.Options)
	}
	if err != nil {
		return parseFailure(fs, s, err)
	}
	client, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	if o.watch {
		return watchLs(ctx, client, path, o.Options, g.json, s.stdout)
	}
	r, err := list(ctx, client, path, o.Options)
	if err != nil {
		return err
	}
	return r.write(s.stdout, g.json, time.Now())
}

// list lists the lock at path. When there is none (no lock node at path,
// only foreign children or none), and no --recipe insists, it lists the
// locks below path instead, if there are any; failing that, without a
// namespace, it warns about a namespace that may be missing.
func list(ctx context.Context, client *framework.Client, path string, o lockqueue.Options) (*lsResult, error) {
	l, err := lockqueue.List(ctx, client, path, o)
	if err != nil {
		return nil, err
	}
	r := &lsResult{Listing: l}
	if l.HasLock() {
		return r, nil
	}
	if l.Exists && o.Recipe == "" {
		below, more, err := lockqueue.Find(ctx, client, path, lsFindDepth, lsFindMax)
		if err != nil {
			return nil, err
		}
		if len(below) > 0 {
			r.Listing = &lockqueue.Listing{Path: path, Exists: true, Recipe: lockqueue.RecipeParent, Children: l.Children}
			r.MoreLocks = more
			for _, p := range below {
				bl, err := lockqueue.List(ctx, client, p, lockqueue.Options{})
				if err == nil && bl.Recipe == lockqueue.RecipeSemaphore && o.MaxLeases > 0 {
					// --max-leases is for the semaphores among them.
					bl, err = lockqueue.List(ctx, client, p, lockqueue.Options{MaxLeases: o.MaxLeases})
				}
				if err != nil {
					return nil, err
				}
				r.Locks = append(r.Locks, bl)
			}
			return r, nil
		}
	}
	if client.Namespace() == "" {
		for _, p := range namespacesHolding(ctx, client, path) {
			l.Warnings = append(l.Warnings, lockqueue.Warning{
				Message: fmt.Sprintf("no lock at %s; %s has one: a --namespace may be missing (--namespace %s)", path, p, p[1:len(p)-len(path)]),
			})
		}
	}
	return r, nil
}

// namespacesHolding returns the paths /<ns>path that are locks, for the
// top-level nodes <ns> (at most lsMaxTopLevel of them, ZooKeeper's own
// /zookeeper aside): where path would be with a --namespace. It is advice:
// a node it cannot read is passed by.
func namespacesHolding(ctx context.Context, client *framework.Client, path string) []string {
	top, _, err := client.Children(ctx, "/")
	if err != nil {
		return nil
	}
	sort.Strings(top)
	var found []string
	tried := 0
	for _, ns := range top {
		if ns == "zookeeper" {
			continue
		}
		if tried++; tried > lsMaxTopLevel {
			break
		}
		p := "/" + ns + path
		if ok, err := lockqueue.IsLock(ctx, client, p); err == nil && ok {
			found = append(found, p)
		}
	}
	return found
}

// write prints r as text, with ages as of now, or as one JSON line.
func (r *lsResult) write(w io.Writer, asJSON bool, now time.Time) error {
	if asJSON {
		return r.writeJSON(w)
	}
	return r.writeText(w, now)
}

// writeText prints r: the listing, or for a parent of locks, each lock's.
func (r *lsResult) writeText(w io.Writer, now time.Time) error {
	if r.Recipe != lockqueue.RecipeParent {
		return r.Listing.WriteText(w, now)
	}
	if r.MoreLocks {
		fmt.Fprintf(w, "%s: not a lock, but a parent of locks; the first %d, looking %d levels down at most (there may be more: give a path further down):\n",
			r.Path, len(r.Locks), lsFindDepth)
	} else {
		fmt.Fprintf(w, "%s: not a lock, but a parent of %d locks (looking %d levels down at most):\n", r.Path, len(r.Locks), lsFindDepth)
	}
	for _, l := range r.Locks {
		fmt.Fprintln(w)
		if err := l.WriteText(w, now); err != nil {
			return err
		}
	}
	return nil
}

// writeJSON prints r as one JSON line: the listing's fields, and for a
// parent of locks, "locks" (each a listing) and "more_locks".
func (r *lsResult) writeJSON(w io.Writer) error {
	for _, l := range append([]*lockqueue.Listing{r.Listing}, r.Locks...) {
		if l.Participants == nil {
			l.Participants = []lockqueue.Participant{}
		}
	}
	return writeJSONLine(w, r)
}

// checkLsOptions checks ls's own flags, normalising --recipe.
func checkLsOptions(o *lockqueue.Options) error {
	switch o.Recipe {
	case "", lockqueue.RecipeMutex, lockqueue.RecipeSemaphore, lockqueue.RecipeReadWrite:
	case "rw":
		o.Recipe = lockqueue.RecipeReadWrite
	default:
		return usageErrorf("--recipe must be mutex, rw or semaphore, not %q", o.Recipe)
	}
	if o.MaxLeases < 0 {
		return usageErrorf("--max-leases must not be negative")
	}
	return nil
}
