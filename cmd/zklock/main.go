// Command zklock takes, inspects and revokes Apache Curator-compatible
// ZooKeeper locks from the shell. The locks are the very trees Curator 5.x
// and gocurator write, so a shell script, a Java Curator service and a Go
// service can all contend for one lock.
//
// Usage:
//
//	zklock [global flags] run [flags] PATH -- COMMAND [ARGS...]
//	zklock [global flags] ls [flags] PATH
//	zklock [global flags] revoke [flags] NODE|PATH
//	zklock --version
//
// run takes the lock at PATH (an InterProcessMutex by default; --read or
// --write for the two halves of an InterProcessReadWriteLock; --semaphore N
// for a lease of an InterProcessSemaphoreV2 with N leases), runs COMMAND with
// the lock's fencing token and node in its environment, releases the lock
// when COMMAND exits and exits with COMMAND's status. COMMAND is not run if
// the fencing token cannot be read after acquiring: run then releases the
// lock and exits 125, or exits 122 if the lock was lost. The environment gets:
//
//	ZKLOCK_TOKEN      the fencing token: the lock node's czxid, which strictly
//	                  increases across every holder of the lock
//	ZKLOCK_NODE       the lock (or lease) node's path, as `zklock revoke` takes it
//	ZKLOCK_PATH       the lock path PATH
//	ZKLOCK_KIND       mutex, read, write or lease
//	ZKLOCK_SESSION    the ZooKeeper session id holding the node, 0x-prefixed hex
//	ZKLOCK_NAMESPACE  the namespace (--namespace), possibly empty
//
// If the lock can no longer be trusted while COMMAND runs (the connection is
// SUSPENDED or the session LOST; --error-policy session waits for LOST), or
// its holder is asked to release (--revocable, then `zklock revoke`),
// COMMAND's process group gets SIGTERM, then SIGKILL after --grace. SIGINT,
// SIGTERM and SIGHUP sent to zklock are passed on to COMMAND's process group.
// COMMAND runs in a process group of its own, so it cannot read from the
// terminal. run's own flags: --timeout D and --try-once (give up instead of
// waiting), --grace D, --revocable, --error-policy standard|session, --data
// TEXT (the lock node's data), -v; see zklock run -h.
//
// With --json, run's own lines on stderr are JSON objects, one per line,
// with the fields that apply: event, path, kind, node, session (0x-hex),
// token, and on the last line, which always comes, outcome (ok, lost,
// revoked, not-acquired, error, cannot-run, not-found, interrupted), status
// (what zklock exits with) and command_status (the command's own, if it
// ran); message is the human text.
//
// ls prints the queue at PATH as every participant computes it: holders
// first, then waiters, with each node's kind, session, data and age. It
// recognises the mutex, read-write and semaphore (PATH/locks + PATH/leases)
// layouts and warns about children that disturb the order. A PATH that is no
// lock but a parent of locks gets each lock below it listed (3 levels down,
// 20 locks at most); a PATH with no lock at or below it, without
// --namespace, gets a warning if /<ns>PATH is a lock for a top-level <ns>.
//
// revoke asks the holder of NODE to release it, by writing Curator's
// "__REVOKE__" to the node (Curator's Revoker.attemptRevoke). Only holders
// that made their lock revocable react. Given a lock PATH instead, it asks
// the lock's current holders (a mutex's one, a read-write lock's writer or
// readers) and names each node it asked; a PATH without a holder is an
// error, and so are a semaphore (Curator's leases cannot be revoked), a
// leader latch (Curator's latch has no revocation), and a lease or latch
// NODE, whose data revoke would overwrite. A NODE
// already gone is no error: revoke says so and exits 0, as attemptRevoke
// does nothing for it.
//
// --version prints "zklock <version>" (the main module's version, "(devel)"
// in a build from a checkout). -h or --help, at the top or after a
// subcommand, and "zklock help [COMMAND]" print the usage to stdout and exit
// 0; a usage error prints its message and the usage to stderr.
//
// Global flags (also accepted after the subcommand):
//
//	--servers host:port,...   connect string (default $ZK_SERVERS, else 127.0.0.1:2181)
//	--namespace ns            Curator namespace (usingNamespace): paths are relative to /ns
//	--auth user:password      digest authentication
//	--acl open|creator        ACL of the nodes zklock creates (default open; creator needs --auth)
//	--session-timeout d       session timeout asked of the server (default 30s)
//	--connect-timeout d       how long to wait for a connection (default 15s)
//	--json                    JSON output (ls, revoke, and run's own messages)
//	--tls                     connect with TLS (to the servers' secureClientPort)
//	--tls-ca file             PEM CA certificates to trust (default: the system's)
//	--tls-cert file           PEM client certificate (with --tls-key file)
//	--tls-server-name name    name to check the servers' certificates against
//
// Exit status. ls and revoke exit 0 on success, 1 on an error (connection,
// ZooKeeper, a missing node), 2 on a usage error. run passes COMMAND's status
// on and keeps, as timeout(1) and env(1) do, the high codes for its own
// outcomes, so that a COMMAND's own 1, 2 or 3 cannot be mistaken for them:
//
//	COMMAND's COMMAND ran with the lock held and exited: its status, 0..255,
//	          passed on
//	122       the lock was lost, before COMMAND started (then it is not run)
//	          or while it ran (then it got SIGTERM, and SIGKILL after --grace)
//	123       COMMAND was stopped because the lock was revoked (--revocable)
//	124       the lock was not acquired: --try-once found it held, or
//	          --timeout passed
//	125       zklock itself failed: a usage error, no connection, a ZooKeeper
//	          error, a fencing token that could not be read
//	126       COMMAND was found but could not be run
//	127       COMMAND was not found
//	128+N     COMMAND died of signal N (as shells report it), or zklock got
//	          signal N while waiting for the lock (then nothing was run)
//
// A COMMAND that itself exits 122..127 is passed on unchanged, as
// timeout(1) does; with --json, the outcome on the last line tells them
// apart.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/retry"
)

// Exit statuses: every code zklock uses, in one place.
const (
	exitOK    = 0 // success (ls, revoke); COMMAND's own 0 (run)
	exitError = 1 // ls, revoke: an error (connection, ZooKeeper, a missing node)
	exitUsage = 2 // ls, revoke and the top level: a usage error

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

// Defaults of the global flags.
const (
	defaultServers        = "127.0.0.1:2181"
	defaultSessionTimeout = 30 * time.Second
	defaultConnectTimeout = 15 * time.Second
)

// streams are the standard streams and process environment a zklock
// invocation works with, so that tests can run it in-process.
type streams struct {
	stdin  io.Reader // COMMAND's standard input; nil means /dev/null
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// globalOptions are the flags every subcommand accepts.
type globalOptions struct {
	servers        string
	namespace      string
	auth           string
	acl            string
	sessionTimeout time.Duration
	connectTimeout time.Duration
	json           bool
	tls            bool   // connect with TLS (implied by the other tls flags)
	tlsCA          string // PEM file of the CAs to trust; "" trusts the system's
	tlsCert        string // PEM client certificate
	tlsKey         string // PEM key of tlsCert
	tlsServerName  string // name to verify the servers' certificates against
}

// register adds the global flags to fs, with the options' current values as
// defaults, so a subcommand's flag set keeps what the top level parsed.
func (o *globalOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.servers, "servers", o.servers, "ZooKeeper connect string `host:port,...` ($ZK_SERVERS if set)")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "Curator namespace: every path is relative to /`ns`")
	fs.StringVar(&o.auth, "auth", o.auth, "digest authentication `user:password`")
	fs.StringVar(&o.acl, "acl", o.acl, "ACL of created nodes: open (world:anyone) or creator (needs --auth)")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", o.sessionTimeout, "session timeout asked of the server")
	fs.DurationVar(&o.connectTimeout, "connect-timeout", o.connectTimeout, "how long to wait for a connection")
	fs.BoolVar(&o.json, "json", o.json, "JSON output")
	fs.BoolVar(&o.tls, "tls", o.tls, "connect with TLS (to the servers' secureClientPort)")
	fs.StringVar(&o.tlsCA, "tls-ca", o.tlsCA, "PEM `file` of the CA certificates to trust (default: the system's); implies --tls")
	fs.StringVar(&o.tlsCert, "tls-cert", o.tlsCert, "PEM `file` of the client certificate; implies --tls")
	fs.StringVar(&o.tlsKey, "tls-key", o.tlsKey, "PEM `file` of the client certificate's key")
	fs.StringVar(&o.tlsServerName, "tls-server-name", o.tlsServerName, "`name` to check the servers' certificates against (default: the host of each server)")
}

// validate checks the global flags.
func (o *globalOptions) validate() error {
	if strings.TrimSpace(o.servers) == "" {
		return usageErrorf("--servers must not be empty")
	}
	if o.auth != "" && !strings.Contains(o.auth, ":") {
		return usageErrorf("--auth wants user:password")
	}
	switch o.acl {
	case "open":
	case "creator":
		if o.auth == "" {
			return usageErrorf("--acl creator needs --auth")
		}
	default:
		return usageErrorf("--acl must be open or creator, not %q", o.acl)
	}
	if o.sessionTimeout <= 0 || o.connectTimeout <= 0 {
		return usageErrorf("--session-timeout and --connect-timeout must be positive")
	}
	if (o.tlsCert == "") != (o.tlsKey == "") {
		return usageErrorf("--tls-cert and --tls-key go together")
	}
	if o.tlsCA != "" || o.tlsCert != "" || o.tlsServerName != "" {
		o.tls = true
	}
	if o.namespace != "" {
		if err := framework.ValidatePath("/" + o.namespace); err != nil || strings.HasSuffix(o.namespace, "/") {
			return usageErrorf("--namespace %q is not a valid namespace (no leading or trailing /)", o.namespace)
		}
	}
	return nil
}

// clientOptions turns the global flags into framework options.
func (o *globalOptions) clientOptions() []framework.Option {
	opts := []framework.Option{framework.WithSessionTimeout(o.sessionTimeout)}
	if o.namespace != "" {
		opts = append(opts, framework.WithNamespace(o.namespace))
	}
	if o.auth != "" {
		opts = append(opts, framework.WithAuth("digest", []byte(o.auth)))
	}
	if o.acl == "creator" {
		creator := zk.AuthACL(zk.PermAll) // Curator's CREATOR_ALL_ACL
		opts = append(opts, framework.WithACLProvider(framework.ACLProviderFunc(func(string) []zk.ACL { return creator })))
	}
	return opts
}

// tlsDialer returns a dialer that speaks TLS from the first byte, as a
// ZooKeeper secureClientPort expects, configured from the tls flags.
func (o *globalOptions) tlsDialer() (zk.Dialer, error) {
	conf := &tls.Config{ServerName: o.tlsServerName, MinVersion: tls.VersionTLS12}
	if o.tlsCA != "" {
		pem, err := os.ReadFile(o.tlsCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: no PEM certificate in %s", o.tlsCA)
		}
		conf.RootCAs = pool
	}
	if o.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(o.tlsCert, o.tlsKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	return func(network, address string, timeout time.Duration) (net.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, network, address, conf)
	}, nil
}

// connect makes a client from the global flags and waits for its first
// connection, at most --connect-timeout.
func (o *globalOptions) connect(ctx context.Context, extra ...framework.Option) (*framework.Client, error) {
	opts := append(o.clientOptions(), extra...)
	if o.tls {
		dial, err := o.tlsDialer()
		if err != nil {
			return nil, err
		}
		opts = append(opts, framework.WithDialer(dial))
	}
	client, err := framework.New(o.servers, retry.NewExponentialBackoff(200*time.Millisecond, 5), opts...)
	if err != nil {
		if errors.Is(err, framework.ErrInvalidArgument) {
			return nil, usageErrorf("%v", err)
		}
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, o.connectTimeout)
	defer cancel()
	if err := client.BlockUntilConnected(cctx); err != nil {
		client.Close()
		return nil, fmt.Errorf("cannot connect to %s within %v: %w", o.servers, o.connectTimeout, err)
	}
	return client, nil
}

// statusError is an error with the exit status it calls for.
type statusError struct {
	code  int
	err   error
	usage string // for a usage error: the usage to print after the message
}

// Error returns the message of the underlying error.
func (e *statusError) Error() string { return e.err.Error() }

// Unwrap returns the underlying error.
func (e *statusError) Unwrap() error { return e.err }

// usageErrorf is an error that exits 2.
func usageErrorf(format string, args ...any) error {
	return &statusError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// exitCode returns the exit status err calls for: 0 for nil, the code of a
// statusError, 1 otherwise.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var ee *statusError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitError
}

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	s := streams{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv}
	os.Exit(zklockMain(context.Background(), os.Args[1:], s, sigs))
}

// topUsage is printed for -h and usage errors at the top level.
const topUsage = `Usage:
  zklock [global flags] run [--read | --write | --semaphore N] [flags] PATH -- COMMAND [ARGS...]
  zklock [global flags] ls [flags] PATH
  zklock [global flags] revoke [flags] NODE|PATH
  zklock --version

Run "zklock COMMAND -h" for a subcommand's flags.

Global flags (also accepted after the subcommand):
`

// zklockMain runs zklock with args (without the program name) and returns
// its exit status. signals are the signals zklock itself received; run
// passes them on to its command.
func zklockMain(ctx context.Context, args []string, s streams, signals <-chan os.Signal) int {
	if s.getenv == nil {
		s.getenv = func(string) string { return "" }
	}
	g := &globalOptions{
		servers:        s.getenv("ZK_SERVERS"),
		acl:            "open",
		sessionTimeout: defaultSessionTimeout,
		connectTimeout: defaultConnectTimeout,
	}
	if g.servers == "" {
		g.servers = defaultServers
	}
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
		se := &statusError{code: exitUsage, err: err}
		withUsage(fs, se)
		if subcommandOf(fs, args) == "run" {
			se.code = exitRunFailed // a status COMMAND could not have given
		}
		reportError(s.stderr, g.json, se)
		return se.code
	}
	if *showVersion {
		fmt.Fprintf(s.stdout, "zklock %s\n", version())
		return exitOK
	}
	if fs.NArg() == 0 {
		reportError(s.stderr, g.json, withUsage(fs, usageErrorf("no command given (want run, ls or revoke)")))
		return exitUsage
	}
	var err error
	switch sub, rest := fs.Arg(0), fs.Args()[1:]; sub {
	case "run":
		return cmdRun(ctx, g, rest, s, signals)
	case "ls", "list":
		err = cmdLs(ctx, g, rest, s)
	case "revoke":
		err = cmdRevoke(ctx, g, rest, s)
	case "help":
		switch {
		case len(rest) == 0:
			printUsage(fs, s.stdout)
			return exitOK
		case rest[0] == "help" || len(rest) > 1:
			err = withUsage(fs, usageErrorf("help wants at most one command (run, ls or revoke)"))
		default:
			return zklockMain(ctx, []string{rest[0], "-h"}, s, signals)
		}
	default:
		err = withUsage(fs, usageErrorf("unknown command %q (want run, ls or revoke)", sub))
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
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

// printUsage writes fs's usage (its Usage function) to w.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	fs.SetOutput(w)
	defer fs.SetOutput(io.Discard)
	fs.Usage()
}

// withUsage attaches fs's usage to err if it is a usage error, for
// reportError to print after the message. Other errors are returned as
// they are.
func withUsage(fs *flag.FlagSet, err error) error {
	var se *statusError
	if errors.As(err, &se) && se.code == exitUsage {
		var b strings.Builder
		printUsage(fs, &b)
		se.usage = b.String()
	}
	return err
}

// parseFailure handles what parsing and checking a subcommand's arguments
// returned: for -h or --help it prints fs's usage to stdout and returns
// flag.ErrHelp (exit 0); a usage error gets fs's usage attached (withUsage).
func parseFailure(fs *flag.FlagSet, s streams, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		printUsage(fs, s.stdout)
		return err
	}
	return withUsage(fs, err)
}

// subcommandOf returns the subcommand in args, skipping the global flags of
// fs and their values, for when parsing the global flags failed: a usage
// error in front of run exits as run's own failures do. An unknown flag is
// taken to have no value.
func subcommandOf(fs *flag.FlagSet, args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		if len(a) < 2 || a[0] != '-' {
			return a
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		i++ // the flag's value
	}
	return ""
}

// errorLine is the JSON line reportError writes: run's fields for a
// failure (event, outcome, status, message), and the error and exit fields
// ls and revoke have always had.
type errorLine struct {
	// Event is "error".
	Event string `json:"event"`
	// Outcome is "error".
	Outcome string `json:"outcome"`
	// Status is the status zklock exits with.
	Status int `json:"status"`
	// Message says what went wrong.
	Message string `json:"message"`
	// Error is Message, by its older name.
	Error string `json:"error"`
	// Exit is Status, by its older name.
	Exit int `json:"exit"`
}

// reportError writes err to w: "zklock: <err>", then the usage of a usage
// error; or an errorLine as JSON (without the usage, which is no JSON).
func reportError(w io.Writer, asJSON bool, err error) {
	if asJSON {
		code := exitCode(err)
		writeJSONLine(w, errorLine{Event: "error", Outcome: "error", Status: code, Message: err.Error(), Error: err.Error(), Exit: code})
		return
	}
	fmt.Fprintf(w, "zklock: %v\n", err)
	var se *statusError
	if errors.As(err, &se) && se.usage != "" {
		fmt.Fprintf(w, "\n%s", se.usage)
	}
}

// writeJSONLine writes v as one line of JSON.
func writeJSONLine(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "zklock: %v\n", err)
		return
	}
	w.Write(append(b, '\n'))
}

// parseArgs parses fs over args, allowing flags after positional arguments
// too (flag stops at the first positional one): it returns the positional
// arguments. Anything after a "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &statusError{code: exitUsage, err: err}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// fs.Parse stopped at a positional argument, or after "--".
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet returns a subcommand's flag set with the global flags. It
// prints nothing itself: parseFailure prints its usage (synopsis, then
// flags) to stdout for -h, and reportError to stderr after a usage error.
func newFlagSet(name, synopsis string, g *globalOptions) *flag.FlagSet {
	fs := flag.NewFlagSet("zklock "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage:\n  %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parseOnePath parses fs over args and checks the global flags and the one
// positional argument, a path called what ("PATH", "NODE"); hint says what
// the argument is, for the usage error.
func parseOnePath(fs *flag.FlagSet, g *globalOptions, args []string, what, hint string) (string, error) {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return "", err
	}
	if err := g.validate(); err != nil {
		return "", err
	}
	if len(pos) != 1 {
		return "", usageErrorf("%s wants exactly one %s%s, got %d arguments", fs.Name(), what, hint, len(pos))
	}
	return pos[0], validatePath(what, pos[0])
}

// validatePath checks a path given on the command line, called what.
func validatePath(what, p string) error {
	if err := framework.ValidatePath(p); err != nil {
		return usageErrorf("%s %q: %v", what, p, err)
	}
	if p == "/" {
		return usageErrorf("%s must not be the root", what)
	}
	return nil
}
