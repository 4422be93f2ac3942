// Package errs builds the module's error messages so that each carries one
// "gocurator: " prefix, however deeply errors wrap each other: each layer
// adds only what it knows. The chain is untouched (errors.Is and errors.As
// see every wrapped error); only the text of a wrapped error loses its own
// leading prefix.
//
//	gocurator: acquire /locks/x: create /locks/x/lock-: no connection within 200ms: zk: could not connect to a server
package errs

import (
	"fmt"
	"strconv"
	"strings"
)

// Prefix starts every error message of the module.
const Prefix = "gocurator: "

// Errorf is fmt.Errorf with Prefix in front of format, and with the
// arguments that are errors (wrapped with %w or not) printed without their
// own leading Prefix.
func Errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok && err != nil {
			args[i] = unprefixed{err}
		}
	}
	return fmt.Errorf(Prefix+format, args...)
}

// Strip returns msg without a leading Prefix.
func Strip(msg string) string { return strings.TrimPrefix(msg, Prefix) }

// unprefixed prints err without its leading Prefix and unwraps to it.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return Strip(u.err.Error()) }
func (u unprefixed) Unwrap() error { return u.err }

// maxPathInMessage is how much of a path a message quotes.
const maxPathInMessage = 200

// Path returns p for a message, shortened when it is long: an error about a
// path of a megabyte should not be a megabyte long.
func Path(p string) string {
	if len(p) <= maxPathInMessage {
		return p
	}
	return p[:maxPathInMessage/2] + "…(" + strconv.Itoa(len(p)) + " bytes)"
}
