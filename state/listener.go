package state

// Listener hears every connection state change of a client, in order.
//
// A client calls its listeners from one goroutine of its own, never from the
// ZooKeeper connection goroutine, so a slow listener delays only later
// notifications, never the connection. A listener must not block forever.
type Listener interface {
	// StateChanged is called with each new state.
	StateChanged(newState ConnectionState)
}

// ListenerFunc adapts an ordinary function to the Listener interface.
type ListenerFunc func(newState ConnectionState)

// StateChanged calls f(newState).
func (f ListenerFunc) StateChanged(newState ConnectionState) { f(newState) }
