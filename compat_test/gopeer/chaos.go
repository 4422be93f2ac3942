package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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

type netConn = net.Conn

var dialTimeout = net.DialTimeout

// pauseGap is a sleep that took this much longer than asked: the process
// was paused (SIGSTOP) during it.
const pauseGap = time.Second

// chaosLoop is a running chaos loop and its counts; the same report as the
// Java peer's.
type chaosLoop struct {
	label   string
	stopped atomic.Bool

	acquisitions, told, fenced, failures, timeouts, noToken, staleTries int64
}

func (l *chaosLoop) stop() { l.stopped.Store(true) }

func (l *chaosLoop) report() string {
	return fmt.Sprintf("acquisitions=%d told=%d fenced=%d failures=%d timeouts=%d notoken=%d stale-tries=%d",
		l.acquisitions, l.told, l.fenced, l.failures, l.timeouts, l.noToken, l.staleTries)
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
	resource := opt["resource"]
	hold := time.Duration(intOption(opt, "hold", 2)) * time.Millisecond
	writes := intOption(opt, "writes", 2)
	acquire := time.Duration(intOption(opt, "acquire", 1000)) * time.Millisecond
	linger := time.Duration(intOption(opt, "linger", 10000)) * time.Millisecond
	l, err := p.lock(ref)
	if err != nil {
		return "", err
	}
	loop := &chaosLoop{label: label}
	p.mu.Lock()
	if _, dup := p.loops[label]; dup {
		p.mu.Unlock()
		return "", fmt.Errorf("IllegalArgumentException: chaos loop %s is running already", label)
	}
	p.loops[label] = loop
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.loops, label)
		p.mu.Unlock()
	}()
	g := guard{dir: guardDir, kind: kind, max: max, told: toldPath}
	for !loop.stopped.Load() {
		o, err := l.newOwner(ref)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(context.Background(), acquire)
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
		loop.acquisitions++
		h := &holding{id: label + "." + strconv.FormatInt(loop.acquisitions, 10), guard: g, finished: make(chan struct{})}
		l.client.track(h, true)
		go h.watch(o)
		p.hold(loop, l.client, h, o, resource, hold, writes, linger)
		l.client.track(h, false)
		h.finish()
		if h.wasTold() {
			loop.told++
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := o.Release(rctx); err != nil && !errors.Is(err, recipes.ErrLockLost) {
			loop.failures++
		}
		rcancel()
	}
	return loop.report(), nil
}

// hold is one holding's time inside: the token (if it writes), the guard,
// writes hold apart, then, while the client lingers, on and on every 20 ms
// until told.
func (p *peer) hold(loop *chaosLoop, c *client, h *holding, o owner, resource string, hold time.Duration, writes int, linger time.Duration) {
	var token int64
	if resource != "" && !h.wasTold() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t, err := o.FencingToken(ctx)
		cancel()
		if err != nil {
			loop.noToken++
			return
		}
		token = t
	}
	if !h.enter() {
		return
	}
	start := time.Now()
	for i := 0; !h.wasTold() && (i < writes || c.lingering() && time.Since(start) < linger); i++ {
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
		nap := 20 * time.Millisecond
		if i < writes {
			nap = max(time.Millisecond, hold/time.Duration(max(1, writes)))
		}
		before := time.Now()
		time.Sleep(nap) // time inside the critical section
		if time.Since(before) > nap+pauseGap && resource != "" {
			loop.staleTries++
			if ok, err := write(resource, h.id, token); err == nil && !ok {
				loop.fenced++
				return
			}
		}
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
	told   bool
	ended  bool
}

// watch tells the holding when its owner's acquisition is lost.
func (h *holding) watch(o owner) {
	select {
	case <-o.Done():
		if errors.Is(o.Err(), recipes.ErrLockLost) {
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

// enter enters the guard unless told, and reports whether it did.
func (h *holding) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.told {
		return false
	}
	inside := filepath.Join(h.guard.dir, "inside")
	m := filepath.Join(inside, h.guard.kind+"~"+h.id)
	if err := os.WriteFile(m, nil, 0o644); err != nil {
		return false
	}
	h.marker = m
	entries, _ := os.ReadDir(inside)
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
	return true
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
