package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/gocurator/curator/framework/zktest"
	"github.com/gocurator/curator/internal/jvm"
)

// This file holds the latency section: scenarios 1, 2, 4 and 5 again (keys
// 1d, 2d, 4d, 5d) with every client behind framework/zktest's proxy, which
// holds every packet for oneWayDelay on its way to the server and again on
// its way back: a datacenter network's round trip, where loopback's is a
// few tens of microseconds. The proxy runs in a process of its own (this
// command's executable, with proxyEnv set: servingProxy), as a network is
// outside the client: its CPU time is not counted as the Go clients', and
// its goroutines do not share their scheduler.

// oneWayDelay is the proxy's delay each way: a round trip of 0.5 ms.
const oneWayDelay = 250 * time.Microsecond

// delayedSuffix marks the key of a scenario of the latency section.
const delayedSuffix = "d"

// delayed reports whether key is a scenario of the latency section.
func delayed(key string) bool { return strings.HasSuffix(key, delayedSuffix) }

// latencyNote is what the latency section's scenarios say of their setup.
func latencyNote(l *latencySetup) string {
	return fmt.Sprintf("; every client behind the proxy, which adds %s to a round trip (%s each way: it holds each packet %s, its own forwarding and the kernel's wake-ups do the rest)",
		fmtValue(unitTime, float64(2*l.OneWay)), fmtValue(unitTime, float64(l.OneWay)), fmtValue(unitTime, float64(l.Delay)))
}

// latencySetup is what the latency section ran behind, as measured.
type latencySetup struct {
	OneWay time.Duration // the one-way latency it stands for
	// Delay is what the proxy holds each packet for, each way, set so
	// that a round trip through it takes 2 × OneWay more than straight to
	// the server (calibrate): the proxy's own forwarding and the kernel's
	// wake-ups add to what it is set to.
	Delay time.Duration
	// RTTDirect and RTTProxied are the median round trips of one read
	// (exists of /) on a raw go-zookeeper session, straight to the server
	// and through the proxy, interleaved, with the proxy at Delay.
	RTTDirect, RTTProxied time.Duration
}

// calibrate sets the proxy's delay so that a round trip through it takes
// 2 × oneWay more than straight to server (within a few percent, or as
// near as a few tries come), and returns what it set and measured.
func (p *proxyProc) calibrate(ctx context.Context, server string, oneWay time.Duration) (*latencySetup, error) {
	l := &latencySetup{OneWay: oneWay, Delay: oneWay}
	for try := 0; ; try++ {
		if err := p.setDelay(ctx, l.Delay); err != nil {
			return nil, err
		}
		var err error
		if l.RTTDirect, l.RTTProxied, err = measureRTT(ctx, server, p.addr, 1000); err != nil {
			return nil, fmt.Errorf("measuring a round trip: %w", err)
		}
		off := l.RTTProxied - l.RTTDirect - 2*oneWay
		if try == 3 || off.Abs() <= oneWay/25 {
			return l, nil
		}
		l.Delay = max(l.Delay-off/2, 0)
	}
}

// setDelay sets the proxy's delay each way.
func (p *proxyProc) setDelay(ctx context.Context, d time.Duration) error {
	answer, err := p.ask(ctx, "delay "+d.String())
	if err == nil && answer != "ok" {
		err = fmt.Errorf("the proxy's process answered %q", answer)
	}
	return err
}

// proxyProc is the proxy's process: it answers "counts" with the requests
// it forwarded and the notifications it passed (proxyCounts), and ends
// with its standard input.
type proxyProc struct {
	*javaProc // the line protocol is the JVMs'
	addr      string
}

// proxyCounts are a proxy's counters: forwarded requests by kind (see
// requestKinds), watch notifications ("notify"), and its process's CPU
// time in nanoseconds ("cpu").
type proxyCounts map[string]int64

// requestKinds are the requests the report breaks a scenario's packets
// into, by opcode; every other request counts as "other".
var requestKinds = []struct {
	key, label string
	ops        []int32
}{
	{"create", "create", []int32{zktest.OpCreate, zktest.OpCreate2, zktest.OpCreateContainer, zktest.OpCreateTTL}},
	{"children", "get children", []int32{zktest.OpGetChildren, zktest.OpGetChildren2}},
	{"read", "get data or exists (one node)", []int32{zktest.OpGetData, zktest.OpExists}},
	{"delete", "delete", []int32{zktest.OpDelete}},
	{"other", "other requests (multi, sync, set watches, …; pings are not counted)", []int32{
		zktest.OpSetData, zktest.OpGetACL, zktest.OpSetACL, zktest.OpSync, zktest.OpCheck, zktest.OpMulti,
		zktest.OpReconfig, zktest.OpDeleteContainer, zktest.OpMultiRead, zktest.OpSetAuth, zktest.OpSetWatches,
		zktest.OpGetEphemerals, zktest.OpSetWatches2, zktest.OpAddWatch, zktest.OpCloseSession}},
}

// requestMeasures are the measures of a repetition's proxyCounts per
// what (acquisition, lease).
func requestMeasures(what string) []Measure {
	var ms []Measure
	for _, k := range requestKinds {
		ms = append(ms, Measure{Key: "req:" + k.key, Label: "requests per " + what + ": " + k.label, Unit: unitNumber, Better: "lower"})
	}
	return append(ms, Measure{Key: "req:notify", Label: "watch notifications per " + what, Unit: unitNumber, Better: "lower"},
		Measure{Key: "req:cpu", Label: "the proxy's CPU per " + what + " (not the client's: a network's cost, on the same CPUs)", Unit: unitTime})
}

// startProxy starts the proxy's process in front of target, with no delay.
func startProxy(ctx context.Context, target string) (*proxyProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), proxyEnv+"="+target)
	proc, err := jvm.Start(cmd)
	if err != nil {
		return nil, err
	}
	p := &proxyProc{javaProc: &javaProc{proc: proc, limit: 30 * time.Second}}
	line, err := p.next(ctx, 30*time.Second)
	if err == nil {
		var ok bool
		if p.addr, ok = strings.CutPrefix(line, "addr "); !ok {
			err = fmt.Errorf("unexpected output %q", line)
		}
	}
	if err != nil {
		proc.Kill()
		return nil, fmt.Errorf("the proxy's process did not start: %w; stderr: %s", err, tail(proc.Stderr(), 1500))
	}
	return p, nil
}

// counts returns the proxy's counters now.
func (p *proxyProc) counts(ctx context.Context) (proxyCounts, error) {
	answer, err := p.ask(ctx, "counts")
	if err != nil {
		return nil, err
	}
	var c proxyCounts
	return c, json.Unmarshal([]byte(answer), &c)
}

// perAcquisition puts what the proxy counted between c0 and c1 into m, per
// acquisition of r.
func (c1 proxyCounts) perAcquisition(c0 proxyCounts, r repResult, m map[string]float64) {
	if r.ops == 0 {
		return
	}
	for k, n := range c1 { // "cpu" is in nanoseconds
		m["req:"+k] = float64(n-c0[k]) / float64(r.ops)
	}
}

// proxyEnv, set to a server's address, makes this command's executable
// (or its test binary) the proxy's process in front of it.
const proxyEnv = "GOCURATOR_BENCH_PROXY"

// servingProxy returns at once unless proxyEnv is set; then it serves the
// proxy it says (serveProxy) and exits.
func servingProxy() {
	target := os.Getenv(proxyEnv)
	if target == "" {
		return
	}
	if err := serveProxy(target); err != nil {
		fmt.Fprintf(os.Stderr, "gocurator-bench: the proxy's process (%s=%q): %v\n", proxyEnv, target, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveProxy is a proxy to target: its address on the first line of the
// standard output; then, for each line of the standard input until its
// end, "delay <d>" sets its delay each way (answered "ok"), "counts" is
// answered with its counters.
func serveProxy(target string) error {
	p, err := zktest.StartProxy(target)
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Printf("addr %s\n", p.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if d, ok := strings.CutPrefix(in.Text(), "delay "); ok {
			delay, err := time.ParseDuration(d)
			if err != nil {
				return err
			}
			p.SetDelays(delay, delay)
			fmt.Println("ok")
			continue
		}
		if in.Text() != "counts" {
			return fmt.Errorf("unknown request %q", in.Text())
		}
		cpu, err := processCPU()
		if err != nil {
			return err
		}
		c := proxyCounts{"notify": p.Notifications(), "cpu": int64(cpu)}
		for _, k := range requestKinds {
			c[k.key] = 0
			for _, op := range k.ops {
				c[k.key] += p.Requests(op)
			}
		}
		b, _ := json.Marshal(c)
		fmt.Printf("%s\n", b)
	}
	return in.Err()
}

// measureRTT returns the median round trips of one read straight to the
// server and through the proxy: n of each, in alternating runs of 50.
func measureRTT(ctx context.Context, direct, proxied string, n int) (time.Duration, time.Duration, error) {
	var conns []*rawConn
	defer func() {
		for _, c := range conns {
			c.close()
		}
	}()
	for _, addr := range []string{direct, proxied} {
		c, err := newRawConn(ctx, addr, nil)
		if err != nil {
			return 0, 0, err
		}
		conns = append(conns, c)
	}
	rtts := make([][]time.Duration, 2)
	for len(rtts[1]) < n {
		for i, c := range conns {
			for range 50 {
				start := time.Now()
				if _, _, err := c.Exists("/"); err != nil {
					return 0, 0, err
				}
				rtts[i] = append(rtts[i], time.Since(start))
			}
		}
	}
	p50 := func(xs []time.Duration) time.Duration {
		return percentileSorted(slices.Sorted(slices.Values(xs)), 50)
	}
	return p50(rtts[0]), p50(rtts[1]), nil
}
