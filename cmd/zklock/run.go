package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/recipes"
	"github.com/gocurator/curator/state"
)

// releaseTimeout bounds how long run waits for its lock node's delete after
// the command has exited. The delete goes on in the background until the
// client closes, and closing the session removes the node anyway.
const releaseTimeout = 10 * time.Second

// runOptions are run's own flags and arguments.
type runOptions struct {
	path        string
	argv        []string
	kind        string        // mutex, read, write or lease: ls's kinds (lockqueue.KindMutex...)
	maxLeases   int           // lease: the semaphore's limit
	semaphore   bool          // --semaphore was given
	timeout     time.Duration // give up acquiring after this long; 0: wait forever
	tryOnce     bool          // give up at once if the lock is held
	grace       time.Duration // between SIGTERM and SIGKILL
	revocable   bool          // stop the command when asked to release (zklock revoke)
	errorPolicy string        // standard (SUSPENDED or LOST ends the lock) or session (LOST only)
	data        string        // lock node data; "" keeps the default (the local IP address)
	dataSet     bool
	verbose     bool   // report acquisition and release on stderr
	read, write bool   // --read, --write
	acl         string // ACL of the nodes run creates: open or creator
}

// runFlags returns run's flag set, bound to o and g.
func runFlags(g *globalOptions, o *runOptions) *flag.FlagSet {
	fs := newFlagSet("run", "zklock run [--read | --write | --semaphore N] [flags] PATH -- COMMAND [ARGS...]", g)
	fs.BoolVar(&o.read, "read", false, "take the read half of an InterProcessReadWriteLock")
	fs.BoolVar(&o.write, "write", false, "take the write half of an InterProcessReadWriteLock")
	fs.Func("semaphore", "take one lease of an InterProcessSemaphoreV2 that grants `N` (at least 1) at once", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return errors.New("not a number")
		}
		o.maxLeases, o.semaphore = n, true
		return nil
	})
	fs.DurationVar(&o.timeout, "timeout", 0, "give up when the lock is not acquired within this long (0: wait forever)")
	fs.BoolVar(&o.tryOnce, "try-once", false, "give up at once if the lock is held (Curator's acquire(0, unit))")
	fs.DurationVar(&o.grace, "grace", o.grace, "after SIGTERM, how long the command has before SIGKILL")
	fs.BoolVar(&o.revocable, "revocable", false, "make the lock revocable: stop the command when zklock revoke (or Curator's Revoker) asks")
	fs.StringVar(&o.errorPolicy, "error-policy", o.errorPolicy, "when the lock counts as lost: standard (SUSPENDED or LOST) or session (LOST only)")
	fs.Func("data", "lock node `data` (default: the local IP address, as Curator writes)", func(v string) error {
		o.data, o.dataSet = v, true
		return nil
	})
	fs.StringVar(&o.acl, "acl", o.acl, "ACL of the nodes run creates: open (world:anyone) or creator (needs --auth)")
	fs.BoolVar(&o.verbose, "v", false, "report acquisition and release on stderr")
	return fs
}

// cmdRun parses run's arguments, connects and runs the command under the
// lock. It returns the exit status.
func cmdRun(ctx context.Context, g *globalOptions, args []string, s streams, signals <-chan os.Signal) int {
	o := runOptions{grace: 10 * time.Second, errorPolicy: "standard", acl: "open"}
	fs := runFlags(g, &o)
	err := parseRunArgs(fs, args, &o)
	if err == nil {
		err = g.validate()
	}
	if err == nil {
		err = o.validate(g)
	}
	r := &reporter{w: s.stderr, json: g.json, verbose: o.verbose, lock: runEvent{Path: o.path}}
	// Every failure of run's own, usage errors too, is 125: the low codes
	// are COMMAND's.
	fail := func(err error) int {
		var se *statusError
		if !errors.As(err, &se) {
			se = &statusError{err: err}
			err = se
		}
		se.code = exitRunFailed
		reportError(s.stderr, g.json, err) // with the hint, for a usage error
		return exitRunFailed
	}
	if err != nil {
		if err = parseFailure(fs, s, err); errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return fail(err)
	}
	r.lock.Kind = o.kind
	extra := []framework.Option{}
	if o.acl == "creator" {
		creator := zk.AuthACL(zk.PermAll) // Curator's CREATOR_ALL_ACL
		extra = append(extra, framework.WithACLProvider(framework.ACLProviderFunc(func(string) []zk.ACL { return creator })))
	}
	if o.errorPolicy == "session" {
		extra = append(extra, framework.WithErrorPolicy(state.SessionErrorPolicy{}))
	}
	// A signal while connecting ends the wait, as one while waiting for
	// the lock does (runLocked): 128+N, nothing run.
	cctx, stop := interruptible(ctx, signals)
	client, err := g.connect(cctx, extra...)
	if sig := stop(); sig != nil {
		if client != nil {
			client.Close()
		}
		return r.notRun(signalStatus(sig), "got %v while connecting to %s; nothing was run", sig, g.servers)
	}
	if err != nil {
		return fail(err)
	}
	defer client.Close()
	return runLocked(ctx, client, o, s, signals, r)
}

// parseRunArgs splits run's arguments into flags, PATH and COMMAND: flags
// may come before and after PATH; COMMAND starts at the first argument after
// PATH that is not a flag, or after a "--".
func parseRunArgs(fs *flag.FlagSet, args []string, o *runOptions) error {
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) == 0 {
		return usageErrorf("run wants PATH -- COMMAND [ARGS...]")
	}
	if n := len(args) - len(rest); n > 0 && args[n-1] == "--" && !strings.HasPrefix(rest[0], "/") {
		return usageErrorf("PATH is missing: run wants the lock's PATH before -- (zklock run PATH -- COMMAND [ARGS...])")
	}
	o.path = rest[0]
	if o.argv, err = parseFlags(fs, rest[1:]); err != nil {
		return err
	}
	if len(o.argv) == 0 {
		return usageErrorf("run wants a COMMAND after PATH (zklock run PATH -- COMMAND [ARGS...])")
	}
	return nil
}

// validate checks run's flags (--acl creator needs g's --auth) and sets
// the lock kind.
func (o *runOptions) validate(g *globalOptions) error {
	if err := validatePath("PATH", o.path); err != nil {
		return err
	}
	if o.semaphore && o.maxLeases < 1 {
		return usageErrorf("--semaphore wants a positive number of leases, not %d", o.maxLeases)
	}
	n := 0
	o.kind = lockqueue.KindMutex
	for kind, given := range map[string]bool{lockqueue.KindRead: o.read, lockqueue.KindWrite: o.write, lockqueue.KindLease: o.semaphore} {
		if given {
			n, o.kind = n+1, kind
		}
	}
	if n > 1 {
		return usageErrorf("--read, --write and --semaphore exclude each other")
	}
	if o.timeout < 0 || o.grace < 0 {
		return usageErrorf("--timeout and --grace must not be negative")
	}
	if o.revocable && o.kind == lockqueue.KindLease {
		return usageErrorf("--revocable works with mutex and read-write locks: Curator's semaphore leases cannot be revoked")
	}
	switch o.errorPolicy {
	case "standard", "session":
	default:
		return usageErrorf("--error-policy must be standard or session, not %q", o.errorPolicy)
	}
	switch {
	case o.acl != "open" && o.acl != "creator":
		return usageErrorf("--acl must be open or creator, not %q", o.acl)
	case o.acl == "creator" && g.auth == "":
		return usageErrorf("--acl creator needs --auth")
	}
	return nil
}

// runOutcomes name run's own exit statuses in its --json output
// ("outcome"); a command's own status is "ok", and 128+N, a signal while
// waiting for the lock, "interrupted".
var runOutcomes = map[int]string{exitLost: "lost", exitRevoked: "revoked", exitNotAcquired: "not-acquired",
	exitRunFailed: "error", exitCannotRun: "cannot-run", exitNotFound: "not-found"}

// outcome names run's own exit status (runOutcomes).
func outcome(status int) string {
	if status > exitSignalBase {
		return "interrupted"
	}
	return runOutcomes[status]
}

// runEvent is one line of run's --json output, its fields as
// docs/operations.md (zklock run) describes them; a field that does not
// apply is left out. Besides the events the manual lists, a failed release
// is "release" and the end of zklockMain's context "cancelled"; an error
// is an errorLine.
type runEvent struct {
	Event         string `json:"event"`
	Path          string `json:"path,omitempty"`
	Kind          string `json:"kind,omitempty"`
	Node          string `json:"node,omitempty"`
	Session       string `json:"session,omitempty"`
	Token         int64  `json:"token,omitempty"`
	Outcome       string `json:"outcome,omitempty"`
	Status        *int   `json:"status,omitempty"`
	CommandStatus *int   `json:"command_status,omitempty"`
	Message       string `json:"message"`
}

// reporter writes run's own messages to stderr, as text or JSON lines.
type reporter struct {
	w       io.Writer
	json    bool
	verbose bool
	// lock holds the fields every JSON line carries: path and kind, then
	// node, session and token once the lock is held.
	lock runEvent
}

// holding records the node held, for the lines that follow.
func (r *reporter) holding(h *held, session int64) {
	r.lock.Kind, r.lock.Node, r.lock.Token = h.kind, h.node, h.token
	r.lock.Session = fmt.Sprintf("0x%x", session)
}

// write writes ev, completed with the lock's fields, as JSON; as text
// ("zklock: <message>") only if text.
func (r *reporter) write(ev runEvent, text bool) {
	if r.json {
		line := r.lock
		line.Event, line.Outcome, line.Status, line.CommandStatus, line.Message = ev.Event, ev.Outcome, ev.Status, ev.CommandStatus, ev.Message
		writeJSONLine(r.w, line)
		return
	}
	if text {
		fmt.Fprintf(r.w, "zklock: %s\n", ev.Message)
	}
}

// event reports something that always deserves a line (loss, revocation, failure).
func (r *reporter) event(name, format string, args ...any) {
	r.write(runEvent{Event: name, Message: fmt.Sprintf(format, args...)}, true)
}

// info reports routine progress, only with -v.
func (r *reporter) info(name, format string, args ...any) {
	if r.verbose {
		r.event(name, format, args...)
	}
}

// fail writes run's last line for a failure of its own, an errorLine, and
// returns status.
func (r *reporter) fail(status int, format string, args ...any) int {
	writeError(r.w, r.json, outcome(status), status, fmt.Sprintf(format, args...))
	return status
}

// notRun writes run's last line when the command was not run: the outcome
// of status (also its event), status (returned: zklock exits with it) and
// why.
func (r *reporter) notRun(status int, format string, args ...any) int {
	name := outcome(status)
	r.write(runEvent{Event: name, Outcome: name, Status: &status, Message: fmt.Sprintf(format, args...)}, true)
	return status
}

// exited writes run's last line once the command exited with
// commandStatus, and returns the status zklock exits with: stopped, why
// zklock stopped the command (exitLost, exitRevoked, exitRunFailed), or if
// 0 (outcome ok) the command's own. The human output shows it only with
// -v, and not for ok: the command's own status says it all.
func (r *reporter) exited(stopped, commandStatus int) int {
	status, name := cmp.Or(stopped, commandStatus), "ok"
	if stopped != 0 {
		name = outcome(stopped)
	}
	ev := runEvent{Event: "exit", Outcome: name, Status: &status, CommandStatus: &commandStatus,
		Message: fmt.Sprintf("the command exited with status %d", commandStatus)}
	r.write(ev, r.verbose && stopped != 0)
	return status
}

// held is a lock or lease run holds, whatever its recipe.
type held struct {
	kind         string
	node         string
	token        int64 // read by fencingToken once acquired
	fencingToken func(context.Context) (int64, error)
	lost         <-chan struct{}
	release      func(ctx context.Context) error
}

// acquire takes the lock o describes, honouring --try-once; revoked gets a
// value when a revocable lock is asked to release. The returned held is nil
// unless the lock is held.
func acquire(ctx context.Context, client *framework.Client, o runOptions, revoked chan<- struct{}) (*held, error) {
	if o.kind == lockqueue.KindLease {
		var semOpts []recipes.SemaphoreOption
		if o.dataSet {
			semOpts = append(semOpts, recipes.WithLeaseData([]byte(o.data)))
		}
		sem, err := recipes.NewInterProcessSemaphoreV2(client, o.path, o.maxLeases, semOpts...)
		if err != nil {
			return nil, err
		}
		take := sem.Acquire
		if o.tryOnce {
			take = sem.TryAcquire
		}
		lease, err := take(ctx)
		if err != nil {
			return nil, err
		}
		return &held{kind: lockqueue.KindLease, node: lease.Path(), fencingToken: lease.FencingToken, lost: lease.Done(), release: lease.Close}, nil
	}

	var lockOpts []recipes.LockOption
	if o.dataSet {
		lockOpts = append(lockOpts, recipes.WithLockData([]byte(o.data)))
	}
	var h *recipes.Handle
	switch o.kind {
	case lockqueue.KindRead, lockqueue.KindWrite:
		rw, err := recipes.NewInterProcessReadWriteLock(client, o.path, lockOpts...)
		if err != nil {
			return nil, err
		}
		if o.kind == lockqueue.KindRead {
			h = rw.NewHandle().ReadLock()
		} else {
			h = rw.NewHandle().WriteLock()
		}
	default:
		mu, err := recipes.NewInterProcessMutex(client, o.path, lockOpts...)
		if err != nil {
			return nil, err
		}
		h = mu.NewHandle()
	}
	if o.revocable {
		h.MakeRevocable(func() {
			select {
			case revoked <- struct{}{}:
			default:
			}
		})
	}
	take := h.Acquire
	if o.tryOnce {
		take = h.TryAcquire
	}
	if err := take(ctx); err != nil {
		return nil, err
	}
	return &held{kind: o.kind, node: h.LockPath(), fencingToken: h.FencingToken, lost: h.Done(), release: h.Release}, nil
}

// runLocked takes the lock o describes through client, runs o.argv under
// it and returns the exit status: the command's, or one of zklock's own
// (exitNotAcquired, exitLost, exitRevoked, exitSignalBase+N for a signal
// while waiting, exitRunFailed). Messages go to r; the command's output to s.
func runLocked(ctx context.Context, client *framework.Client, o runOptions, s streams, signals <-chan os.Signal, r *reporter) int {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.timeout > 0 {
		actx, cancel = context.WithTimeout(actx, o.timeout)
		defer cancel()
	}
	revoked := make(chan struct{}, 1)
	type result struct {
		h   *held
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := acquire(actx, client, o, revoked)
		if err == nil {
			// One round trip. On failure h stays, still held, and the
			// error wraps recipes.ErrLockLost if the lock was lost
			// meanwhile: the command must not run without a token.
			h.token, err = h.fencingToken(actx)
		}
		done <- result{h, err}
	}()
	var res result
	select {
	case res = <-done:
	case sig := <-signals:
		cancel()
		res = <-done
		if res.h != nil {
			r.holding(res.h, client.SessionID())
			releaseHeld(ctx, res.h, r, signals)
		}
		return r.notRun(signalStatus(sig),
			"got %v while waiting for %s; nothing was run", sig, o.path)
	}
	if res.h != nil {
		r.holding(res.h, client.SessionID())
	}
	if res.err != nil {
		switch {
		case res.h != nil && errors.Is(res.err, recipes.ErrLockLost):
			// Not released, as a lock lost later is not (see below).
			return r.notRun(exitLost,
				"lost %s right after acquiring it, before its fencing token could be read (%v; connection %v); nothing was run",
				o.path, res.err, client.State())
		case res.h != nil:
			releaseHeld(ctx, res.h, r, signals)
			return r.fail(exitRunFailed,
				"acquired %s but could not read its fencing token: %v; released it, nothing was run", o.path, res.err)
		case errors.Is(res.err, recipes.ErrLocked) && o.kind == lockqueue.KindLease:
			return r.notRun(exitNotAcquired, "%s has no lease free now (--try-once)", o.path)
		case errors.Is(res.err, recipes.ErrLocked):
			return r.notRun(exitNotAcquired, "%s is held by another participant (--try-once)", o.path)
		case errors.Is(res.err, context.DeadlineExceeded) && ctx.Err() == nil:
			return r.notRun(exitNotAcquired, "%s was not acquired within %v", o.path, o.timeout)
		default:
			return r.fail(exitRunFailed, "acquiring %s: %v", o.path, res.err)
		}
	}
	h := res.h
	select {
	case <-h.lost:
		// Not released: see below.
		return r.notRun(exitLost,
			"lost %s right after acquiring it (connection %v); nothing was run", o.path, client.State())
	default:
	}
	r.info("acquired", "acquired %s %s: node %s, token %d", h.kind, o.path, h.node, h.token)

	cmd := exec.Command(o.argv[0], o.argv[1:]...)
	cmd.Env = append(os.Environ(),
		"ZKLOCK_TOKEN="+strconv.FormatInt(h.token, 10),
		"ZKLOCK_NODE="+h.node,
		"ZKLOCK_PATH="+o.path,
		"ZKLOCK_KIND="+h.kind,
		fmt.Sprintf("ZKLOCK_SESSION=0x%x", client.SessionID()),
		"ZKLOCK_NAMESPACE="+client.Namespace(),
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s.stdin, s.stdout, s.stderr
	cmd.WaitDelay = o.grace + time.Second // a background process holding our pipes must not hold us up
	configureChild(cmd)
	waited, err := startChild(cmd)
	if err != nil {
		releaseHeld(ctx, h, r, signals)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return r.fail(exitNotFound, "cannot run %s: %v", o.argv[0], err)
		}
		return r.fail(exitCannotRun, "cannot run %s: %v", o.argv[0], err)
	}

	var (
		stopped  = 0 // 0: ran to its end; else exitLost, exitRevoked or exitRunFailed
		grace    <-chan time.Time
		lost     = h.lost
		ctxDone  = ctx.Done()
		waitErr  error
		finished bool
	)
	stop := func(why int, event, format string, args ...any) {
		if stopped != 0 {
			return
		}
		stopped = why
		r.event(event, format, args...)
		signalGroup(cmd, syscall.SIGTERM)
		grace = time.After(o.grace) // collected unfired if the command exits first (go 1.23)
	}
	for !finished {
		select {
		case waitErr = <-waited:
			finished = true
		case <-lost:
			lost = nil
			stop(exitLost, "lost", "lock %s lost (connection %v): sending SIGTERM to the command, SIGKILL in %v", o.path, client.State(), o.grace)
		case <-revoked:
			stop(exitRevoked, "revoked", "revocation requested for %s: sending SIGTERM to the command, SIGKILL in %v", o.path, o.grace)
		case <-ctxDone:
			ctxDone = nil
			stop(exitRunFailed, "cancelled", "cancelled: sending SIGTERM to the command, SIGKILL in %v", o.grace)
		case sig := <-signals:
			signalGroup(cmd, sig)
		case <-grace:
			grace = nil
			r.event("kill", "the command did not exit within %v: sending SIGKILL", o.grace)
			signalGroup(cmd, syscall.SIGKILL)
		}
	}
	status := commandStatus(cmd, waitErr)
	// A lost lock is not released: the connection may be down, and Close
	// (deferred by the caller) ends the session, which removes the node.
	if stopped != exitLost {
		releaseHeld(ctx, h, r, signals)
	}
	return r.exited(stopped, status)
}

// startChild starts cmd on a goroutine locked to its OS thread, which then
// waits for it: a parent-death signal (Linux) is tied to the thread that
// started the child, not to the process, so that thread must live as long
// as the child. The thread is unlocked, not ended, afterwards: ending a
// thread would also fire the parent-death signal of any other child started
// on it before (golang.org/issue/27505). The returned channel gets
// cmd.Wait's result.
func startChild(cmd *exec.Cmd) (<-chan error, error) {
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
}

// commandStatus is the shell's view of how cmd ended: its exit code, or
// 128+N if signal N killed it.
func commandStatus(cmd *exec.Cmd, waitErr error) int {
	ps := cmd.ProcessState
	if ps == nil {
		if waitErr != nil {
			return exitRunFailed
		}
		return exitOK
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalStatus is the shell's exit status for a process ended by sig.
func signalStatus(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return exitSignalBase + int(s)
	}
	return exitRunFailed
}

// releaseHeld releases h with a context of its own, reporting failures. A
// signal ends the wait for the server's answer (zklock then closes its
// session, which removes the node).
func releaseHeld(ctx context.Context, h *held, r *reporter, signals <-chan os.Signal) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	rctx, stop := interruptible(rctx, signals)
	err := h.release(rctx)
	if sig := stop(); sig != nil && err != nil {
		r.event("release", "got %v while releasing %s; not waiting for it (the node goes when the session ends)", sig, h.node)
		return
	}
	if err != nil {
		r.event("release", "releasing %s: %v (the node goes when the session ends)", h.node, err)
		return
	}
	r.info("released", "released %s", h.node)
}
