package zkconn

import (
	"context"
	"net"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/zkwire"
)

// closeSessionWait is the pause between two rounds of the servers while
// none answers.
const closeSessionWait = 500 * time.Millisecond

// CloseSession closes the session s on the servers from connections of its
// own, as the session's own client's Close would: it attaches to s at each
// server in turn (dialled with dial; nil means net.DialTimeout) until one
// answers — the session is closed then, its ephemeral nodes deleted, or it
// had expired already — or ctx ends. failed hears each try that did not
// work; it may be nil. It returns the server that answered.
func CloseSession(ctx context.Context, dial zk.Dialer, servers []string, s Session, failed func(server string, err error)) (string, error) {
	if dial == nil {
		dial = net.DialTimeout
	}
	for i := 0; ; i++ {
		addr := servers[i%len(servers)]
		err := closeSessionAt(ctx, dial, addr, s)
		if err == nil {
			return addr, nil
		}
		if failed != nil {
			failed(addr, err)
		}
		if i%len(servers) == len(servers)-1 {
			t := time.NewTimer(closeSessionWait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return "", ctx.Err()
			}
		}
		if err := ctx.Err(); err != nil {
			return "", err
		}
	}
}

// closeSessionAt attaches to s at the server addr and closes it there,
// within the session's timeout (at least a second) or ctx.
func closeSessionAt(ctx context.Context, dial zk.Dialer, addr string, s Session) error {
	nc, err := dial("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, max(s.Timeout, time.Second))
	defer cancel()
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	if deadline, ok := ctx.Deadline(); ok {
		nc.SetDeadline(deadline)
	}
	return zkwire.CloseSession(nc, s.ID, int32(s.Timeout/time.Millisecond), s.Passwd)
}
