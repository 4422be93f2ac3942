package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessionTimeout is the session timeout every participant asks for, in Go
// and in Java: long enough that no session comes near expiry, and pings
// (every third of it when idle) rarely fall into a measurement.
const sessionTimeout = 30 * time.Second

// rawConn is a plain go-zookeeper connection with its own session.
type rawConn struct {
	*zk.Conn
	events <-chan zk.Event
}

// newRawConn opens a go-zookeeper connection, its connections dialled with
// dial (nil: net.DialTimeout), and waits for its session.
func newRawConn(ctx context.Context, servers string, dial zk.Dialer) (*rawConn, error) {
	if dial == nil {
		dial = net.DialTimeout
	}
	conn, events, err := zk.Connect(strings.Split(servers, ","), sessionTimeout,
		zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false), zk.WithDialer(dial))
	if err != nil {
		return nil, err
	}
	rc := &rawConn{Conn: conn, events: events}
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			rc.close()
			return nil, fmt.Errorf("no ZooKeeper session with %s: %w", servers, ctx.Err())
		}
	}
	return rc, nil
}

// close closes the connection and waits for go-zookeeper's goroutines.
func (c *rawConn) close() {
	c.Conn.Close()
	for range c.events {
	}
}

// counter returns one numeric counter of the server's mntr.
func (e *env) counter(key string) (int64, error) {
	m, err := e.srv.Mntr()
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("mntr has no %s", key)
	}
	return strconv.ParseInt(v, 10, 64)
}

// watched reports whether some session watches path on the server (the
// four-letter word wchp: every watched path, each followed by its
// sessions' ids, indented).
func (e *env) watched(path string) (bool, error) {
	out, err := e.srv.FourLetterWord("wchp")
	return slices.Contains(strings.Fields(out), path), err
}
