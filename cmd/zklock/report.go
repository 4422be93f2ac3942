package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// statusError is an error with the exit status it calls for.
type statusError struct {
	code int
	err  error
	hint string // for a usage error: where to read the usage, printed after the message
}

// Error returns the message of the underlying error.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *statusError) Unwrap() error { return e.err }

// usageErrorf is an error that exits 2 (run's: 125).
func usageErrorf(format string, args ...any) error {
	return &statusError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// withHint gives err, if it is a usage error, the hint to cmd's --help
// ("zklock", "zklock run"), and returns it.
func withHint(cmd string, err error) error {
	var se *statusError
	if errors.As(err, &se) && se.code == exitUsage && se.hint == "" {
		se.hint = fmt.Sprintf("Run '%s --help' for usage.", cmd)
	}
	return err
}

// exitCode returns the exit status err calls for: 0 for nil, the code of a
// statusError, 1 otherwise.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var se *statusError
	if errors.As(err, &se) {
		return se.code
	}
	return exitError
}

// errorLine is the JSON line of every error zklock reports, whatever the
// command: the one shape of an error, defined here only, its fields as
// docs/operations.md (zklock) describes them.
type errorLine struct {
	Event   string `json:"event"` // "error"
	Outcome string `json:"outcome"`
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// writeError writes an error as an errorLine (asJSON) or as "zklock:
// <message>".
func writeError(w io.Writer, asJSON bool, outcome string, status int, message string) {
	if asJSON {
		writeJSONLine(w, errorLine{Event: "error", Outcome: outcome, Status: status, Message: message})
		return
	}
	fmt.Fprintf(w, "zklock: %s\n", message)
}

// reportError writes err to w (writeError), then, as text, the hint of a
// usage error.
func reportError(w io.Writer, asJSON bool, err error) {
	writeError(w, asJSON, "error", exitCode(err), err.Error())
	var se *statusError
	if !asJSON && errors.As(err, &se) && se.hint != "" {
		fmt.Fprintln(w, se.hint)
	}
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
