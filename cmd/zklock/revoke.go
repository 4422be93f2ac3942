package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/recipes"
)

// revokeOptions are revoke's own flags.
type revokeOptions struct {
	wait    bool          // wait until the node is gone
	timeout time.Duration // bound on wait; 0: none
}

// revokeResult is what revoke reports.
type revokeResult struct {
	// Node is the node revoked (without the namespace).
	Node string `json:"node"`
	// Session is the node's ephemeralOwner, in hex.
	Session string `json:"session"`
	// Revocable is false when the node had data before: its holder did not
	// make its lock revocable (Curator creates revocable lock nodes empty),
	// so it will probably not react.
	Revocable bool `json:"revocable"`
	// Released is true when --wait saw the node go.
	Released bool `json:"released"`
	// Warning explains a non-revocable holder.
	Warning string `json:"warning,omitempty"`
}

// cmdRevoke parses revoke's arguments, connects and revokes.
func cmdRevoke(ctx context.Context, g *globalOptions, args []string, s streams) error {
	var o revokeOptions
	fs := newFlagSet("revoke", "zklock revoke [--wait [--timeout D]] [global flags] NODE", g)
	fs.BoolVar(&o.wait, "wait", false, "wait until the holder has released NODE")
	fs.DurationVar(&o.timeout, "timeout", 0, "with --wait, give up after this long (0: wait forever)")
	node, err := parseOnePath(fs, g, args, "NODE", " (a path from zklock ls)")
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
	r, err := revokeNode(ctx, client, node, o)
	if r != nil {
		writeRevokeResult(s.stdout, s.stderr, g.json, r)
	}
	return err
}

// revokeNode writes Curator's __REVOKE__ to the lock node at node, after
// checking that it is one (an ephemeral node without children), and with
// o.wait waits for it to be deleted. A missing node is an error that unwraps
// to zk.ErrNoNode.
func revokeNode(ctx context.Context, client *framework.Client, node string, o revokeOptions) (*revokeResult, error) {
	data, st, err := client.GetData(ctx, node)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("no node at %s (already released?): %w", node, zk.ErrNoNode)
	}
	if err != nil {
		return nil, err
	}
	if st.EphemeralOwner == 0 || st.NumChildren > 0 {
		return nil, fmt.Errorf("%s is not a lock node (lock nodes are ephemeral and have no children); give a node from zklock ls", node)
	}
	r := &revokeResult{Node: node, Session: fmt.Sprintf("0x%x", st.EphemeralOwner), Revocable: len(data) == 0}
	if string(data) == string(recipes.RevokeMessage) {
		r.Revocable = true
	}
	if !r.Revocable {
		r.Warning = "the node has data, so its holder did not make its lock revocable (Curator creates revocable lock nodes empty): it will probably not release"
	}
	// Write only if the node is still the one we looked at, and still there.
	if _, err := client.SetData(ctx, node, recipes.RevokeMessage, st.Version); err != nil {
		if errors.Is(err, zk.ErrNoNode) {
			return nil, fmt.Errorf("%s was released before the revocation: %w", node, zk.ErrNoNode)
		}
		if !errors.Is(err, zk.ErrBadVersion) {
			return nil, err
		}
		// Changed in between (another revoker): write regardless, as Curator's Revoker does.
		if err := recipes.Revoke(ctx, client, node); err != nil {
			return nil, err
		}
	}
	if !o.wait {
		return r, nil
	}
	for {
		_, _, w, err := client.GetDataW(ctx, node)
		if errors.Is(err, zk.ErrNoNode) {
			r.Released = true
			return r, nil
		}
		if err != nil {
			return r, fmt.Errorf("waiting for %s to be released: %w", node, err)
		}
		select {
		case <-w:
		case <-ctx.Done():
			return r, fmt.Errorf("waiting for %s to be released: %w", node, ctx.Err())
		}
	}
}

// writeRevokeResult prints what revoke did.
func writeRevokeResult(stdout, stderr io.Writer, asJSON bool, r *revokeResult) {
	if asJSON {
		writeJSONLine(stdout, r)
		return
	}
	fmt.Fprintf(stdout, "revocation requested: %s (session %s)\n", r.Node, r.Session)
	if r.Warning != "" {
		fmt.Fprintf(stderr, "zklock: warning: %s\n", r.Warning)
	}
	if r.Released {
		fmt.Fprintf(stdout, "released: %s\n", r.Node)
	}
}
