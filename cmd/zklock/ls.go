package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/lockqueue"
)

// lsMaxTopLevel bounds how many top-level nodes ls tries as a namespace
// holding a PATH that is no lock.
const lsMaxTopLevel = 64

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
	path, err := parseOnePath(fs, g, args, "PATH", "", true)
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
	l, err := list(ctx, client, path, o.Options)
	if err != nil {
		return err
	}
	if g.json {
		return writeJSONLine(s.stdout, l)
	}
	return l.WriteText(s.stdout, time.Now())
}

// list lists the lock at path. When there is none (no lock node at path,
// only foreign children or none), and no --recipe insists, it lists the
// locks below path instead, if there are any (lockqueue.ListParent);
// failing that, without a namespace, it warns about a namespace that may
// be missing.
func list(ctx context.Context, client *framework.Client, path string, o lockqueue.Options) (*lockqueue.Listing, error) {
	l, err := lockqueue.List(ctx, client, path, o)
	if err != nil || l.HasLock() {
		return l, err
	}
	if l.Exists && o.Recipe == "" {
		parent, err := lockqueue.ListParent(ctx, client, l, o.MaxLeases)
		if err != nil || parent != nil {
			return parent, err
		}
	}
	if client.Namespace() == "" && path != "/" {
		for _, p := range namespacesHolding(ctx, client, path) {
			l.Warnings = append(l.Warnings, lockqueue.Warning{
				Message: fmt.Sprintf("no lock at %s; %s has one: a --namespace may be missing (--namespace %s)", path, p, p[1:len(p)-len(path)]),
			})
		}
	}
	return l, nil
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
		if framework.IsReserved("/" + ns) {
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
