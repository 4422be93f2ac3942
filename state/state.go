// Package state holds a gocurator client's connection states, the listener
// contract for hearing them, and the error policies that judge them. An error
// policy says which states a lock holder must treat as "no longer
// trustworthy".
//
// The values and their meaning follow Apache Curator's ConnectionState:
//
//	CONNECTED    the first successful connection; sent at most once per client
//	SUSPENDED    the connection was lost; the session may still be alive
//	RECONNECTED  connected again after SUSPENDED, LOST or READ_ONLY
//	LOST         the session is gone (expired on the server, replaced by a new
//	             one, or presumed gone after staying SUSPENDED until just
//	             before the servers could expire it)
//	READ_ONLY    connected to a read-only server (defined for completeness:
//	             go-zookeeper cannot ask for read-only sessions, so a gocurator
//	             client never reports it)
package state

import "strconv"

// ConnectionState is the state of a client's connection to ZooKeeper as
// Curator defines it. The zero value is not a valid state: it stands for
// "never connected yet".
type ConnectionState int

// The connection states, in Curator's order.
const (
	// Connected is posted once, on the client's first successful connection.
	Connected ConnectionState = iota + 1
	// Suspended is posted when the connection drops. The session, and every
	// ephemeral node and lock that belongs to it, may still be alive.
	Suspended
	// Reconnected is posted when the client is connected again after
	// Suspended, Lost or ReadOnly. After Lost it is a new session.
	Reconnected
	// Lost is posted when the session is gone, or must be presumed gone. The
	// server said it expired, the client found itself in a new session, or it
	// stayed Suspended until just before the servers could expire the session
	// (package framework says when). Every lock held through the session must
	// be considered lost.
	Lost
	// ReadOnly is posted when connected to a server in read-only mode.
	ReadOnly
)

var names = [...]string{
	Connected:   "CONNECTED",
	Suspended:   "SUSPENDED",
	Reconnected: "RECONNECTED",
	Lost:        "LOST",
	ReadOnly:    "READ_ONLY",
}

// String returns Curator's name for the state, such as "SUSPENDED".
func (s ConnectionState) String() string {
	if s >= Connected && int(s) < len(names) {
		return names[s]
	}
	if s == 0 {
		return "NOT_CONNECTED"
	}
	return "ConnectionState(" + strconv.Itoa(int(s)) + ")"
}

// IsConnected reports whether the state means the client can talk to the
// ensemble: true for Connected, Reconnected and ReadOnly.
func (s ConnectionState) IsConnected() bool {
	return s == Connected || s == Reconnected || s == ReadOnly
}
