package state

// ErrorPolicy decides which connection states mean that a lock or lease held
// through the client can no longer be trusted. It is Curator's
// ConnectionStateErrorPolicy.
type ErrorPolicy interface {
	// IsErrorState reports whether s must end the holder's trust in what it holds.
	IsErrorState(s ConnectionState) bool
}

// StandardErrorPolicy treats Suspended and Lost as errors. It is the default,
// and the one Curator's documentation recommends for locks: while Suspended
// you cannot know whether the session, and so the lock, still exists.
type StandardErrorPolicy struct{}

// IsErrorState reports true for Suspended and Lost.
func (StandardErrorPolicy) IsErrorState(s ConnectionState) bool {
	return s == Suspended || s == Lost
}

// SessionErrorPolicy treats only Lost as an error. It keeps a lock through a
// short connection blip, at the price of a window (up to the session timeout)
// in which another client may already hold the lock after a partition.
type SessionErrorPolicy struct{}

// IsErrorState reports true for Lost only.
func (SessionErrorPolicy) IsErrorState(s ConnectionState) bool {
	return s == Lost
}
