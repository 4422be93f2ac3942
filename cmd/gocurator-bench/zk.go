package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// sessionTimeout is the session timeout every participant asks for, in Go
// and in Java: long enough that no session comes near expiry, and pings
// (every third of it when idle) rarely fall into a measurement.
const sessionTimeout = 30 * time.Second

var openACL = zk.WorldACL(zk.PermAll)

// serverList splits a connect string into go-zookeeper's server list.
func serverList(connect string) []string {
	var out []string
	for _, s := range strings.Split(connect, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// rawConn is a plain go-zookeeper connection with its own session.
type rawConn struct {
	*zk.Conn
	events <-chan zk.Event
}

// connectRaw opens a go-zookeeper connection and waits for its session.
func connectRaw(ctx context.Context, connect string) (*rawConn, error) {
	conn, events, err := zk.Connect(serverList(connect), sessionTimeout,
		zk.WithLogger(log.New(io.Discard, "", 0)), zk.WithLogInfo(false))
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
			return nil, fmt.Errorf("no ZooKeeper session with %s: %w", connect, ctx.Err())
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

// ensurePath creates path and its ancestors as persistent nodes.
func ensurePath(conn *zk.Conn, path string) error {
	for i := 1; i <= len(path); i++ {
		if i == len(path) || path[i] == '/' {
			_, err := conn.Create(path[:i], nil, zk.FlagPersistent, openACL)
			if err != nil && !errors.Is(err, zk.ErrNodeExists) {
				return fmt.Errorf("create %s: %w", path[:i], err)
			}
		}
	}
	return nil
}

// deleteTree deletes path and everything below it; a missing path is no error.
func deleteTree(conn *zk.Conn, path string) error {
	children, _, err := conn.Children(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := deleteTree(conn, path+"/"+c); err != nil {
			return err
		}
	}
	err = conn.Delete(path, -1)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	return err
}

// fourLetter sends a four-letter word to the first server of connect and
// returns its answer: empty when the word is not whitelisted, and for some
// words (wchp without watches) when there is nothing to say.
func fourLetter(connect, cmd string) (string, error) {
	addr := serverList(connect)[0]
	if i := strings.IndexByte(addr, '/'); i >= 0 { // a chroot suffix
		addr = addr[:i]
	}
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// mntr asks the first server of connect for "mntr" and returns its answer
// as a map (zk_packets_sent, zk_watch_count, zk_version, ...).
func mntr(connect string) (map[string]string, error) {
	out, err := fourLetter(connect, "mntr")
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("no mntr answer from %s (is the four-letter word whitelisted?)", connect)
	}
	return m, nil
}

// watched reports whether some session watches path on the first server of
// connect (the four-letter word wchp: every watched path, each followed by
// its sessions, indented).
func watched(connect, path string) (bool, error) {
	out, err := fourLetter(connect, "wchp")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimRight(line, "\r") == path {
			return true, nil
		}
	}
	return false, nil
}

// counter returns one numeric counter of mntr.
func counter(connect, key string) (int64, error) {
	m, err := mntr(connect)
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("mntr has no %s", key)
	}
	return strconv.ParseInt(v, 10, 64)
}
