package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/internal/locktree"
	"github.com/gocurator/curator/recipes"
)

// revokeOptions are revoke's own flags.
type revokeOptions struct {
	wait    bool          // wait until the node is gone
	timeout time.Duration // bound on wait; 0: none
	force   bool          // ask holders that did not make their lock revocable too
}

// revokeFlags returns revoke's flag set, bound to o and g.
func revokeFlags(g *globalOptions, o *revokeOptions) *flag.FlagSet {
	fs := newFlagSet("revoke", "zklock revoke [--force] [--wait [--timeout D]] [global flags] NODE|PATH", g)
	fs.BoolVar(&o.force, "force", false, "ask a holder whose node has data too (it did not make its lock revocable, so it will probably not release)")
	fs.BoolVar(&o.wait, "wait", false, "wait until the holder has released the node")
	fs.DurationVar(&o.timeout, "timeout", 0, "with --wait, give up after this long (0: wait forever)")
	return fs
}

// Events of revoke's results.
const (
	eventRevokeRequested = "revoke-requested" // __REVOKE__ written to the node
	eventAlreadyGone     = "already-gone"     // no node: nothing to revoke
	eventNotRevocable    = "not-revocable"    // not asked: the holder did not make its lock revocable
)

// revokeResult is what revoke reports about one node, one JSON line each,
// its fields as docs/operations.md (zklock revoke) describes them.
type revokeResult struct {
	Event     string `json:"event"`
	Path      string `json:"path,omitempty"`
	Kind      string `json:"kind,omitempty"` // by the node's name
	Node      string `json:"node"`           // without the namespace
	Session   string `json:"session"`
	Token     int64  `json:"token,omitempty"`
	Revocable bool   `json:"revocable"`
	Released  bool   `json:"released"`
	Message   string `json:"message"`
}

// cmdRevoke parses revoke's arguments, connects and revokes.
func cmdRevoke(ctx context.Context, g *globalOptions, args []string, s streams) error {
	var o revokeOptions
	fs := revokeFlags(g, &o)
	target, err := parseOnePath(fs, g, args, "NODE or PATH", " (a lock node from zklock ls, or a lock path)", false)
	if err == nil && o.timeout < 0 {
		err = usageErrorf("--timeout must not be negative")
	}
	if err != nil {
		return parseFailure(fs, s, err)
	}
	client, err := g.connect(ctx)
	if err != nil {
		return err
	}
	defer client.Close()
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	path, nodes, err := revokeTargets(ctx, client, target)
	if err != nil {
		return err
	}
	var asked []*revokeResult
	refused := 0
	for _, node := range nodes {
		r, err := requestRevoke(ctx, client, path, node, o.force)
		if err != nil {
			return err
		}
		switch {
		case r.Event == eventNotRevocable:
			refused++
		case !r.Released && o.wait:
			asked = append(asked, r)
			if g.json {
				continue // its one line comes once it is released
			}
		}
		if g.json {
			writeJSONLine(s.stdout, r)
		} else {
			fmt.Fprintln(s.stdout, r.Message)
		}
	}
	for _, r := range asked {
		err := waitReleased(ctx, client, r.Node)
		r.Released = err == nil
		if g.json {
			writeJSONLine(s.stdout, r)
		} else if r.Released {
			fmt.Fprintf(s.stdout, "released: %s\n", r.Node)
		}
		if err != nil {
			return err
		}
	}
	if refused > 0 {
		return fmt.Errorf("%d of %d holders not asked: not revocable (--force asks anyway)", refused, len(nodes))
	}
	return nil
}

// revokeTargets returns the lock path and the nodes to ask for target: a
// lock node (ephemeral) is asked itself, and so is a missing target named
// as a lock node is (requestRevoke reports it gone); a lock path's holders
// are asked, as the lock's rules find them. A lock path with no holder is
// an error, whether it is there or (empty) was reaped.
func revokeTargets(ctx context.Context, client *framework.Client, target string) (path string, nodes []string, err error) {
	ok, st, err := client.Exists(ctx, target)
	if err != nil {
		return "", nil, err
	}
	if parent, name := framework.SplitPath(target); (ok && st.EphemeralOwner != 0) || (!ok && locktree.IsSequentialNode(name)) {
		return parent, []string{target}, nil
	}
	l, err := lockqueue.List(ctx, client, target, lockqueue.Options{})
	if err != nil {
		return "", nil, err
	}
	switch l.Recipe {
	case lockqueue.RecipeSemaphore:
		return "", nil, fmt.Errorf("%s is a semaphore: Curator's semaphore leases cannot be revoked", target)
	case lockqueue.RecipeLatch:
		return "", nil, fmt.Errorf("%s is a leader latch: Curator's latch has no revocation", target)
	}
	for _, p := range l.Participants {
		if p.Role == lockqueue.RoleHolder && (p.Kind == lockqueue.KindMutex || p.Kind == lockqueue.KindRead || p.Kind == lockqueue.KindWrite) {
			nodes = append(nodes, p.Path)
		}
	}
	if len(nodes) == 0 {
		return "", nil, fmt.Errorf("no holder to revoke at %s (%s); give a lock path, or a lock node from zklock ls", target, l.Summary())
	}
	return target, nodes, nil
}

// requestRevoke writes Curator's __REVOKE__ to the lock node at node,
// after checking that it is one (an ephemeral node) and, unless force,
// that its holder made it revocable: Curator creates a revocable holder's
// node empty and another's with data (the client's default, its IP
// address; or the lock data given). A node that already says __REVOKE__
// was asked before and is asked again. A node that is gone, before or
// during the request, is reported already gone, as Curator's
// Revoker.attemptRevoke does nothing for it.
func requestRevoke(ctx context.Context, client *framework.Client, path, node string, force bool) (*revokeResult, error) {
	_, name := framework.SplitPath(node)
	r := &revokeResult{Event: eventRevokeRequested, Path: path, Node: node}
	switch kind := lockqueue.NodeKind(name); kind {
	case lockqueue.KindLatch, lockqueue.KindLease:
		// Their data is a participant id or a lease's: writing
		// __REVOKE__ there would overwrite it, and nobody listens.
		return nil, fmt.Errorf("%s is a %s node, which cannot be revoked (only lock nodes can)", node, kind)
	case lockqueue.KindForeign:
	default:
		r.Kind = kind
	}
	gone := func() (*revokeResult, error) {
		r.Event, r.Released, r.Revocable = eventAlreadyGone, true, false
		r.Message = fmt.Sprintf("already gone: %s (no node there: released, or never there); nothing to revoke", node)
		return r, nil
	}
	data, st, err := client.GetData(ctx, node)
	if errors.Is(err, zk.ErrNoNode) {
		return gone()
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", node, err)
	}
	if st.EphemeralOwner == 0 {
		return nil, fmt.Errorf("%s is not a lock node (lock nodes are ephemeral); give a node from zklock ls, or a lock path", node)
	}
	r.Session, r.Token = fmt.Sprintf("0x%x", st.EphemeralOwner), st.Czxid
	r.Revocable = len(data) == 0 || string(data) == recipes.RevokeMessage
	switch {
	case !r.Revocable && !force:
		r.Event = eventNotRevocable
		r.Message = fmt.Sprintf("not asked: %s (session %s): its node has data, so its holder did not make its lock revocable (revocable lock nodes are created empty)", node, r.Session)
		return r, nil
	case !r.Revocable:
		r.Message = fmt.Sprintf("revocation requested: %s (session %s), forced: its holder did not make its lock revocable and will probably not release", node, r.Session)
	default:
		r.Message = fmt.Sprintf("revocation requested: %s (session %s)", node, r.Session)
	}
	// Whatever the node says by now (another revoker may have written), as
	// Curator's Revoker does.
	_, err = client.SetData(ctx, node, []byte(recipes.RevokeMessage), -1)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return gone()
	case err != nil:
		return nil, fmt.Errorf("revoking %s: %w", node, err)
	}
	return r, nil
}

// waitReleased waits, with watches, until node is gone.
func waitReleased(ctx context.Context, client *framework.Client, node string) error {
	for {
		_, _, w, err := client.GetDataW(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("waiting for %s to be released: %w", node, err)
		}
		select {
		case <-w:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s to be released: %w", node, ctx.Err())
		}
	}
}
