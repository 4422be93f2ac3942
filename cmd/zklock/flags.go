package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/retry"
	"github.com/gocurator/curator/state"
)

// Defaults of the global flags. The session timeout is half the library's
// (framework.DefaultSessionTimeout, Curator's 60 s): see sessionTimeoutUsage.
const (
	defaultServers        = "127.0.0.1:2181"
	defaultSessionTimeout = 30 * time.Second
	defaultConnectTimeout = 15 * time.Second
)

// sessionTimeoutUsage is --session-timeout's help, with the reason for its default.
const sessionTimeoutUsage = "session timeout asked of the server; half the library's 60s, so that the lock of a zklock that dies unclosed (SIGKILL, a crashed host) is free sooner"

// globalOptions are the flags every command accepts: how to connect, and
// how to print.
type globalOptions struct {
	servers        string
	namespace      string
	auth           string
	sessionTimeout time.Duration
	connectTimeout time.Duration
	json           bool
	tls            bool   // connect with TLS (implied by the other tls flags)
	tlsCA          string // PEM file of the CAs to trust; "" trusts the system's
	tlsCert        string // PEM client certificate
	tlsKey         string // PEM key of tlsCert
	tlsServerName  string // name to verify the servers' certificates against
}

// newGlobalOptions returns the global flags' defaults; getenv gives $ZK_SERVERS.
func newGlobalOptions(getenv func(string) string) *globalOptions {
	return &globalOptions{servers: cmp.Or(getenv("ZK_SERVERS"), defaultServers), sessionTimeout: defaultSessionTimeout, connectTimeout: defaultConnectTimeout}
}

// register adds the global flags to fs, with the options' current values as
// defaults, so a command's flag set keeps what the top level parsed.
func (o *globalOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&o.servers, "servers", o.servers, "ZooKeeper connect string `host:port,...` ($ZK_SERVERS if set)")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "Curator namespace: every path is relative to /`ns`")
	fs.StringVar(&o.auth, "auth", o.auth, "digest authentication `user:password`")
	fs.DurationVar(&o.sessionTimeout, "session-timeout", o.sessionTimeout, sessionTimeoutUsage)
	fs.DurationVar(&o.connectTimeout, "connect-timeout", o.connectTimeout, "how long to wait for a connection")
	fs.BoolVar(&o.json, "json", o.json, "JSON lines: one object per line")
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
	if i := strings.IndexByte(o.servers, '/'); i >= 0 {
		return usageErrorf("--servers %q ends in a chroot path (%s); zklock takes none: give the servers alone and --namespace %s",
			o.servers, o.servers[i:], cmp.Or(strings.Trim(o.servers[i:], "/"), "NS"))
	}
	if o.auth != "" && !strings.Contains(o.auth, ":") {
		return usageErrorf("--auth wants user:password")
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
	opts := append([]framework.Option{framework.WithSessionTimeout(o.sessionTimeout)}, extra...)
	if o.namespace != "" {
		opts = append(opts, framework.WithNamespace(o.namespace))
	}
	if o.auth != "" {
		opts = append(opts, framework.WithAuth("digest", []byte(o.auth)))
	}
	if o.tls {
		dial, err := o.tlsDialer()
		if err != nil {
			return nil, err
		}
		opts = append(opts, framework.WithDialer(dial))
	}
	client, err := framework.New(o.servers, retry.NewExponentialBackoff(200*time.Millisecond, 5), opts...)
	if err != nil {
		if errors.Is(err, framework.ErrInvalidArgument) && strings.Contains(err.Error(), "connect string") {
			return nil, usageErrorf("--servers: %s", strings.TrimPrefix(errs.Strip(err.Error()), "invalid argument: "))
		}
		if errors.Is(err, framework.ErrInvalidArgument) {
			return nil, usageErrorf("%s", errs.Strip(err.Error()))
		}
		return nil, err
	}
	if err := awaitConnection(ctx, client, o.connectTimeout); err != nil {
		client.Close()
		return nil, err
	}
	return client, nil
}

// awaitConnection waits until client is connected, at most timeout (its
// --connect-timeout). It gives up as soon as every server has refused
// (framework.Client.Unreachable: a dial of each has failed, not by a
// timeout), and says why, server by server, then too.
func awaitConnection(ctx context.Context, client *framework.Client, timeout time.Duration) error {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	changed := make(chan struct{}, 1)
	defer client.AddListener(state.ListenerFunc(func(state.ConnectionState) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}))()
	for {
		next, unreachable := client.Unreachable()
		switch {
		case client.State().IsConnected():
			return nil
		case unreachable != nil:
			return fmt.Errorf("cannot connect: %s", errs.Strip(withoutWait(unreachable).Error()))
		}
		select {
		case <-changed:
		case <-next:
		case <-ctx.Done():
			// Its error names each server and its last dial. The wait
			// it states is its own, none with ctx ended: zklock's began
			// at start.
			err := client.BlockUntilConnected(ctx)
			if err == nil {
				return nil
			}
			return fmt.Errorf("cannot connect within %v (--connect-timeout): %s", timeout,
				strings.TrimPrefix(errs.Strip(withWait(err, time.Since(start)).Error()), "waiting for a connection: "))
		}
	}
}

// newFlagSet returns a command's flag set with the global flags. It prints
// nothing itself: parseFailure prints its usage (synopsis, then flags) to
// stdout for -h.
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

// flagOwners returns the commands that have a flag called name of their
// own, in the order help names them, and the first one's flag.
func flagOwners(name string) (owners []string, f *flag.Flag) {
	g := &globalOptions{}
	for _, fs := range []*flag.FlagSet{runFlags(g, &runOptions{}), lsFlags(g, &lsOptions{}), membersFlags(g, &membersOptions{}), revokeFlags(g, &revokeOptions{})} {
		if ff := fs.Lookup(name); ff != nil {
			owners = append(owners, strings.TrimPrefix(fs.Name(), "zklock "))
			f = cmp.Or(f, ff)
		}
	}
	return owners, f
}

// flagOfOthers returns, for the flag package's error about a flag it does
// not know, the flag's name and the commands that have it.
func flagOfOthers(err error) (name string, owners []string) {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return "", nil
	}
	owners, _ = flagOwners(name)
	return name, owners
}

// printUsage writes fs's usage (its Usage function) to w.
func printUsage(fs *flag.FlagSet, w io.Writer) {
	fs.SetOutput(w)
	defer fs.SetOutput(io.Discard)
	fs.Usage()
}

// parseFailure handles what parsing and checking a command's arguments
// returned: for -h or --help it prints fs's usage to stdout and returns
// flag.ErrHelp (exit 0); a usage error gets the hint to fs's --help, and a
// flag of another command is named as such.
func parseFailure(fs *flag.FlagSet, s streams, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		printUsage(fs, s.stdout)
		return err
	}
	var se *statusError
	if errors.As(err, &se) && se.code == exitUsage {
		if name, owners := flagOfOthers(se.err); len(owners) > 0 {
			se.err = fmt.Errorf("%s has no flag -%s: it is a flag of %s", strings.TrimPrefix(fs.Name(), "zklock "), name, strings.Join(owners, " and "))
		}
	}
	return withHint(fs.Name(), err)
}

// topFlagError is the usage error for err, from parsing the global flags
// (fs) of args: a flag that is a command's own says so; the hint is to the
// --help of the command in args, if any, and run's status is its own 125.
func topFlagError(fs *flag.FlagSet, args []string, err error) *statusError {
	se := &statusError{code: exitUsage, err: badFlagValue(fs, err)}
	if name, owners := flagOfOthers(err); len(owners) > 0 {
		se.err = fmt.Errorf("-%s is a flag of %s, not a global one: give it after the command", name, strings.Join(owners, " and "))
	}
	cmd := "zklock"
	sub := subcommandOf(fs, args)
	if sub == "run" || sub == "ls" || sub == "members" || sub == "revoke" {
		cmd += " " + sub
	}
	withHint(cmd, se)
	if sub == "run" {
		se.code = exitRunFailed // a status COMMAND could not have given
	}
	return se
}

// subcommandOf returns the command in args, skipping the global flags of
// fs (and commands' flags given too early) and their values, for when
// parsing the global flags failed. An unknown flag is taken to have no
// value.
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
			_, f = flagOwners(name) // a command's flag, given too early
		}
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
			i++ // the flag's value
		}
	}
	return ""
}

// parseFlags parses fs over args up to the first positional argument (or
// after a "--") and returns the rest; a parse error is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &statusError{code: exitUsage, err: badFlagValue(fs, err)}
	}
	return fs.Args(), nil
}

// parseArgs parses fs over args, allowing flags after positional arguments
// too (flag stops at the first positional one): it returns the positional
// arguments. Anything after a "--" is positional.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		rest, err := parseFlags(fs, args)
		if err != nil || len(rest) == 0 {
			return pos, err
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

// parseOnePath parses fs over args and checks the global flags and the one
// positional argument, a path called what ("PATH", "NODE"), which may be
// the root if rootOK; hint says what the argument is, for the usage error.
func parseOnePath(fs *flag.FlagSet, g *globalOptions, args []string, what, hint string, rootOK bool) (string, error) {
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
	if rootOK && pos[0] == "/" {
		return pos[0], nil
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

// withoutWait is err, a *framework.NoServerError from Unreachable, without
// how long no server has answered: zklock has waited a few milliseconds,
// no more than it takes each server to refuse once.
func withoutWait(err error) error { return withWait(err, 0) }

// withWait is the *framework.NoServerError in err, if there is one, with
// waited as how long no server has answered (to the second from a second
// up; 0 leaves it out); any other err as it is.
func withWait(err error, waited time.Duration) error {
	var nse *framework.NoServerError
	if !errors.As(err, &nse) {
		return err
	}
	shown := *nse
	shown.Waited = waited.Round(time.Millisecond)
	if waited >= time.Second {
		shown.Waited = waited.Round(time.Second)
	}
	return &shown
}

// badFlagValue is err, the flag package's error for a value a flag of fs
// could not parse, saying what the flag wants instead of "parse error": a
// duration with its unit, a whole number. Any other error is returned as
// it is.
func badFlagValue(fs *flag.FlagSet, err error) error {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	value, uerr := strconv.Unquote(m[1])
	f := fs.Lookup(m[2])
	if uerr != nil || f == nil {
		return err
	}
	getter, ok := f.Value.(flag.Getter)
	if !ok {
		return err
	}
	var want string
	switch getter.Get().(type) {
	case time.Duration:
		want = "a duration with its unit, such as 30s, 1m30s or 500ms"
	case int, int64, uint, uint64:
		want = "a whole number"
	default:
		return err
	}
	return fmt.Errorf("--%s %q is not %s", f.Name, value, want)
}

// flagValueError matches the flag package's error for a value its own
// parser refused: the value (quoted) and the flag's name.
var flagValueError = regexp.MustCompile(`^invalid value ("(?:[^"\\]|\\.)*") for flag -([^:]+): (?:parse error|value out of range)$`)
