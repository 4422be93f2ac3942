package barriers

import (
	"context"
	"errors"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/recipeargs"
)

// The recipe kinds the package's events name, and the steps a
// BarrierPassed event tells (BarrierEvent).
const (
	recipeBarrier       = "barrier"
	recipeDoubleBarrier = "double-barrier"
	stepWait            = "wait"
	stepEnter           = "enter"
	stepLeave           = "leave"
)

// DistributedBarrier is a barrier that holds processes back while its node
// exists: Curator's DistributedBarrier, on the same node. SetBarrier makes
// the node (with the client's default data, and container parents),
// RemoveBarrier deletes it, and WaitOnBarrier waits until it is gone. It
// keeps no state of its own: one value may serve any number of goroutines,
// Go and Java processes share a barrier by its path.
type DistributedBarrier struct {
	client *framework.Client
	path   string
}

// NewDistributedBarrier returns the barrier at path. A nil client or a
// closed one, or a bad path (the root, or under /zookeeper, included), is
// an error wrapping framework.ErrInvalidArgument (framework.ErrClosed for a
// closed client; a bad path also unwraps to zk.ErrInvalidPath).
func NewDistributedBarrier(client *framework.Client, path string) (*DistributedBarrier, error) {
	if err := recipeargs.Check(client, path); err != nil {
		return nil, err
	}
	return &DistributedBarrier{client: client, path: path}, nil
}

func (b *DistributedBarrier) usable() bool { return b != nil && b.client != nil }

func (b *DistributedBarrier) what() string { return "barrier " + b.path }

// Path returns the barrier's node path ("" for a nil or zero barrier).
func (b *DistributedBarrier) Path() string {
	if !b.usable() {
		return ""
	}
	return b.path
}

// SetBarrier makes the barrier's node, if it is not there (Curator's
// setBarrier).
func (b *DistributedBarrier) SetBarrier(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	_, err := b.client.Create(ctx, b.path, nil, framework.CreatingParentContainersIfNeeded())
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return errs.Errorf("%s: set: %w", b.what(), err)
	}
	return nil
}

// RemoveBarrier deletes the barrier's node, if it is there (Curator's
// removeBarrier): every process waiting on it goes on.
func (b *DistributedBarrier) RemoveBarrier(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	if err := b.client.Delete(ctx, b.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return errs.Errorf("%s: remove: %w", b.what(), err)
	}
	return nil
}

// WaitOnBarrier waits until the barrier's node is not there (Curator's
// waitOnBarrier); at once if it is not. A ctx that ends first is an error
// wrapping ctx's (Curator's false after its timeout). It watches the node
// with a data watch, which goes with the node: a wait given up leaves no
// watch of a node that is never made behind.
func (b *DistributedBarrier) WaitOnBarrier(ctx context.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	start := time.Now()
	for {
		_, _, w, err := b.client.GetDataW(ctx, b.path)
		switch {
		case errors.Is(err, zk.ErrNoNode):
			emit(b.client, recipeBarrier, b.path, stepWait, start)
			return nil
		case err != nil:
			return errs.Errorf("%s: wait: %w", b.what(), err)
		}
		select {
		case <-w: // deleted, changed, or the session's watches dropped: look again
		case <-ctx.Done():
			return errs.Errorf("%s: wait: %w", b.what(), ctx.Err())
		}
	}
}

// check refuses a zero barrier and a nil ctx.
func (b *DistributedBarrier) check(ctx context.Context) error {
	if !b.usable() {
		return recipeargs.Zero("DistributedBarrier")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return errs.Errorf("%s: %w", b.what(), err)
	}
	return nil
}

// emit tells the client's event hook that a member passed a barrier's step
// begun at start.
func emit(c *framework.Client, recipe, path, step string, start time.Time) {
	if c.Observed() {
		c.Emit(framework.Event{Kind: BarrierPassed, Path: path, Wait: time.Since(start), Detail: BarrierEvent{Recipe: recipe, Step: step}})
	}
}
