package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocurator/curator/recipes"
)

// pauseGap is a sleep that took this much longer than asked: the process
// was paused (SIGSTOP) during it.
const pauseGap = time.Second

// chaosLoop is a running chaos loop and its counts; the same report as the
// Java peer's.
type chaosLoop struct {
	label   string
	stopped atomic.Bool

	// acquiring and acquisitions are read by the counts verb too, in that
	// order; the loop sets acquiring to false after counting.
	acquiring    atomic.Bool
	acquisitions atomic.Int64

	told, fenced, failures, timeouts, noToken, staleTries int64
	guardErrors                                           int64 // the guard could not be entered or read: the run must fail
}

func (l *chaosLoop) stop() { l.stopped.Store(true) }

func (l *chaosLoop) report() string {
	return fmt.Sprintf("acquisitions=%d told=%d fenced=%d failures=%d timeouts=%d notoken=%d stale-tries=%d guard-errors=%d",
		l.acquisitions.Load(), l.told, l.fenced, l.failures, l.timeouts, l.noToken, l.staleTries, l.guardErrors)
}

// owner is one acquisition's owner, whatever the recipe.
type owner interface {
	Acquire(ctx context.Context) error
	Release(ctx context.Context) error
	Done() <-chan struct{}
	Err() error
	FencingToken(ctx context.Context) (int64, error)
}

// leaseOwner is a semaphore lease as an owner.
type leaseOwner struct {
	sem   *recipes.InterProcessSemaphoreV2
	lease *recipes.Lease
}

func (o *leaseOwner) Acquire(ctx context.Context) (err error) {
	o.lease, err = o.sem.Acquire(ctx)
	return err
}
func (o *leaseOwner) Release(ctx context.Context) error { return o.lease.Close(ctx) }
func (o *leaseOwner) Done() <-chan struct{}             { return o.lease.Done() }
func (o *leaseOwner) Err() error                        { return o.lease.Err() }
func (o *leaseOwner) FencingToken(ctx context.Context) (int64, error) {
	return o.lease.FencingToken(ctx)
}

// newOwner returns a new owner of the lock ref: "L", or "L.read" / "L.write"
// for a read-write lock's halves.
func (l *lock) newOwner(ref string) (owner, error) {
	_, half, _ := strings.Cut(ref, ".")
	switch {
	case l.mutex != nil && half == "":
		return l.mutex.NewHandle(), nil
	case l.rw != nil && half == "read":
		return l.rw.NewHandle().ReadLock(), nil
	case l.rw != nil && half == "write":
		return l.rw.NewHandle().WriteLock(), nil
	case l.sem != nil && half == "":
		return &leaseOwner{sem: l.sem}, nil
	}
	return nil, errNoOwner
}

// chaos runs the chaos loop of the Java peer (see CuratorPeer.java) on lock
// ref until chaos-stop: acquire, enter the guard unless told, write the
// fencing token to the resource, hold, release. A holding is told when its
// client hears SUSPENDED or LOST or its own Done closes with a loss, and
// then writes no more; but a write due when the process was paused goes
// out before it can look, as work resumed after a pause does: the fenced
// resource must refuse it.
func (p *peer) chaos(ref string, opt map[string]string) (string, error) {
	label, guardDir, toldPath := opt["label"], opt["guard"], opt["told"]
	if label == "" || guardDir == "" || toldPath == "" {
		return "", errors.New("IllegalArgumentException: chaos needs label=, guard= and told=")
	}
	kind, max := opt["kind"], intOption(opt, "max", 1)
	if kind == "" {
		kind = "excl"
	}
	ho := holdOptionsOf(opt, 2)
	acquire := time.Duration(intOption(opt, "acquire", 1000)) * time.Millisecond
	l, err := p.lock(ref)
	if err != nil {
		return "", err
	}
	loop, err := p.startLoop(label)
	if err != nil {
		return "", err
	}
	defer p.endLoop(label)
	g := guard{dir: guardDir, kind: kind, max: max, told: toldPath}
	for !loop.stopped.Load() {
		o, err := l.newOwner(ref)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), acquire)
		loop.acquiring.Store(true)
		err = o.Acquire(ctx)
		timedOut := ctx.Err() != nil
		cancel()
		switch {
		case err != nil && timedOut:
			loop.timeouts++
			continue
		case err != nil:
			loop.failures++
			time.Sleep(20 * time.Millisecond) // pacing after a failure
			continue
		}
		p.holding(loop, l.client, g, o, ho)
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := o.Release(rctx); err != nil && !errors.Is(err, recipes.ErrLockLost) {
			loop.failures++
		}
		rcancel()
	}
	return loop.report(), nil
}

// holdOptions is how a holding spends its time inside.
type holdOptions struct {
	resource, progress string
	hold               time.Duration
	writes             int
	linger             time.Duration
}

func holdOptionsOf(opt map[string]string, holdMs int) holdOptions {
	return holdOptions{resource: opt["resource"], progress: opt["progress"],
		hold:   time.Duration(intOption(opt, "hold", holdMs)) * time.Millisecond,
		writes: intOption(opt, "writes", 2),
		linger: time.Duration(intOption(opt, "linger", 10000)) * time.Millisecond}
}

// startLoop registers a chaos loop named label; endLoop removes it.
func (p *peer) startLoop(label string) (*chaosLoop, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, dup := p.loops[label]; dup {
		return nil, fmt.Errorf("IllegalArgumentException: chaos loop %s is running already", label)
	}
	loop := &chaosLoop{label: label}
	p.loops[label] = loop
	return loop, nil
}

func (p *peer) endLoop(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.loops, label)
}

// term is what a holding watches and writes with: an acquisition, or a
// term of leadership.
type term interface {
	Done() <-chan struct{}
	Err() error
	FencingToken(ctx context.Context) (int64, error)
}

// holding is one holding of a loop on what t holds, just granted: counted,
// tracked (its client's SUSPENDED or LOST tells it), told when t ends, and
// held (see hold). The caller gives it up after.
func (p *peer) holding(loop *chaosLoop, c *client, g guard, t term, ho holdOptions) {
	n := loop.acquisitions.Add(1)
	loop.acquiring.Store(false)
	h := &holding{id: loop.label + "." + strconv.FormatInt(n, 10), guard: g, finished: make(chan struct{})}
	c.track(h, true)
	go h.watch(t)
	if !c.c.State().IsConnected() {
		h.tell(time.Now().UnixMicro(), "during-acquire")
	}
	p.hold(loop, c, h, t, ho)
	c.track(h, false)
	h.finish()
	if h.wasTold() {
		loop.told++
	}
	loop.acquiring.Store(true)
}

// elect runs the chaos loop of an election candidate (see CuratorPeer.java's
// elect) until chaos-stop: a LeaderLatch, made, started, awaited, led for a
// holding and closed, again and again; or an auto-requeued LeaderSelector
// whose every turn is a holding.
func (p *peer) elect(clientName string, opt map[string]string) (string, error) {
	label, kind, path := opt["label"], opt["kind"], opt["path"]
	if label == "" || path == "" || opt["guard"] == "" || opt["told"] == "" || (kind != "latch" && kind != "selector") {
		return "", errors.New("IllegalArgumentException: elect needs kind=latch|selector, path=, label=, guard= and told=")
	}
	c, err := p.client(clientName)
	if err != nil {
		return "", err
	}
	ho := holdOptionsOf(opt, 20)
	g := guard{dir: opt["guard"], kind: "excl", max: 1, told: opt["told"]}
	loop, err := p.startLoop(label)
	if err != nil {
		return "", err
	}
	defer p.endLoop(label)
	if kind == "selector" {
		var sel *recipes.LeaderSelector
		sel, err = recipes.NewLeaderSelector(c.c, path, func(ctx context.Context) error {
			p.holding(loop, c, g, selectorTerm{ctx, sel}, ho)
			return nil
		}, recipes.WithParticipantID(label), recipes.WithAutoRequeue())
		if err != nil {
			return "", err
		}
		loop.acquiring.Store(true)
		if err := sel.Start(); err != nil {
			return "", err
		}
		for !loop.stopped.Load() {
			time.Sleep(50 * time.Millisecond) // the selector leads on its own goroutine
		}
		return loop.report(), sel.Close()
	}
	for !loop.stopped.Load() {
		l, err := recipes.NewLeaderLatch(c.c, path, recipes.WithParticipantID(label))
		if err != nil {
			return "", err
		}
		loop.acquiring.Store(true)
		if err := l.Start(); err != nil {
			return "", err
		}
		for !loop.stopped.Load() {
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			err := l.Await(ctx)
			cancel()
			if err == nil {
				p.holding(loop, c, g, l, ho)
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				loop.failures++
				time.Sleep(20 * time.Millisecond) // pacing after a failure
				break
			}
		}
		if err := l.Close(); err != nil {
			loop.failures++
		}
	}
	return loop.report(), nil
}

// selectorTerm is a selector's turn as a term: its context ends when the
// turn does.
type selectorTerm struct {
	ctx context.Context
	sel *recipes.LeaderSelector
}

func (t selectorTerm) Done() <-chan struct{} { return t.ctx.Done() }
func (t selectorTerm) Err() error            { return context.Cause(t.ctx) }
func (t selectorTerm) FencingToken(ctx context.Context) (int64, error) {
	return t.sel.FencingToken(ctx)
}

// hold is one holding's time inside: the token (if it writes), the guard,
// a progress note, writes hold apart, then, while the client lingers, on and
// on every 20 ms until told.
//
// Before it looks at its lock again, a holder checks how long it has been
// since it last did: far longer than its nap means the process was paused
// (SIGSTOP) in between, and the write that was due goes out before it can
// look, as work resumed after a pause does. The fenced resource must refuse
// it.
func (p *peer) hold(loop *chaosLoop, c *client, h *holding, t term, ho holdOptions) {
	resource, progress, hold, writes, linger := ho.resource, ho.progress, ho.hold, ho.writes, ho.linger
	var token int64
	if resource != "" && !h.wasTold() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		tok, err := t.FencingToken(ctx)
		cancel()
		if err != nil {
			loop.noToken++
			return
		}
		token = tok
		h.setToken(tok)
	}
	entered, err := h.enter()
	if err != nil {
		fmt.Fprintf(os.Stderr, "guard of %s: %v\n", h.id, err)
		loop.guardErrors++
		return
	}
	if !entered {
		return
	}
	if progress != "" {
		if err := note(progress, h.id); err != nil {
			loop.failures++
		}
	}
	start, looked := time.Now(), time.Now()
	nap := time.Duration(0)
	for i := 0; ; i++ {
		if resource != "" && i > 0 && time.Since(looked) > nap+pauseGap {
			loop.staleTries++
			if ok, err := write(resource, h.id, token); err == nil && !ok {
				loop.fenced++
				return
			}
		}
		if h.wasTold() || (i >= writes && !(c.lingering() && time.Since(start) < linger)) {
			return
		}
		looked = time.Now()
		if resource != "" {
			ok, err := write(resource, h.id, token)
			if err != nil {
				loop.failures++
				return
			}
			if !ok {
				loop.fenced++
				return
			}
		}
		nap = 20 * time.Millisecond
		if i < writes {
			nap = max(time.Millisecond, hold/time.Duration(max(1, writes)))
		}
		time.Sleep(nap) // time inside the critical section
	}
}

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 5 * time.Second}

// write is one write to the fenced resource: true if accepted, false if
// refused (fenced).
func write(resource, holder string, token int64) (bool, error) {
	resp, err := httpClient.Get(resource + "&h=" + holder + "&t=" + strconv.FormatInt(token, 10))
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusConflict:
		return false, nil
	}
	return false, fmt.Errorf("resource answered %s", resp.Status)
}

// note tells the progress endpoint that holding id is inside.
func note(progress, id string) error {
	resp, err := httpClient.Get(progress + "?h=" + id)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("progress answered %s", resp.Status)
	}
	return nil
}

// guard is the chaos suite's guard (compat_test/chaos_fencing_test.go, and
// the Java peer's): a holding creates <dir>/inside/<kind>~<id>, then lists
// the others it must not meet, and appends any to <dir>/conflicts.
type guard struct {
	dir, kind, told string
	max             int
}

// holding is one acquisition of a chaos loop, from acquire to release.
type holding struct {
	id       string
	guard    guard
	finished chan struct{}

	mu     sync.Mutex
	marker string
	token  int64 // the fencing token it writes with, once read
	told   bool
	ended  bool
}

func (h *holding) setToken(t int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.token = t
}

// describe is "<id>=<token>", as the holdings verb lists it.
func (h *holding) describe() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id + "=" + strconv.FormatInt(h.token, 10)
}

// watch tells the holding when what it holds ends before the holding does
// (lost, or leadership ended).
func (h *holding) watch(t term) {
	select {
	case <-t.Done():
		if t.Err() != nil {
			h.tell(time.Now().UnixMicro(), "lost")
		}
	case <-h.finished:
	}
}

func (h *holding) inside() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.marker != ""
}

func (h *holding) wasTold() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.told
}

// enter enters the guard unless told, and reports whether it did; an error
// means the guard could not see this holding or the others, so the run's
// overlap check would be blind to it.
func (h *holding) enter() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.told {
		return false, nil
	}
	inside := filepath.Join(h.guard.dir, "inside")
	m := filepath.Join(inside, h.guard.kind+"~"+h.id)
	if err := os.WriteFile(m, nil, 0o644); err != nil {
		return false, err
	}
	h.marker = m
	entries, err := os.ReadDir(inside)
	if err != nil {
		return true, err
	}
	var others []string
	for _, e := range entries {
		k, holder, ok := strings.Cut(e.Name(), "~")
		if !ok || holder == h.id {
			continue
		}
		if h.guard.kind == "excl" || (h.guard.kind == "shared" && k == "excl") || (h.guard.kind == "count" && k == "count") {
			others = append(others, holder)
		}
	}
	if len(others) > 0 && (h.guard.kind != "count" || len(others)+1 > h.guard.max) {
		appendLine(filepath.Join(h.guard.dir, "conflicts"), fmt.Sprintf("%s %d %s %d %s",
			h.id, time.Now().UnixMicro(), h.guard.kind, h.guard.max, strings.Join(others, ",")))
	}
	return true, nil
}

// tell records that the holding was told it lost its lock: it leaves the
// guard at once and writes no more.
func (h *holding) tell(at int64, why string) {
	h.mu.Lock()
	if h.told || h.ended {
		h.mu.Unlock()
		return
	}
	h.told = true
	h.leaveLocked()
	h.mu.Unlock()
	appendLine(h.guard.told, fmt.Sprintf("%s %d %s", h.id, at, why))
}

func (h *holding) leaveLocked() {
	if h.marker != "" {
		os.Remove(h.marker)
		h.marker = ""
	}
}

// finish ends the holding: it leaves the guard and can no longer be told.
func (h *holding) finish() {
	h.mu.Lock()
	h.ended = true
	h.leaveLocked()
	h.mu.Unlock()
	close(h.finished)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintf(os.Stderr, "append %s: %v\n", path, err)
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
