// Package zkconn is gocurator's one door to go-zookeeper: everything the
// framework needs below go-zookeeper's public API is done here, and only
// here, so that a change in go-zookeeper (or a move to a fork) breaks one
// package, whose contract test says what to look at.
//
// A Conn is one go-zookeeper connection (zk.Conn, embedded: its calls are
// the framework's attempts) and what go-zookeeper keeps to itself:
//
//   - the session's credentials and negotiated timeout, read from the
//     server's connect response as it passes (Session);
//   - when the client last heard from the servers (LastContact: the send
//     time of the newest request answered) and when the servers' leader
//     had surely renewed the session (LastRenewal: a follower cut off from
//     its leader answers for a while, renewing nothing there; renewals.go),
//     from which the framework tells when the servers could first expire
//     it;
//   - "this request has been written" (OnWritten), so that a read made
//     then reaches the server after it, without waiting for its reply;
//   - a guard against go-zookeeper's race between CreateContainer and Close
//     (CreateContainer);
//   - a Close that waits until go-zookeeper's goroutines have ended;
//   - what the last dial of each server gave (Dials: connection refused, a
//     handshake without a session...), which go-zookeeper only logs;
//   - a bound on each handshake, the session timeout over the number of
//     servers, as ZooKeeper's Java client (go-zookeeper waits 20/3 of the
//     session timeout, pinned to one server);
//   - the heartbeat: a ping of its own wherever nothing has been written on
//     the connection for a tenth of the session timeout, so that an idle
//     client's last sure renewal stays recent and the framework's clock
//     counts from renewals it sees come, not from go-zookeeper's timers
//     (heartbeat.go);
//   - ZooKeeper 3.6's persistent watches, which go-zookeeper has no call
//     for (AddWatch, RemoveWatches; watches.go).
//
// CloseSession closes a session on a server from a connection of its own,
// and staticHosts gives go-zookeeper its servers without DNS.
//
// # What it assumes of go-zookeeper v1.0.4
//
// contract_test.go checks each of these against a real server and fails,
// naming the assumption and where to look, when one stops holding:
//
//  1. Every connection goes through the Dialer given with zk.WithDialer;
//     the first frame written on it is the ConnectRequest and the first
//     frame read the ConnectResponse (conn.go, authenticate).
//  2. Each Write carries whole frames: a request is written by one Write
//     (conn.go, sendData and sendLoop), so a request's path can be read
//     from what one Write carries.
//  3. Requests are written in the order they were made, one connection at
//     a time, and a reply carries its request's xid (pings: -2; watch
//     events: -1 and no request).
//  4. zk.Conn.SessionID changes, on the same Conn, when the session expires
//     and a new one begins (conn.go, authenticate).
//  5. The event channel zk.Connect returns is closed once go-zookeeper's
//     goroutines for the Conn have ended, after Close.
//  6. The HostProvider given with zk.WithHostProvider is asked for every
//     server it dials (Next), and told of a connection (Connected).
//  7. CreateContainer and CreateTTL, unlike Create, read their reply's path
//     even when the call ended because the connection closed, while the
//     receive loop may be decoding that reply into it (a data race;
//     container.go).
//  8. A watch's channel (GetW, ChildrenW, ExistsW) gets one event and is
//     then closed, when the watch fires and when the session's watches are
//     dropped (conn.go, notifyWatches and invalidateWatches): every
//     goroutine receiving from it wakes, one of them with the event. The
//     recipes' shared watches rely on it (recipes/internal/acquire/watches.go).
//  9. The session events name the server of the connection (Event.Server):
//     StateConnected once a dial has connected, then StateHasSession, or
//     StateExpired, or StateDisconnected when the handshake failed; and
//     StateDisconnected when a connection with a session drops (conn.go,
//     connect, loop and setState). The dial log relies on it (dials.go).
//
// The timing of a session is the door's own (heartbeat.go) and the
// framework's (framework/clock.go), counted from the renewals the tap sees;
// what it still takes from go-zookeeper's timers, T being the negotiated
// session timeout:
//
//  10. go-zookeeper drops a connection on which it has read nothing for ⅔ T
//     (its read timeout: conn.go, setTimeouts and recvLoop's
//     SetReadDeadline), with StateDisconnected. After a silence on a TCP
//     connection that did not end (a black hole), that is when it dials
//     again: the framework's clock has posted SUSPENDED before, and a blip
//     of up to T/2 is over by then (docs/guarantees.md, the timeline).
//  11. go-zookeeper writes a ping every T/3, whatever else it writes
//     (conn.go, sendLoop's pingTicker). Nothing of the timing rests on
//     these pings any more (the heartbeat comes sooner); it is why a busy
//     connection carries no ping of the door's, and what an idle one
//     carries besides the heartbeat's.
//  12. go-zookeeper's reader ignores the answer to a ping (xid -2), whoever
//     wrote the ping (conn.go, recvLoop), and its writes go through the
//     net.Conn the Dialer returned, one Write a frame, with the write
//     deadline it sets there (sendData, sendLoop): the heartbeat writes its
//     ping between two of them, and puts that deadline back after.
//  13. go-zookeeper dials with a timeout of one second (connectTimeout) and
//     waits a second before a dial for which the HostProvider says
//     retryStart (conn.go, connect): a dial made into a silence gives up
//     after a second, and a server that is down is tried at most once a
//     second (hosts.go).
//
// And for ZooKeeper 3.6's persistent watches, which go-zookeeper cannot send:
//
//  14. (*zk.Conn).request, unexported and reached by go:linkname, sends a
//     request of any opcode whose body is a struct of jute's types
//     (encodePacket encodes any struct by reflection), with the
//     connection's next xid, in order with the other requests, and returns
//     the reply's error, or ErrConnectionClosed (conn.go, request,
//     queueRequest and sendData). AddWatch and RemoveWatches rely on it.
//  15. Every watch event read (xid -1) goes to the event callback, whether
//     or not go-zookeeper has a watcher for its path, before its one-shot
//     watchers hear it (conn.go, recvLoop and sendEvent): a persistent
//     watch's events reach Config.OnEvent, and go-zookeeper's own watches
//     below it still fire.
package zkconn
