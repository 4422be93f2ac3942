package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime/metrics"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/zkwire"
)

// This file holds -timeline: where the time of the uncontended cycle
// (scenario 1) goes, and of its slowest cycles (p99 and above) above all.
// Every Go implementation runs the cycle on a connection whose frames are
// logged as they cross the socket (a dialer of its own: when each request
// was written, and each reply and notification read), between the cycle's
// own marks (the acquire called, held, the release returned). A cycle is
// then a timeline of marks (create written, listing written, create's
// reply read, …) and its steps the times between them; the slow cycles'
// steps are set beside all cycles' to show which step their time went to.
// Whether a garbage collection ended during a cycle is noted too.

// timelineCycles are the cycles timed per implementation (after as many
// again of warm-up), in runs of timelineRun, the implementations taking
// turns.
const (
	timelineCycles = 20000
	timelineRun    = 500
)

// wireLog is the frames logged by the connections dialled through it.
type wireLog struct {
	mu sync.Mutex
	ev []wireEvent
}

// wireEvent is one frame: a request written (out) or a reply or a
// notification read, when, and what it was.
type wireEvent struct {
	at  time.Time
	out bool
	op  int32 // the request's opcode (a reply: its request's); opNotification for a notification
	xid int32
}

// opNotification stands for a notification's opcode in the log: it has none
// (its xid, zkwire.NotificationXid, answers no request).
const opNotification = zkwire.NotificationXid

func (l *wireLog) add(e wireEvent) {
	l.mu.Lock()
	l.ev = append(l.ev, e)
	l.mu.Unlock()
}

// take returns the events logged so far, and forgets them.
func (l *wireLog) take() []wireEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.ev
	l.ev = nil
	return ev
}

// dial is a zk.Dialer whose connections log their frames.
func (l *wireLog) dial(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &loggedConn{Conn: c, log: l, ops: map[int32]int32{}}, nil
}

// loggedConn logs the frames that cross it (the first one each way, the
// handshake's, apart).
type loggedConn struct {
	net.Conn
	log *wireLog

	mu     sync.Mutex
	ops    map[int32]int32 // xid → opcode of the requests written
	sentHs bool

	stream zkwire.ServerStream // the frames read so far (only Read touches it)
}

func (c *loggedConn) Write(p []byte) (int, error) {
	now := time.Now()
	for frame := range zkwire.Frames(p) { // go-zookeeper writes whole frames
		c.mu.Lock()
		hs := !c.sentHs
		c.sentHs = true
		xid, op, ok := zkwire.RequestHeader(frame)
		if !hs && ok {
			c.ops[xid] = op
		}
		c.mu.Unlock()
		if !hs && ok && xid >= 0 {
			c.log.add(wireEvent{at: now, out: true, op: op, xid: xid})
		}
	}
	return c.Conn.Write(p)
}

func (c *loggedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	now := time.Now()
	// A stream that is no ZooKeeper frames is logged no further.
	_ = c.stream.Follow(p[:n], func([]byte) {}, func(xid int32) { c.replyRead(xid, now) })
	return n, err
}

// replyRead logs a frame from the server read whole.
func (c *loggedConn) replyRead(xid int32, at time.Time) {
	if xid == zkwire.NotificationXid {
		c.log.add(wireEvent{at: at, op: opNotification, xid: xid})
		return
	}
	c.mu.Lock()
	op, ok := c.ops[xid]
	delete(c.ops, xid)
	c.mu.Unlock()
	if ok {
		c.log.add(wireEvent{at: at, op: op, xid: xid})
	}
}

// timedCycle is one acquire + release and what the wire saw meanwhile.
type timedCycle struct {
	start, held, end time.Time
	gc               bool // a garbage collection ended during it
	marks            []mark
}

// mark is a moment of a cycle's timeline.
type mark struct {
	name string
	at   time.Time
}

// opName names a request's opcode in a mark.
func opName(op int32) string {
	switch op {
	case zktest.OpCreate, zktest.OpCreate2, zktest.OpCreateContainer:
		return "create"
	case zktest.OpGetChildren, zktest.OpGetChildren2:
		return "listing"
	case zktest.OpDelete:
		return "delete"
	case opNotification:
		return "notification"
	}
	return fmt.Sprintf("op %d", op)
}

// timeline makes the cycle's marks from the wire's events during it.
func (c *timedCycle) timeline(ev []wireEvent) {
	c.marks = []mark{{"acquire called", c.start}, {"held", c.held}, {"release returned", c.end}}
	for _, e := range ev {
		if e.at.Before(c.start) || e.at.After(c.end) {
			continue
		}
		what := opName(e.op) + " written"
		if !e.out {
			what = opName(e.op) + "'s reply read"
		}
		c.marks = append(c.marks, mark{what, e.at})
	}
	sort.SliceStable(c.marks, func(i, j int) bool { return c.marks[i].at.Before(c.marks[j].at) })
}

// step is the time between two consecutive marks of a cycle.
type step struct {
	name     string // the two marks'
	d, start time.Duration
}

// steps are the times between a cycle's consecutive marks.
func (c *timedCycle) steps() []step {
	var s []step
	for i := 1; i < len(c.marks); i++ {
		s = append(s, step{c.marks[i-1].name + " → " + c.marks[i].name, c.marks[i].at.Sub(c.marks[i-1].at), c.marks[i-1].at.Sub(c.start)})
	}
	return s
}

// cycler is one Go implementation's uncontended cycle on a logged
// connection.
type cycler struct {
	name  string
	log   *wireLog
	cycle func(ctx context.Context) (held time.Time, err error)
	close func()
}

// uncancellable is gocurator called with a context that cannot end, whose
// calls to ZooKeeper run on the caller's goroutine (a context that can end
// hands each to one of the client's runners, which the caller waits for,
// and which it can abandon).
var uncancellable = goImpl{nameOurs + ", with a context that cannot end", "gocurator-bg", connectOurs}

// timelineCyclers sets up the floor, the limit and gocurator (called with
// the caller's context, and with one that cannot end) on servers.
func timelineCyclers(ctx context.Context, servers, base string) ([]*cycler, error) {
	var out []*cycler
	for _, im := range []goImpl{implFloor, implLimit, implOurs, uncancellable} {
		log := &wireLog{}
		s, err := im.dial(ctx, servers, log.dial)
		var mk func() owner
		if err == nil {
			if mk, err = s.mutex(base + "/" + im.key); err != nil {
				s.close()
			}
		}
		if err != nil {
			for _, c := range out {
				c.close()
			}
			return nil, err
		}
		o, bg := mk(), im.key == uncancellable.key
		out = append(out, &cycler{name: im.name, log: log, close: s.close, cycle: func(ctx context.Context) (time.Time, error) {
			if bg {
				ctx = context.WithoutCancel(ctx)
			}
			if err := o.Acquire(ctx); err != nil {
				return time.Time{}, err
			}
			held := time.Now()
			return held, o.Release(ctx)
		}})
	}
	return out, nil
}

// timeline runs runTimeline on a throwaway standalone server, set up as the
// bench's.
func timeline(ctx context.Context, w io.Writer) error {
	logf("starting a throwaway ZooKeeper ...")
	srv, err := zktest.StartServer(append(serverOptions(), zktest.WithStandaloneMode())...)
	if err != nil {
		return fmt.Errorf("starting ZooKeeper: %w", err)
	}
	defer srv.Close()
	logf("timing %d uncontended cycles of each Go implementation, after as many of warm-up ...", timelineCycles)
	fmt.Fprintf(w, "gocurator-bench -timeline: load average %s at the start\n", fmtLoads(loadAverage()))
	e := &env{srv: srv, servers: srv.Addr(), logf: logf, base: "/gocurator-bench/timeline-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	if err := runTimeline(ctx, w, e.servers, e.base, timelineCycles, timelineRun); err != nil {
		return err
	}
	logf("timing the drain of %d waiters of the floor and of gocurator ...", timelineDrain)
	fmt.Fprintf(w, "\nload average %s\n", fmtLoads(loadAverage()))
	return e.drainTimeline(ctx, w, timelineDrain)
}

// timelineDrain is how many waiters drainTimeline queues.
const timelineDrain = 2000

// drainTimeline queues n waiters of the floor and then of gocurator behind
// a holder, each implementation on one logged connection (as scenario 6),
// drains them, and writes what a hand-off is made of: from one delete
// written to the next, the delete's notification read between.
func (e *env) drainTimeline(ctx context.Context, w io.Writer, n int) error {
	for _, im := range []goImpl{implFloor, implOurs} {
		log := &wireLog{}
		s, err := im.dial(ctx, e.servers, log.dial)
		if err != nil {
			return err
		}
		gc0 := gcStats()
		d, ev, err := e.loggedDrain(ctx, s, im, n, log)
		gc1 := gcStats()
		s.close()
		if err != nil {
			return fmt.Errorf("%s: %w", im.name, err)
		}
		writeDrain(w, im.name, n, d, ev)
		fmt.Fprintf(w, "  garbage collections from the queue's start to the drain's end: %d, their CPU %s (%s per hand-off)\n",
			gc1.cycles-gc0.cycles, fmtDur(gc1.cpu-gc0.cpu), fmtDur((gc1.cpu-gc0.cpu)/time.Duration(n)))
	}
	return nil
}

// loggedDrain queues n waiters of s behind a holder, drains them, and
// returns how long that took and the frames logged meanwhile.
func (e *env) loggedDrain(ctx context.Context, s *session, im goImpl, n int, log *wireLog) (time.Duration, []wireEvent, error) {
	mk, holder, watch0, err := e.holdFor(ctx, s, e.base+"/drain-"+im.key)
	if err != nil {
		return 0, nil, err
	}
	q := newQueue(ctx)
	defer q.close()
	if err := e.form(q, mk, n, watch0); err != nil {
		return 0, nil, err
	}
	log.take()
	d, err := q.drain(holder, 10*time.Minute)
	return d, log.take(), err
}

// writeDrain writes what the hand-offs of a drain were made of: the time
// from a delete written to its notification read, and from that to the
// next delete written; whether a listing was written meanwhile, and
// before the notification; and the frames of the median hand-off.
func writeDrain(w io.Writer, name string, n int, d time.Duration, ev []wireEvent) {
	var dels []int
	for i, e := range ev {
		if e.out && e.op == zktest.OpDelete {
			dels = append(dels, i)
		}
	}
	fmt.Fprintf(w, "\n%s: %d waiters drained in %s, %s per hand-off; %d deletes written\n", name, n, fmtDur(d), fmtDur(d/time.Duration(n)), len(dels))
	if len(dels) < 3 {
		return
	}
	type handOff struct {
		i, next            int
		toNotified, toNext time.Duration // delete written → its notification read → the next delete written
		listedBefore       bool          // a listing was written before the notification was read
		listed             bool
	}
	var hs []handOff
	for k := 1; k < len(dels); k++ {
		h := handOff{i: dels[k-1], next: dels[k]}
		notified := -1
		for j := h.i + 1; j < h.next; j++ {
			e := ev[j]
			switch {
			case !e.out && e.op == opNotification && notified < 0:
				notified = j
			case e.out && (e.op == zktest.OpGetChildren || e.op == zktest.OpGetChildren2):
				h.listed = true
				h.listedBefore = h.listedBefore || notified < 0
			}
		}
		if notified < 0 {
			continue
		}
		h.toNotified, h.toNext = ev[notified].at.Sub(ev[h.i].at), ev[h.next].at.Sub(ev[notified].at)
		hs = append(hs, h)
	}
	med := func(f func(handOff) time.Duration) string {
		xs := make([]time.Duration, 0, len(hs))
		for _, h := range hs {
			xs = append(xs, f(h))
		}
		return fmtDur(percentileSorted(slices.Sorted(slices.Values(xs)), 50))
	}
	listed, before := 0, 0
	for _, h := range hs {
		if h.listed {
			listed++
		}
		if h.listedBefore {
			before++
		}
	}
	fmt.Fprintf(w, "  per hand-off (medians of %d): delete written → its notification read %s, → the next delete written %s; "+
		"a listing written in %d of them, before the notification was read in %d\n",
		len(hs), med(func(h handOff) time.Duration { return h.toNotified }), med(func(h handOff) time.Duration { return h.toNext }), listed, before)
	whole := make([]time.Duration, 0, len(hs))
	for _, h := range hs {
		whole = append(whole, h.toNotified+h.toNext)
	}
	slices.Sort(whole)
	fmt.Fprintf(w, "  delete written → the next delete written: p50 %s, p90 %s, p99 %s, slowest %s\n", fmtDur(percentileSorted(whole, 50)),
		fmtDur(percentileSorted(whole, 90)), fmtDur(percentileSorted(whole, 99)), fmtDur(whole[len(whole)-1]))
	slices.SortFunc(hs, func(a, b handOff) int { return int(a.toNotified + a.toNext - b.toNotified - b.toNext) })
	h := hs[len(hs)/2]
	fmt.Fprintf(w, "  the median hand-off:\n")
	for _, e := range ev[h.i : h.next+1] {
		what := opName(e.op) + " written"
		if !e.out {
			what = opName(e.op) + "'s reply read"
			if e.op == opNotification {
				what = "notification read"
			}
		}
		fmt.Fprintf(w, "    %9s  %s\n", fmtDur(e.at.Sub(ev[h.i].at)), what)
	}
}

// runTimeline times n uncontended cycles of every Go implementation (after
// n of warm-up, in runs of run, the implementations taking turns) and
// writes where the time of all cycles and of the slowest goes to w.
func runTimeline(ctx context.Context, w io.Writer, servers, base string, n, run int) error {
	cs, err := timelineCyclers(ctx, servers, base)
	if err != nil {
		return err
	}
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	gcs := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	gcCount := func() uint64 { metrics.Read(gcs); return gcs[0].Value.Uint64() }
	cycles := make([][]*timedCycle, len(cs))
	switches := make([]int64, len(cs)) // voluntary context switches of the process over the timed cycles
	for round := range 2 * n / run {   // the first half: warm-up
		for i, c := range cs {
			var cycled []*timedCycle
			sw0 := contextSwitches()
			for range run {
				gc0 := gcCount()
				start := time.Now()
				held, err := c.cycle(ctx)
				if err != nil {
					return fmt.Errorf("%s: %w", c.name, err)
				}
				cycled = append(cycled, &timedCycle{start: start, held: held, end: time.Now(), gc: gcCount() != gc0})
			}
			sw := contextSwitches() - sw0
			ev := c.log.take()
			if round < n/run {
				continue
			}
			switches[i] += sw
			for _, tc := range cycled {
				tc.timeline(ev)
			}
			cycles[i] = append(cycles[i], cycled...)
		}
	}
	for i, c := range cs {
		writeTimeline(w, c.name, cycles[i])
		fmt.Fprintf(w, "  voluntary context switches of the process (a thread that blocked: its next wake-up is the kernel's) per cycle: %.2f\n",
			float64(switches[i])/float64(len(cycles[i])))
	}
	return nil
}

// gcCounts are the garbage collections so far, and the CPU time they took.
type gcCounts struct {
	cycles uint64
	cpu    time.Duration
}

func gcStats() gcCounts {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	return gcCounts{s[0].Value.Uint64(), time.Duration(s[1].Value.Float64() * float64(time.Second))}
}

// contextSwitches returns the voluntary context switches of this process's
// threads so far.
func contextSwitches() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Nvcsw
}

// writeTimeline writes, for one implementation's cycles, the median of
// each step over all cycles and over the slow ones (p99 and above), and
// how many slow cycles a garbage collection ended in.
func writeTimeline(w io.Writer, name string, cycles []*timedCycle) {
	total := func(c *timedCycle) time.Duration { return c.end.Sub(c.start) }
	sorted := slices.SortedFunc(slices.Values(cycles), func(a, b *timedCycle) int { return int(total(a) - total(b)) })
	p99 := total(sorted[(len(sorted)*99+99)/100-1])
	var slow []*timedCycle
	gcAll, gcSlow := 0, 0
	for _, c := range cycles {
		if c.gc {
			gcAll++
		}
		if total(c) >= p99 {
			slow = append(slow, c)
			if c.gc {
				gcSlow++
			}
		}
	}
	fmt.Fprintf(w, "\n%s: %d cycles, p50 %s, p99 %s, slowest %s; %d slow cycles (p99 and above), a GC ended in %d of them (in %d of all)\n",
		name, len(cycles), fmtValue(unitTime, float64(total(sorted[len(sorted)/2]))), fmtValue(unitTime, float64(p99)),
		fmtValue(unitTime, float64(total(sorted[len(sorted)-1]))), len(slow), gcSlow, gcAll)
	var odd []*timedCycle // with a request other than the cycle's own
	for _, c := range cycles {
		if slices.ContainsFunc(c.marks, func(m mark) bool { return strings.HasPrefix(m.name, "op ") }) {
			odd = append(odd, c)
		}
	}
	if len(odd) > 0 {
		fmt.Fprintf(w, "  %d cycles sent other requests (opcodes: zktest.Op…); the slowest of them:\n", len(odd))
		c := slices.MaxFunc(odd, func(a, b *timedCycle) int { return int(total(a) - total(b)) })
		for _, m := range c.marks {
			fmt.Fprintf(w, "    %9s  %s\n", fmtDur(m.at.Sub(c.start)), m.name)
		}
	}
	order, all := stepTimes(cycles)
	_, inSlow := stepTimes(slow)
	fmt.Fprintf(w, "  %-62s %9s %9s %9s %9s  %s\n", "step", "all p50", "slow p50", "slow mean", "slow max", "in slow cycles")
	for _, step := range order {
		xs, ys := all[step], inSlow[step]
		if len(ys) == 0 {
			ys = []time.Duration{0}
		}
		var sum time.Duration
		for _, y := range ys {
			sum += y
		}
		fmt.Fprintf(w, "  %-62s %9s %9s %9s %9s  %d of %d\n", step, fmtDur(percentileSorted(xs, 50)), fmtDur(percentileSorted(ys, 50)),
			fmtDur(sum/time.Duration(len(ys))), fmtDur(ys[len(ys)-1]), len(inSlow[step]), len(slow))
	}
}

// stepTimes returns each step's times over cycles, sorted, and the steps
// in the order they come in a cycle (by their mean start).
func stepTimes(cycles []*timedCycle) ([]string, map[string][]time.Duration) {
	times := map[string][]time.Duration{}
	starts := map[string]time.Duration{}
	for _, c := range cycles {
		for _, st := range c.steps() {
			times[st.name] = append(times[st.name], st.d)
			starts[st.name] += st.start
		}
	}
	var order []string
	for name, xs := range times {
		slices.Sort(xs)
		order = append(order, name)
	}
	mean := func(name string) time.Duration { return starts[name] / time.Duration(len(times[name])) }
	slices.SortFunc(order, func(a, b string) int { return int(mean(a) - mean(b)) })
	return order, times
}

func fmtDur(d time.Duration) string { return fmtValue(unitTime, float64(d)) }
