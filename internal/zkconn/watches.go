package zkconn

import (
	"unsafe"

	"github.com/go-zookeeper/zk"
)

// Persistent watches (ZooKeeper 3.6's addWatch). go-zookeeper v1.0.4 has no
// call for them, but its request path takes any opcode and encodes any
// struct of jute's types by reflection (structs.go, encodePacket): AddWatch
// and RemoveWatches send theirs through it, in order with every other
// request of the connection, with go-zookeeper's xid, timeouts and
// connection-loss errors (assumption 14). The events of such a watch come
// as any watch event does, through the event callback (Config.OnEvent,
// assumption 15); go-zookeeper, knowing no watcher for them, drops them
// after that. Nor does it set them again on a new connection (its
// setWatches carries its own one-shot watches only): whoever relies on a
// persistent watch sets it again after each reconnect, as Curator's
// PersistentWatcher does.

// The opcodes, and the modes of addWatch (ZooKeeper's ZooDefs.OpCode and
// AddWatchMode), and the watcher type removeWatches takes (Watcher.
// WatcherType; Any is the only one that reaches a persistent watch on
// servers before 3.9, which know no Persistent or PersistentRecursive).
const (
	opRemoveWatches = 18
	opAddWatch      = 106

	addWatchPersistent          = 0
	addWatchPersistentRecursive = 1

	watcherTypeAny = 3
)

// addWatchRequest and removeWatchesRequest are the requests' bodies, as
// jute encodes them (ZooKeeper's AddWatchRequest, RemoveWatchesRequest):
// go-zookeeper's encodePacket writes a struct's fields in order, a string
// as its length and bytes, an int32 big-endian.
type addWatchRequest struct {
	Path string
	Mode int32
}

type removeWatchesRequest struct {
	Path string
	Type int32
}

// emptyResponse is the body of either reply: none.
type emptyResponse struct{}

// zkRequest is go-zookeeper's (*Conn).request: it queues a request of
// opcode with body req, waits for its reply and decodes the body into res,
// and returns the reply's zxid and error (ErrConnectionClosed when the
// connection went first). Its last argument, a callback of go-zookeeper's
// own types, is always nil here: a nil pointer, as a nil func is.
//
//go:linkname zkRequest github.com/go-zookeeper/zk.(*Conn).request
func zkRequest(c *zk.Conn, opcode int32, req any, res any, recvFunc unsafe.Pointer) (int64, error)

// AddWatch sets a persistent watch on serverPath, on the connection's
// current TCP connection (recursive: on every node below it too), and
// waits for the server's answer. The watch's events come through
// Config.OnEvent: a persistent watch hears NodeCreated, NodeDataChanged
// and NodeDeleted of its node and NodeChildrenChanged of its children; a
// recursive one NodeCreated, NodeDataChanged and NodeDeleted of its node and
// of every node below it, and no NodeChildrenChanged. It lasts until
// RemoveWatches, or until the TCP connection ends: go-zookeeper does not set
// it again on the next one.
//
// ZooKeeper keeps one watch per path and connection, with one mode (before
// 3.9): a one-shot watch set later on the same path (GetW, ExistsW,
// ChildrenW) replaces the persistent one, which then fires once and is
// gone. Setting the persistent watch again restores it.
func (c *Conn) AddWatch(serverPath string, recursive bool) error {
	mode := int32(addWatchPersistent)
	if recursive {
		mode = addWatchPersistentRecursive
	}
	_, err := zkRequest(c.Conn, opAddWatch, &addWatchRequest{Path: serverPath, Mode: mode}, &emptyResponse{}, nil)
	return err
}

// RemoveWatches removes every watch the connection has on serverPath, of
// any kind (ZooKeeper's removeWatches with WatcherType.Any): a persistent
// one, and also a one-shot watch of go-zookeeper's on that very path, whose
// channel then never fires (until a reconnect sets it again). A path
// without a watch is an error (ZooKeeper's NoWatcher, which go-zookeeper
// does not name).
func (c *Conn) RemoveWatches(serverPath string) error {
	_, err := zkRequest(c.Conn, opRemoveWatches, &removeWatchesRequest{Path: serverPath, Type: watcherTypeAny}, &emptyResponse{}, nil)
	return err
}
