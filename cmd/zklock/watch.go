package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/gocurator/curator/framework"
	"github.com/gocurator/curator/internal/errs"
	"github.com/gocurator/curator/internal/lockqueue"
	"github.com/gocurator/curator/state"
)

// clearScreen moves a terminal's cursor home and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// Timing of ls --watch's confirmations: while connected, it asks a server
// (a sync, answered through the leader) every confirmEvery, one question
// at a time, whether the listing still holds; one not confirmed for
// staleAfter is marked STALE, whatever state the client is in. The
// client's own view of a silent connection (go-zookeeper's read timeout,
// 2/3 of the session timeout: 20 s at zklock's default) is far slower.
const (
	confirmEvery = 500 * time.Millisecond
	staleAfter   = 2 * confirmEvery
)

// maxRelists bounds how many times in a row --watch lists again because a
// watch fired while it listed, before it shows what it has.
const maxRelists = 3

// watchLs prints the queue at path as ls does, and again at every change,
// until ctx ends (a signal: then it returns nil). A change is a child coming
// or going at any node the last listing read (Listing.Listed: path, a
// semaphore's locks and leases, and below a parent of locks every node
// ListParent looked at, down to its depth, so a holder that appears in an
// empty container or a level further down is seen), or path appearing (path
// may not exist yet, and empty containers are reaped). The watches are
// ZooKeeper's, armed before each listing; a listing that shows nodes not yet
// watched is made again once they are, as is one during which a watch fired
// (up to maxRelists times), so that a listing shown is the tree at one
// moment, unless the tree changes faster than it can be listed.
//
// Each drawing says the connection's state (view.show), when the listing
// was taken and when a server last confirmed it: while connected, a sync
// every confirmEvery that comes back with no watch fired says that nothing
// had changed by the moment it was sent (a server sends the events of a
// session's watches before later replies). A listing not confirmed for
// staleAfter, or while the connection is down, is marked STALE, its ages as
// of its last confirmation. While the connection is down nothing is listed:
// the last listing stays, and the list is made again when the connection
// is back (a listing the connection's loss cuts short is dropped). Only the
// first listing's failure ends the watch; later ones are shown until the
// next change. On a terminal each drawing replaces the last, and the screen
// is redrawn every second; elsewhere drawings follow one another, one at
// each listing or change of the banner (view.key). With --json a listing is
// a line, and so is each change of the banner (connectionLine).
func watchLs(ctx context.Context, client *framework.Client, path string, o lockqueue.Options, asJSON bool, w io.Writer) error {
	return watchListing(ctx, client, path, "ls", func(ctx context.Context) (listing, error) {
		l, err := list(ctx, client, path, o)
		if err != nil {
			return nil, err
		}
		return lockListing{l}, nil
	}, asJSON, w)
}

// listing is what a --watch shows and watches: a lock's queue (ls) or a
// group's members (members).
type listing interface {
	WriteText(w io.Writer, now time.Time) error
	WriteTextAsOf(w io.Writer, at time.Time) error
	// watched returns the nodes whose children the listing read (its
	// path aside, always watched) and those whose data it shows: a watch
	// on each misses no change of it.
	watched() (children, data []string)
	// line is the listing's JSON line, listed at listedAt.
	line(listedAt time.Time) any
}

// lockListing is ls's listing: a lock's queue, or a parent's locks.
type lockListing struct{ *lockqueue.Listing }

func (l lockListing) watched() (children, data []string) { return l.Listed, nil }

func (l lockListing) line(listedAt time.Time) any {
	return listingLine{Event: "listing", ListedAt: listedAt, Listing: l.Listing}
}

// watchListing is --watch for the command cmd (ls, members): it shows
// what list lists at path, and again at every change, as watchLs says.
func watchListing(ctx context.Context, client *framework.Client, path, cmd string, list func(context.Context) (listing, error), asJSON bool, w io.Writer) error {
	wctx, cancel := context.WithCancel(ctx)
	wt := &watcher{client: client, path: path, list: list, ctx: wctx,
		fired: make(chan *armedWatch), armed: map[watchKey]*armedWatch{}, probed: make(chan probeResult)}
	defer wt.wg.Wait()
	defer cancel()
	wt.conn.set(client.State(), time.Now())
	stateChanged := make(chan struct{}, 1)
	defer client.AddListener(state.ListenerFunc(func(s state.ConnectionState) {
		wt.conn.set(s, time.Now())
		select {
		case stateChanged <- struct{}{}:
		default:
		}
	}))()

	v := view{w: w, json: asJSON, terminal: isTerminal(w), path: path, cmd: cmd}
	// What connecting established: JSON lines say the changes from it.
	v.key = banner{state: state.Connected}.key()
	clock := time.NewTicker(time.Second) // a terminal's clocks; elsewhere, a change of the banner
	defer clock.Stop()
	probe := time.NewTicker(confirmEvery)
	defer probe.Stop()
	silence := time.NewTimer(staleAfter) // when the listing, unconfirmed, turns stale
	defer silence.Stop()
	for relist := true; ; {
		fresh := false
		if relist {
			var err error
			if fresh, err = wt.relist(); ctx.Err() != nil {
				return nil
			} else if err != nil {
				return err
			}
		}
		if err := v.show(wt.last, wt.listErr, fresh, wt.banner(time.Now())); err != nil {
			return err
		}
		silence.Reset(time.Until(wt.confirmed.Add(staleAfter)))
		relist = false
	wait:
		for {
			select {
			case a := <-wt.fired:
				if wt.armed[a.key] == a { // else collectFired has seen it
					delete(wt.armed, a.key)
					relist = true
				}
				if wt.collectFired() { // one listing for changes that come together
					relist = true
				}
				if relist {
					break wait
				}
			case <-stateChanged:
				relist = client.State().IsConnected()
				break wait
			case r := <-wt.probed:
				wt.probing = false
				if wt.collectFired() {
					relist = true
					break wait
				}
				if r.err == nil && r.gen == wt.gen && r.sent.After(wt.confirmed) {
					wt.confirmed = r.sent
					silence.Reset(time.Until(wt.confirmed.Add(staleAfter)))
				}
				if wt.banner(time.Now()).key() != v.key {
					break wait
				}
			case <-probe.C:
				wt.confirm()
			case <-silence.C:
				if wt.banner(time.Now()).key() != v.key {
					break wait
				}
			case <-clock.C:
				if v.terminal || wt.banner(time.Now()).key() != v.key {
					break wait
				}
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// watcher is the state of one ls --watch: its watches, the listing shown
// and how sure it is.
type watcher struct {
	client *framework.Client
	path   string
	list   func(context.Context) (listing, error)
	ctx    context.Context // ends with the watch: its goroutines' bound
	wg     sync.WaitGroup  // the watch's goroutines
	conn   connection

	fired chan *armedWatch
	armed map[watchKey]*armedWatch // the watches outstanding

	last      listing
	listErr   error     // of the last listing, if it failed
	gen       int       // counts the listings made: a confirmation of an older one is dropped
	listedAt  time.Time // when last was the tree: after its watches were armed, before it was read
	confirmed time.Time // the latest moment last is known to have been the tree: listedAt or a sync's
	cut       bool      // a listing was cut short by the connection's loss since last

	probing bool // a sync is out
	probed  chan probeResult
}

// armedWatch is a watch --watch set on a node's children (or creation),
// or on its data.
type armedWatch struct {
	key watchKey
	ch  <-chan zk.Event
}

// watchKey is what a watch is on: path's children, or its data.
type watchKey struct {
	path string
	data bool
}

// probeResult is the answer to a confirming sync: sent when the listing
// gen was shown.
type probeResult struct {
	gen  int
	sent time.Time
	err  error
}

// relist lists path again (listConnected) until the listing has every node
// it read watched and no watch fired while it was made (at most maxRelists
// times for that), or the connection's loss cuts it short (then the last
// listing stays, marked stale). fresh says a new listing was made. Only the
// first listing's failure is returned; a later one is kept in listErr.
func (wt *watcher) relist() (fresh bool, err error) {
	for tries := 0; ; tries++ {
		r, at, cut, err := wt.listConnected()
		switch {
		case wt.ctx.Err() != nil:
			return fresh, nil
		case cut:
			wt.cut = true
			return fresh, nil
		case err != nil && wt.last == nil:
			return fresh, err
		case err != nil:
			wt.listErr = err
			return fresh, nil
		}
		wt.last, wt.listErr, wt.listedAt, wt.confirmed, wt.cut = r, nil, at, at, false
		wt.gen++
		fresh = true
		unwatched := slices.ContainsFunc(watchPaths(wt.path, r), func(k watchKey) bool { return wt.armed[k] == nil })
		if fired := wt.collectFired(); !unwatched && (!fired || tries >= maxRelists) {
			return fresh, nil
		}
	}
}

// listConnected arms the watches and lists, while the connection lasts: at
// is when the listing was the tree (its watches armed, nothing read yet);
// cut reports that the connection was down, or went down before the listing
// was done (the client's trust ends at SUSPENDED and LOST under the
// standard error policy zklock ls uses).
func (wt *watcher) listConnected() (r listing, at time.Time, cut bool, err error) {
	trust, _ := wt.client.Trust()
	if !wt.client.State().IsConnected() {
		return nil, at, true, nil
	}
	lctx, stop := context.WithCancel(wt.ctx)
	defer stop()
	defer context.AfterFunc(trust, stop)()
	if err = wt.arm(lctx, watchPaths(wt.path, wt.last)); err == nil {
		at = time.Now()
		r, err = wt.list(lctx)
	}
	if err != nil && lctx.Err() != nil && wt.ctx.Err() == nil {
		return nil, at, true, nil
	}
	return r, at, false, err
}

// arm sets each watch of keys that has none outstanding: on a node's
// children (path's, if it is not there, on its creation; another that is
// gone needs none: its parent's children are watched), or on its data (or
// its deletion, or creation).
func (wt *watcher) arm(ctx context.Context, keys []watchKey) error {
	for _, k := range keys {
		if wt.armed[k] != nil {
			continue
		}
		var ch <-chan zk.Event
		var err error
		if k.data {
			_, _, ch, err = wt.client.ExistsW(ctx, k.path)
		} else {
			ch, err = watchNode(ctx, wt.client, k.path, k.path == wt.path)
		}
		if err != nil || ch == nil {
			return err
		}
		a := &armedWatch{key: k, ch: ch}
		wt.armed[k] = a
		wt.wg.Add(1)
		go func() {
			defer wt.wg.Done()
			select {
			case <-ch:
				select {
				case wt.fired <- a:
				case <-wt.ctx.Done():
				}
			case <-wt.ctx.Done():
			}
		}()
	}
	return nil
}

// collectFired drops the watches that have fired from armed, so that they
// are armed again, and reports whether there were any. It looks at their
// channels itself rather than waiting for their goroutines: a watch's event
// is delivered and its channel closed (zkconn's assumption 8) before any
// later reply of the session, so once a reply has come, a watch that fired
// before it is seen here.
func (wt *watcher) collectFired() bool {
	fired := false
	for k, a := range wt.armed {
		select {
		case <-a.ch:
			delete(wt.armed, k)
			fired = true
		default:
		}
	}
	return fired
}

// confirm sends a sync, if none is out, to learn whether the listing still
// holds: its answer with no watch fired says so as of when it was sent.
// The answer comes on probed.
func (wt *watcher) confirm() {
	if wt.probing || wt.last == nil || !wt.client.State().IsConnected() {
		return
	}
	wt.probing = true
	r := probeResult{gen: wt.gen, sent: time.Now()}
	wt.wg.Add(1)
	go func() {
		defer wt.wg.Done()
		r.err = wt.client.Sync(wt.ctx, wt.path)
		select {
		case wt.probed <- r:
		case <-wt.ctx.Done():
		}
	}()
}

// banner is what the watch says of its connection at now.
func (wt *watcher) banner(now time.Time) banner {
	st, since := wt.conn.get()
	_, unreachable := wt.client.Unreachable()
	b := banner{state: st, since: since, unreachable: unreachable, listedAt: wt.listedAt, confirmed: wt.confirmed}
	b.silent = st.IsConnected() && !wt.cut && wt.last != nil && now.Sub(wt.confirmed) >= staleAfter
	b.stale = wt.cut || !st.IsConnected() || b.silent
	return b
}

// connection is the client's connection state as the watch last heard of
// it, and since when: the listener writes it, the watch reads it.
type connection struct {
	mu    sync.Mutex
	st    state.ConnectionState
	since time.Time
}

func (c *connection) set(st state.ConnectionState, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st, c.since = st, at
}

func (c *connection) get() (state.ConnectionState, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st, c.since
}

// watchNode sets a one-shot watch on p's children, or if p does not exist,
// on its creation if creation, else none (a nil channel).
func watchNode(ctx context.Context, client *framework.Client, p string, creation bool) (<-chan zk.Event, error) {
	for {
		_, _, ch, err := client.ChildrenW(ctx, p)
		if !errors.Is(err, zk.ErrNoNode) {
			return ch, err
		}
		if !creation {
			return nil, nil
		}
		ok, _, ch, err := client.ExistsW(ctx, p)
		if err != nil || !ok {
			return ch, err
		}
		// Created in between: watch its children instead.
	}
}

// watchPaths returns the watches --watch sets, given the last listing r
// of path (nil before the first): on path's children, whatever it is now,
// and on those of every node r read and the data of every node it shows
// (listing.watched).
func watchPaths(path string, r listing) []watchKey {
	keys := []watchKey{{path: path}}
	if r != nil {
		children, data := r.watched()
		for _, p := range children {
			keys = append(keys, watchKey{path: p})
		}
		for _, p := range data {
			keys = append(keys, watchKey{path: p, data: true})
		}
	}
	return keys
}

// view draws the listings of ls --watch.
type view struct {
	w        io.Writer
	json     bool // JSON lines: listings and changes of the banner
	terminal bool // redraw the screen; else append
	path     string
	cmd      string // the command watching: ls, members
	drawn    bool
	key      string // what the last banner said, times aside (banner.key)
}

// banner is what the lines under the title say of the connection, and
// whether the listing below it is stale.
type banner struct {
	state       state.ConnectionState
	since       time.Time // when the watch heard the client enter state (or began)
	unreachable error     // every server has refused (framework.Client.Unreachable), or nil
	stale       bool      // the listing may be out of date: the connection is down, or silent
	silent      bool      // connected, as far as the client knows, but nothing confirmed for staleAfter
	listedAt    time.Time // when the listing shown was the tree (zero: none yet)
	confirmed   time.Time // the latest moment a server confirmed it
}

// text returns the banner's lines at now: the connection ("connection
// CONNECTED", or "connection SUSPENDED since 15:04:05 (5s): no server
// answered for 5s: host:port (connection refused)"), then, if there is a
// listing, when it was taken and confirmed, STALE first if it is.
func (b banner) text(now time.Time) string {
	s := "connection " + b.state.String()
	if !b.state.IsConnected() && !b.since.IsZero() {
		s += fmt.Sprintf(" since %s (%v)", b.since.Format("15:04:05"), now.Sub(b.since).Round(time.Second))
	}
	var nse *framework.NoServerError
	if errors.As(b.unreachable, &nse) {
		shown := *nse
		shown.Waited = shown.Waited.Round(time.Second) // as the state's time is
		s += ": " + errs.Strip(shown.Error())
	}
	if b.silent {
		s += fmt.Sprintf(", as far as the client knows: no server has answered zklock for %v", now.Sub(b.confirmed).Round(time.Second))
	}
	s += "\n"
	if b.listedAt.IsZero() {
		return s
	}
	confirmed := fmt.Sprintf("confirmed by a server at %s (%v ago)", b.confirmed.Format("15:04:05"), now.Sub(b.confirmed).Round(time.Second))
	switch {
	case !b.stale:
		s += fmt.Sprintf("listed at %s, %s\n", b.listedAt.Format("15:04:05"), confirmed)
	case b.silent:
		s += fmt.Sprintf("STALE: listed at %s, last %s; AGE as of then; confirmed or listed again once a server answers\n", b.listedAt.Format("15:04:05"), confirmed)
	default:
		s += fmt.Sprintf("STALE: listed at %s, last %s, before the connection went down; AGE as of then; listed again when it is back\n", b.listedAt.Format("15:04:05"), confirmed)
	}
	return s
}

// key is what the banner says, its times aside: what a drawing that is
// not on a terminal, or a JSON line, is made again for.
func (b banner) key() string {
	key := fmt.Sprint(b.state, b.stale, b.silent)
	var nse *framework.NoServerError
	if errors.As(b.unreachable, &nse) {
		for _, s := range nse.Servers {
			key += "|" + s.String()
		}
	}
	return key
}

// listingLine is a listing of ls --watch --json: the Listing's fields,
// after the event and when the listing was the tree.
type listingLine struct {
	Event    string    `json:"event"` // "listing"
	ListedAt time.Time `json:"listed_at"`
	*lockqueue.Listing
}

// connectionLine is a change of the banner in ls --watch --json: of the
// connection's state, of the servers' dials while none answers, or of
// whether the listing is stale.
type connectionLine struct {
	Event       string     `json:"event"` // "connection"
	State       string     `json:"state"`
	Since       time.Time  `json:"since"`
	Stale       bool       `json:"stale"`
	Silent      bool       `json:"silent"`
	ListedAt    *time.Time `json:"listed_at,omitempty"`
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty"`
	Message     string     `json:"message"`
}

// show draws the listing r (fresh: just made), or err when listing
// failed, after a title line that says when, and the banner: on a
// terminal in place of the last drawing, elsewhere after it. A stale
// listing's ages are as of its last confirmation. In JSON a change of the
// banner is a connectionLine, a fresh listing a listingLine. Only a
// listing that cannot be written is an error.
func (v *view) show(r listing, err error, fresh bool, b banner) error {
	key, changed := b.key(), b.key() != v.key
	v.key = key
	now := time.Now()
	if v.json {
		if changed {
			line := connectionLine{Event: "connection", State: b.state.String(), Since: b.since, Stale: b.stale, Silent: b.silent,
				Message: strings.ReplaceAll(strings.TrimSpace(b.text(now)), "\n", "; ")}
			if !b.listedAt.IsZero() {
				line.ListedAt, line.ConfirmedAt = &b.listedAt, &b.confirmed
			}
			if err := writeJSONLine(v.w, line); err != nil {
				return err
			}
		}
		if !fresh {
			return nil
		}
		return writeJSONLine(v.w, r.line(b.listedAt))
	}
	var buf bytes.Buffer
	if v.terminal {
		buf.WriteString(clearScreen)
	} else if v.drawn {
		buf.WriteString("\n")
	}
	v.drawn = true
	fmt.Fprintf(&buf, "%s  zklock %s --watch %s  (Ctrl-C to stop)\n", now.Format("15:04:05"), v.cmd, v.path)
	buf.WriteString(b.text(now))
	buf.WriteString("\n")
	switch {
	case err != nil:
		fmt.Fprintf(&buf, "cannot list %s: %v\n(listing again at the next change of the tree or the connection)\n", v.path, err)
	case r == nil:
		fmt.Fprintf(&buf, "(not listed yet: the connection went down first)\n")
	case b.stale:
		if err := r.WriteTextAsOf(&buf, b.confirmed); err != nil {
			return err
		}
	default:
		if err := r.WriteText(&buf, now); err != nil {
			return err
		}
	}
	_, err = v.w.Write(buf.Bytes())
	return err
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
