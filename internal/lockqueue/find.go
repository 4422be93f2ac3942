package lockqueue

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/gocurator/curator/framework"
)

// findBudget bounds the listings one Find makes.
const findBudget = 256

// Bounds of ListParent's look below a parent of locks.
const (
	ParentDepth = 3  // levels below it
	ParentMax   = 20 // locks listed
)

// ListParent lists the locks below l's path when l, List's listing of it,
// found no lock there: a RecipeParent listing with each lock Find finds
// (ParentDepth levels down, ParentMax locks at most) and its queue, a
// semaphore's counted with maxLeases. It returns nil when there are none,
// having added the nodes it looked at to l.Listed.
func ListParent(ctx context.Context, client *framework.Client, l *Listing, maxLeases int) (*Listing, error) {
	below, listed, more, err := Find(ctx, client, l.Path, ParentDepth, ParentMax)
	if err != nil {
		return nil, err
	}
	if len(below) == 0 {
		l.Listed = append(l.Listed, listed...)
		return nil, nil
	}
	parent := &Listing{Path: l.Path, Exists: true, Recipe: RecipeParent, Children: l.Children, Participants: []Participant{}, MoreLocks: more,
		Listed: append(slices.Clone(l.Listed), listed...)}
	for _, p := range below {
		bl, err := List(ctx, client, p, Options{})
		if err == nil && bl.Recipe == RecipeSemaphore && maxLeases > 0 {
			// maxLeases is for the semaphores among them.
			bl, err = List(ctx, client, p, Options{MaxLeases: maxLeases})
		}
		if err != nil {
			return nil, err
		}
		parent.Locks = append(parent.Locks, bl)
		parent.Listed = append(parent.Listed, bl.Listed...)
	}
	return parent, nil
}

// Find returns the lock paths below path, nearest first and in name order
// within a level: nodes at most depth levels below path that IsLock would
// call locks, at most max of them. It does not look below a lock. listed
// are the nodes whose children it read (path among them, if it is there),
// as Listing.Listed. more is true when it stopped (at max, or after
// findBudget listings) with nodes left to look at.
func Find(ctx context.Context, client *framework.Client, path string, depth, max int) (locks, listed []string, more bool, err error) {
	type node struct {
		path  string
		depth int
	}
	queue := []node{{path, 0}}
	for n := 0; len(queue) > 0; n++ {
		if len(locks) >= max || n >= findBudget {
			return locks, listed, true, nil
		}
		next := queue[0]
		queue = queue[1:]
		names, err := children(ctx, client, next.path, &listed)
		if err != nil {
			return nil, nil, false, fmt.Errorf("looking for locks below %s: %w", path, err)
		}
		if next.depth > 0 {
			recipe, err := recipeAt(ctx, client, next.path, names, &listed)
			if err != nil {
				return nil, nil, false, fmt.Errorf("looking for locks below %s: %w", path, err)
			}
			if recipe != RecipeNone {
				locks = append(locks, next.path)
				continue
			}
		}
		if next.depth == depth {
			continue
		}
		sort.Strings(names)
		for _, c := range names {
			queue = append(queue, node{framework.JoinPath(next.path, c), next.depth + 1})
		}
	}
	return locks, listed, false, nil
}

// IsLock reports whether path is a lock path: its children include mutex,
// read-write or latch nodes, or it has a semaphore's leases (or locks)
// child holding lease (or lock) nodes.
func IsLock(ctx context.Context, client *framework.Client, path string) (bool, error) {
	names, err := children(ctx, client, path, nil)
	if err != nil {
		return false, err
	}
	recipe, err := recipeAt(ctx, client, path, names, nil)
	return recipe != RecipeNone, err
}
