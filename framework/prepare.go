package framework

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/zkconn"
)

// What the client makes ready on each connection before an operation runs
// on it (prepare), and the parents it creates (mkdirs).

// prepare waits for a connection, then, once per go-zookeeper connection,
// sends the auth infos and creates the namespace node; it returns the
// connection the attempt is to run on.
func (c *Client) prepare(ctx context.Context) (*conn, error) {
	if err := c.waitConnected(ctx); err != nil {
		return nil, err
	}
	z := c.zk()
	if z.ready.Load() {
		return z, nil
	}
	z.readyMu.Lock()
	defer z.readyMu.Unlock()
	if z.ready.Load() {
		return z, nil
	}
	_, _, err := interruptible[struct{}](ctx, c, z.Conn, "", attemptFunc[struct{}](func(*zkconn.Conn, string) (struct{}, error) {
		for _, a := range c.cfg.auth {
			if err := z.AddAuth(a.scheme, a.auth); err != nil {
				return struct{}{}, opError("auth", a.scheme, err)
			}
		}
		if c.ns != "" {
			if err := c.mkdirs(z.Conn, string(c.ns), true, c.cfg.containers); err != nil {
				return struct{}{}, opError("create namespace", "/"+c.cfg.namespace, err)
			}
		}
		return struct{}{}, nil
	}))
	if err != nil {
		return nil, err
	}
	z.ready.Store(true)
	return z, nil
}

// mkdirs creates every missing node of the server path p (p itself only if
// makeLast), with empty data, as containers or persistent nodes. It looks
// for the deepest existing ancestor first (Curator 5.7.1+), so an existing
// tree costs reads, not failed creates.
func (c *Client) mkdirs(z *zkconn.Conn, p string, makeLast bool, containers bool) error {
	if !makeLast {
		p, _ = SplitPath(p)
	}
	var missing []string
	for q := p; q != "/"; q, _ = SplitPath(q) {
		ok, _, err := z.Exists(q)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		missing = append(missing, q)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		q := missing[i]
		if c.cfg.beforeParentCreate != nil {
			c.cfg.beforeParentCreate(q)
		}
		acl := c.cfg.aclProvider.ACLForPath(c.ns.unfix(q))
		var err error
		if containers {
			_, err = z.CreateContainer(q, []byte{}, zk.FlagContainer, acl)
		} else {
			_, err = z.Create(q, []byte{}, zk.FlagPersistent, acl)
		}
		if err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return err
		}
	}
	return nil
}
