package main

import (
	"context"
	"time"

	"github.com/gocurator/curator/internal/lockview"
)

// cmdLs parses ls's arguments, connects and lists.
func cmdLs(ctx context.Context, g *globalOptions, args []string, s streams) error {
	var o lockview.Options
	fs := newFlagSet("ls", "zklock ls [--recipe mutex|rw|semaphore] [--max-leases N] [global flags] PATH", g)
	fs.StringVar(&o.Recipe, "recipe", "", "read PATH as this `layout` (mutex, rw or semaphore) instead of detecting it")
	fs.IntVar(&o.MaxLeases, "max-leases", 0, "the semaphore's lease limit, to tell a lease being counted as held or waiting")
	path, err := parseOnePath(fs, g, args, "PATH", "")
	if err == nil {
		err = checkLsOptions(&o)
	}
	if err != nil {
		return parseFailure(fs, s, err)
	}
	client, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	l, err := lockview.List(ctx, client, path, o)
	if err != nil {
		return err
	}
	if g.json {
		return l.WriteJSON(s.stdout)
	}
	return l.WriteText(s.stdout, time.Now())
}

// checkLsOptions checks ls's own flags, normalising --recipe.
func checkLsOptions(o *lockview.Options) error {
	switch o.Recipe {
	case "", lockview.RecipeMutex, lockview.RecipeSemaphore, lockview.RecipeReadWrite:
	case "rw":
		o.Recipe = lockview.RecipeReadWrite
	default:
		return usageErrorf("--recipe must be mutex, rw or semaphore, not %q", o.Recipe)
	}
	if o.MaxLeases < 0 {
		return usageErrorf("--max-leases must not be negative")
	}
	return nil
}
