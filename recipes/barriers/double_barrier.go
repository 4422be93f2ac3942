package barriers

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/protected"
	"github.com/gocurator/curator/internal/recipeargs"
	"github.com/gocurator/curator/recipes"
)

// readyNode is the name of the node the member that completes the count
// makes, for the others to see (Curator's READY_NODE).
const readyNode = "ready"

// cleanupTimeout bounds how long a cancelled Enter waits for its member
// node's delete. The delete is not guaranteed: a delete going on in the
// background would delete the node of the member's next Enter, of the same
// name; a node left (no server answered) goes with its session, or is the
// next Enter's.
const cleanupTimeout = 5 * time.Second

// DistributedDoubleBarrier is one member of a double barrier: Curator's
// DistributedDoubleBarrier, in its node layout, so that Go and Java members
// enter and leave one barrier together. Enter waits until memberQty
// members have entered; Leave waits until every member has left.
//
// A member is an ephemeral node under the barrier's path named by a random
// UUID (the client's default data, container parents); the member that
// finds memberQty of them makes "ready" (persistent), which lets every
// member waiting in Enter go on. Leave deletes the member's node as
// Curator's (and ZooKeeper's recipe) does: the lowest member waits for the
// highest, the others delete theirs and wait for the lowest; each leaver
// deletes "ready" at the end. memberQty is a threshold, not a limit: more
// members may enter.
//
// A value is one member, for one goroutine at a time: a call while another
// of the same value is under way, an Enter of a member that entered, or a
// Leave of one that did not, is an error wrapping recipes.ErrInvalidState.
type DistributedDoubleBarrier struct {
	client *framework.Client
	path   string
	qty    int
	ours   string // the member's node: path/<uuid>
	name   string // its name
	ready  string // path/ready

	mu      sync.Mutex
	busy    bool            // a call is under way
	entered bool            // Enter passed, Leave has not
	left    bool            // Leave deleted the member's node (and may be called again to wait for the rest)
	ended   <-chan struct{} // closed when the session of the member's node ends (entered)
}

// NewDistributedDoubleBarrier returns a member of the double barrier at path
// of memberQty members. A nil client or a closed one, a bad path (the root,
// or under /zookeeper, included), or a memberQty under 1, is an error
// wrapping framework.ErrInvalidArgument (framework.ErrClosed for a closed
// client; a bad path also unwraps to zk.ErrInvalidPath).
func NewDistributedDoubleBarrier(client *framework.Client, path string, memberQty int) (*DistributedDoubleBarrier, error) {
	if err := recipeargs.Check(client, path); err != nil {
		return nil, err
	}
	if memberQty < 1 {
		return nil, errs.Errorf("%w: memberQty %d: a barrier needs at least one member", framework.ErrInvalidArgument, memberQty)
	}
	name := protected.NewID() // a random UUID, as Curator's UUID.randomUUID()
	return &DistributedDoubleBarrier{client: client, path: path, qty: memberQty, name: name,
		ours: framework.JoinPath(path, name), ready: framework.JoinPath(path, readyNode)}, nil
}

func (b *DistributedDoubleBarrier) usable() bool { return b != nil && b.client != nil }

func (b *DistributedDoubleBarrier) what() string { return "double barrier " + b.path }

// Path returns the barrier's path ("" for a nil or zero member).
func (b *DistributedDoubleBarrier) Path() string {
	if !b.usable() {
		return ""
	}
	return b.path
}

// MemberPath returns the path of this member's node (made by Enter).
func (b *DistributedDoubleBarrier) MemberPath() string {
	if !b.usable() {
		return ""
	}
	return b.ours
}

// begin takes the member for one call, if its state allows it: entering
// (want false) or leaving (want true).
func (b *DistributedDoubleBarrier) begin(ctx context.Context, leaving bool) error {
	if !b.usable() {
		return recipeargs.Zero("DistributedDoubleBarrier")
	}
	if err := recipeargs.Context(ctx); err != nil {
		return errs.Errorf("%s: %w", b.what(), err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.busy:
		return errs.Errorf("%s: %w: a call of this member is under way", b.what(), recipes.ErrInvalidState)
	case !leaving && b.entered:
		return errs.Errorf("%s: %w: entered already (Leave first)", b.what(), recipes.ErrInvalidState)
	case leaving && !b.entered:
		return errs.Errorf("%s: %w: not entered (Enter first)", b.what(), recipes.ErrInvalidState)
	}
	b.busy = true
	return nil
}

// end gives the member back after a call, entered or not.
func (b *DistributedDoubleBarrier) end(entered, left bool, ended <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.busy, b.entered, b.left, b.ended = false, entered, left, ended
}

// Enter makes the member's node and waits until memberQty members have
// entered (Curator's enter): at once if "ready" is there. A ctx that ends
// first is an error wrapping ctx's (Curator's false after its timeout), and
// the member's node is deleted: the member did not enter. If the member's
// session ends while it waits, its node goes with it: Enter fails with an
// error wrapping zk.ErrSessionExpired (Curator's ConnectionLossException),
// and the member may enter again. Enter passes only on a count of the
// members' nodes that reaches memberQty, or on "ready", never on a wake-up
// alone (Curator up to 5.9 passes on any watch event: GH-1290, fixed after 5.9.0).
func (b *DistributedDoubleBarrier) Enter(ctx context.Context) error {
	if err := b.begin(ctx, false); err != nil {
		return err
	}
	start := time.Now()
	ended, err := b.enter(ctx)
	if err != nil {
		b.deleteOurs(ctx)
		b.end(false, false, nil)
		return err
	}
	b.end(true, false, ended)
	emit(b.client, recipeDoubleBarrier, b.path, stepEnter, start)
	return nil
}

// enter is Enter's wait; it returns a channel closed when the session of
// the member's node ends.
func (b *DistributedDoubleBarrier) enter(ctx context.Context) (<-chan struct{}, error) {
	ready, _, w, err := b.client.ExistsW(ctx, b.ready)
	if err != nil {
		return nil, errs.Errorf("%s: enter: %w", b.what(), err)
	}
	ended, err := b.makeOurs(ctx)
	if err != nil {
		return nil, err
	}
	for !ready {
		children, _, err := b.client.Children(ctx, b.path)
		if err != nil {
			return nil, errs.Errorf("%s: enter: %w", b.what(), err)
		}
		if len(children) >= b.qty {
			if _, err := b.client.Create(ctx, b.ready, nil); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return nil, errs.Errorf("%s: enter: %w", b.what(), err)
			}
			break
		}
		select {
		case <-w: // "ready" made, or the session's watches dropped: look again
		case <-ended:
			return nil, b.sessionEnded("enter")
		case <-ctx.Done():
			return nil, errs.Errorf("%s: enter: %w", b.what(), ctx.Err())
		}
		if ready, _, w, err = b.client.ExistsW(ctx, b.ready); err != nil {
			return nil, errs.Errorf("%s: enter: %w", b.what(), err)
		}
		select {
		case <-ended: // seen in a new session: the member's node went with the old
			return nil, b.sessionEnded("enter")
		default:
		}
	}
	return ended, nil
}

// makeOurs makes the member's node, ephemeral, and returns a channel closed
// when the session it belongs to ends. A node of ours left by an earlier
// session of the client (an Enter cut short) is deleted and made again.
func (b *DistributedDoubleBarrier) makeOurs(ctx context.Context) (ended <-chan struct{}, err error) {
	for try := 0; ; try++ {
		_, err := b.client.Create(ctx, b.ours, nil, framework.WithMode(framework.Ephemeral), framework.CreatingParentContainersIfNeeded())
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return nil, errs.Errorf("%s: enter: %w", b.what(), err)
		}
		sid, ended := b.client.Session()
		ok, st, err := b.client.Exists(ctx, b.ours)
		switch {
		case err != nil:
			return nil, errs.Errorf("%s: enter: %w", b.what(), err)
		case ok && st.EphemeralOwner == sid:
			return ended, nil
		case ok && try == 0: // ours (its name is a UUID of this value's), of a session gone or going
			if err := b.client.Delete(ctx, b.ours, framework.WithVersion(st.Version)); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
				return nil, errs.Errorf("%s: enter: %w", b.what(), err)
			}
		default: // gone already, or the session changed again
			return nil, b.sessionEnded("enter")
		}
	}
}

// sessionEnded is the error of a call whose member node went with its
// session.
func (b *DistributedDoubleBarrier) sessionEnded(step string) error {
	return errs.Errorf("%s: %s: the member's node went with its session: %w", b.what(), step, zk.ErrSessionExpired)
}

// deleteOurs deletes the member's node after a failed Enter, with a context
// of its own (ctx may be why it failed), bounded by cleanupTimeout.
func (b *DistributedDoubleBarrier) deleteOurs(ctx context.Context) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := b.client.Delete(dctx, b.ours); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, framework.ErrClosed) {
		b.client.Logger().Warn("double barrier: a member that did not enter could not delete its node: it counts as a member until its session ends or it enters again",
			zap.String("path", b.ours), zap.Error(err))
	}
}

// Leave waits until every member has left (Curator's leave), deleting this
// member's node on the way, and then deletes "ready". A ctx that ends first
// is an error wrapping ctx's (Curator's false); the member is still
// leaving, and Leave may be called again. A member whose session ended
// (its node with it) has left, and waits for the rest. A member node
// missing while the session lasts (someone deleted it) is an error
// wrapping recipes.ErrInvalidState, as Curator's IllegalStateException.
func (b *DistributedDoubleBarrier) Leave(ctx context.Context) error {
	if err := b.begin(ctx, true); err != nil {
		return err
	}
	b.mu.Lock()
	left, ended := b.left, b.ended
	b.mu.Unlock()
	start := time.Now()
	left, err := b.leave(ctx, left, ended)
	if err != nil {
		b.end(true, left, ended)
		return err
	}
	b.end(false, false, nil)
	emit(b.client, recipeDoubleBarrier, b.path, stepLeave, start)
	return nil
}

// leave is Leave's wait; left says whether the member's node was deleted
// (or went with its session, which ended closes at).
func (b *DistributedDoubleBarrier) leave(ctx context.Context, left bool, ended <-chan struct{}) (bool, error) {
	for {
		children, _, err := b.client.Children(ctx, b.path)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return left, errs.Errorf("%s: leave: %w", b.what(), err)
		}
		children = slices.DeleteFunc(children, func(n string) bool { return n == readyNode })
		if len(children) == 0 {
			break
		}
		slices.Sort(children)
		i := slices.Index(children, b.name)
		if i < 0 && !left {
			select {
			case <-ended: // it went with its session: left
				left = true
			default:
				return left, errs.Errorf("%s: leave: %w: the member's node %s is missing", b.what(), recipes.ErrInvalidState, b.ours)
			}
		}
		if len(children) == 1 {
			if !left && children[0] != b.name {
				return left, errs.Errorf("%s: leave: %w: the last node, %s, is not the member's", b.what(), recipes.ErrInvalidState, children[0])
			}
			if !left {
				if err := b.deleteNode(ctx); err != nil {
					return left, err
				}
				left = true
			}
			break
		}
		watched := children[0] // not the lowest: leave, and wait for the lowest
		if i == 0 {
			watched = children[len(children)-1] // the lowest: wait for the highest
		}
		ok, _, w, err := b.client.ExistsW(ctx, framework.JoinPath(b.path, watched))
		if err != nil {
			return left, errs.Errorf("%s: leave: %w", b.what(), err)
		}
		if i != 0 && !left {
			if err := b.deleteNode(ctx); err != nil {
				return left, err
			}
			left = true
		}
		if !ok {
			continue
		}
		select {
		case <-w:
		case <-ctx.Done():
			return left, errs.Errorf("%s: leave: %w", b.what(), ctx.Err())
		}
	}
	if err := b.client.Delete(ctx, b.ready); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return left, errs.Errorf("%s: leave: %w", b.what(), err)
	}
	return left, nil
}

// deleteNode deletes the member's node as it leaves.
func (b *DistributedDoubleBarrier) deleteNode(ctx context.Context) error {
	if err := b.client.Delete(ctx, b.ours); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return errs.Errorf("%s: leave: %w", b.what(), err)
	}
	return nil
}
