package framework

import (
	"errors"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/internal/errs"
)

// ErrClosed is returned by every operation on a client after Close. It
// unwraps to zk.ErrClosing, so code written against go-zookeeper keeps working.
var ErrClosed = errs.Errorf("client is closed: %w", zk.ErrClosing)

// ErrInvalidArgument marks an error caused by a bad argument. Such are an
// empty connect string, a timeout out of range, node data too large for the
// servers' jute.maxbuffer, and more. Bad paths unwrap to zk.ErrInvalidPath
// too.
var ErrInvalidArgument = errors.New("gocurator: invalid argument")

// OpError records a failed ZooKeeper operation: what was attempted, on which
// path, and why. Err is the cause; errors.Is and errors.As see through OpError
// to go-zookeeper's sentinels, for example
//
//	if errors.Is(err, zk.ErrNoNode) { ... }
type OpError struct {
	// Op is the operation, for example "create" or "delete".
	Op string
	// Path is the path the caller gave (without the client's namespace).
	Path string
	// Err is the underlying error.
	Err error
}

// Error returns "gocurator: <op> <path>: <cause>", with one "gocurator: "
// however deep the cause, and a long path shortened.
func (e *OpError) Error() string {
	return errs.Prefix + e.Op + " " + errs.Path(e.Path) + ": " + errs.Strip(e.Err.Error())
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

func opError(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var oe *OpError
	if errors.As(err, &oe) && oe.Op == op && oe.Path == path {
		return err
	}
	return &OpError{Op: op, Path: path, Err: err}
}

func invalidArgument(format string, args ...any) error {
	return errs.Errorf("%w: "+format, append([]any{ErrInvalidArgument}, args...)...)
}
