// Command zklock takes, inspects and revokes Apache Curator-compatible
// ZooKeeper locks from the shell. The locks are the very trees Curator 5.x
// and gocurator write, so a shell script, a Java Curator service and a Go
// service can all contend for one lock. Its manual is docs/operations.md;
// `zklock -h` prints its usage (topUsage), `zklock COMMAND -h` a command's.
//
// run takes the lock at PATH and runs COMMAND under it, with the lock's
// fencing token and node in its environment; ls prints a lock's queue
// (--watch: at every change); members prints a group's members (Curator's
// GroupMember; --watch: at every change); revoke asks a lock's holders to release, as
// Curator's Revoker does. The global flags, each command's flags, the JSON
// lines and the exit statuses (run's own: the consts below) are in
// docs/operations.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

// Exit statuses: every code zklock uses, in one place.
const (
	exitOK    = 0 // success (ls, members, revoke); COMMAND's own 0 (run)
	exitError = 1 // ls, members, revoke: an error (connection, ZooKeeper, no holder, not revocable)
	exitUsage = 2 // ls, members, revoke and the top level: a usage error

	// run's own outcomes, above what commands commonly use, as timeout(1)
	// and env(1) keep 124..127.
	exitLost        = 122 // the lock was lost (before or while COMMAND ran)
	exitRevoked     = 123 // COMMAND was stopped because the lock was revoked
	exitNotAcquired = 124 // --try-once found the lock held, or --timeout passed
	exitRunFailed   = 125 // zklock run itself failed: usage, connection, ZooKeeper
	exitCannotRun   = 126 // COMMAND was found but could not be run
	exitNotFound    = 127 // COMMAND was not found
	exitSignalBase  = 128 // + N: COMMAND died of signal N, or zklock got N while waiting
)

// streams are the standard streams and process environment a zklock
// invocation works with, so that tests can run it in-process.
type streams struct {
	stdin  io.Reader // COMMAND's standard input; nil means /dev/null
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	s := streams{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(zklockMain(context.Background(), os.Args[1:], s, sigs))
}

// topUsage is printed for -h at the top level.
const topUsage = `Usage:
  zklock [global flags] run [flags] PATH -- COMMAND [ARGS...]
  zklock [global flags] ls [--watch] [flags] PATH
  zklock [global flags] members [--watch] PATH
  zklock [global flags] revoke [--force] [--wait [--timeout D]] NODE|PATH
  zklock --version

Run 'zklock COMMAND --help' for a command's own flags.

Global flags (also accepted after the command):
`

// zklockMain runs zklock with args (without the program name) and returns
// its exit status. signals are the signals zklock itself received: run
// passes them on to its command; they interrupt ls and revoke.
func zklockMain(ctx context.Context, args []string, s streams, signals <-chan os.Signal) int {
	g := newGlobalOptions(s.getenv)
	fs := flag.NewFlagSet("zklock", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors and usage are printed below
	g.register(fs)
	showVersion := fs.Bool("version", false, "print zklock's version and exit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), topUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(fs, s.stdout)
			return exitOK
		}
		se := topFlagError(fs, args, err)
		reportError(s.stderr, g.json, se)
		return se.code
	}
	if *showVersion {
		fmt.Fprintf(s.stdout, "zklock %s\n", version())
		return exitOK
	}
	if fs.NArg() == 0 {
		reportError(s.stderr, g.json, withHint("zklock", usageErrorf("no command given (want run, ls, members or revoke)")))
		return exitUsage
	}
	sub, rest := fs.Arg(0), fs.Args()[1:]
	if sub == "run" {
		return cmdRun(ctx, g, rest, s, signals)
	}
	ctx, stop := interruptible(ctx, signals)
	defer stop()
	var err error
	switch sub {
	case "ls", "list":
		err = cmdLs(ctx, g, rest, s)
	case "members":
		err = cmdMembers(ctx, g, rest, s)
	case "revoke":
		err = cmdRevoke(ctx, g, rest, s)
	case "help":
		switch {
		case len(rest) == 0:
			printUsage(fs, s.stdout)
			return exitOK
		case rest[0] == "help" || len(rest) > 1:
			err = withHint("zklock", usageErrorf("help wants at most one command (run, ls, members or revoke)"))
		default:
			return zklockMain(ctx, []string{rest[0], "-h"}, s, signals)
		}
	default:
		err = withHint("zklock", usageErrorf("unknown command %q (want run, ls, members or revoke)", sub))
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		var interrupted *statusError
		if errors.As(context.Cause(ctx), &interrupted) {
			err = interrupted // exits 128+N
		}
		reportError(s.stderr, g.json, err)
	}
	return exitCode(err)
}

// version is zklock's version: its main module's, as the go command
// stamped it into the binary ("(devel)" when built from a checkout without
// version control information).
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" {
		return "(devel)"
	}
	return bi.Main.Version
}

// interruptible returns ctx, ended when a signal comes, with a cause that
// exits 128+N for signal N, and a function that stops listening (and waits
// until it has) and returns the signal that came, if one did: also one
// that came as it stopped, too late to end ctx.
func interruptible(ctx context.Context, signals <-chan os.Signal) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var got os.Signal
	go func() {
		defer close(done)
		select {
		case got = <-signals:
			cancel(&statusError{code: signalStatus(got), err: fmt.Errorf("interrupted by %v", got)})
		case <-ctx.Done():
		}
	}()
	return ctx, func() os.Signal {
		cancel(nil)
		<-done
		return got
	}
}
