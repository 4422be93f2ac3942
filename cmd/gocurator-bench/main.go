// Command gocurator-bench measures gocurator's lock recipes side by side
// with Apache Curator 5.4 in a JVM and the floor and the limit (the
// textbook ZooKeeper lock and a bare create + delete on raw go-zookeeper,
// from internal/rawlock), on a throwaway ZooKeeper server and a throwaway
// 3-member ensemble. It writes the run's results to docs/performance.json
// and renders docs/performance.md from them, with the plot
// docs/hot-mutex-sessions.svg. `make bench` runs it.
//
// Usage:
//
//	gocurator-bench [-quick] [-out docs/performance.md] [-java=true] [-reps n]
//	                [-scenarios 1,2,3,4,5,6,7,8,1d,2d,4d,5d,1e,2e] [-waiters n] [-merge]
//	                [-heapprofile file]
//	gocurator-bench -render docs/performance.json
//	gocurator-bench -timeline
//
// (Run with GOCURATOR_BENCH_PROXY set, it is the latency section's proxy,
// in a process of its own: see latency.go.)
//
// The servers are Debian's zookeeper package run by framework/zktest:
// forceSync off, as the tests run them; their data dirs on /dev/shm where
// that is a writable tmpfs. A -quick run writes its results to
// $TMPDIR/gocurator-bench-quick.{json,md} unless -out is given, so that
// smoke numbers never replace the committed ones. -render renders the
// report (and the plot) again from a results file, beside it: after a
// change of the template (report.md.tmpl) or of the targets (targets.go).
//
// The scenarios, keys 1 to 8, are each a file, scenario_*.go, that says
// what it measures (their sizes: counts, in results.go); 1d, 2d, 4d and 5d
// are scenarios 1, 2 (without the sweep), 4 and 5 at a datacenter's
// latency, every client behind a proxy that holds each packet 0.25 ms each
// way (latency.go); 1e and 2e are scenarios 1 and 2 (without the sweep) on
// the ensemble, where every write goes through a quorum, as in production.
// How the implementations take turns: scenario.go; the Java side: java.go.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

type options struct {
	quick     bool
	out       string
	java      bool
	scenarios string
	reps      int
	waiters   int
	render    string
	timeline  bool
	heapProf  string
	merge     bool
}

// allScenarios are the scenarios' keys, in the order they run: the
// standalone server's, then its latency section's, then the ensemble's.
var allScenarios = []string{"1", "2", "3", "4", "5", "6", "7", "8", "1d", "2d", "4d", "5d", "1e", "2e"}

func main() {
	var o options
	flag.BoolVar(&o.quick, "quick", false, "small counts, one repetition: a smoke run of about a minute")
	flag.StringVar(&o.out, "out", "", "the report to write (.md), the results beside it (.json) (default docs/performance.md; with -quick, $TMPDIR/gocurator-bench-quick.md)")
	flag.BoolVar(&o.java, "java", true, "measure Java Curator too (needs javac and Debian's libcurator-recipes-java)")
	flag.StringVar(&o.scenarios, "scenarios", strings.Join(allScenarios, ","), "scenarios to run")
	flag.IntVar(&o.reps, "reps", 0, "repetitions (0: 3, or 1 with -quick)")
	flag.IntVar(&o.waiters, "waiters", 0, "waiting handles in scenario 6 (0: 5000, or 500 with -quick)")
	flag.StringVar(&o.render, "render", "", "render the report again from this results file (.json), beside it, and run nothing")
	flag.StringVar(&o.heapProf, "heapprofile", "", "write heap profiles (every allocation sampled) of scenario 6's waiters, once all wait, to this file's name -gocurator and -floor (their times are then not comparable)")
	flag.BoolVar(&o.merge, "merge", false, "put the scenarios run into the results already at -out's .json, in place of theirs, keep the others, and render the report again (each merged scenario says when, and at which revision and load, it ran)")
	flag.BoolVar(&o.timeline, "timeline", false, "trace where the time of the uncontended cycle (scenario 1) and of its slowest cycles goes, for each Go implementation, and run nothing else")
	flag.Parse()
	servingProxy()
	if o.out == "" {
		o.out = "docs/performance.md"
		if o.quick {
			o.out = filepath.Join(os.TempDir(), "gocurator-bench-quick.md")
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case o.render != "":
		err = renderFile(o.render)
	case o.timeline:
		err = timeline(ctx, os.Stdout)
	default:
		err = run(ctx, o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gocurator-bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	keys := strings.Split(strings.ReplaceAll(o.scenarios, " ", ""), ",")
	for _, k := range keys {
		if !slices.Contains(allScenarios, k) {
			return fmt.Errorf("-scenarios: %q is none of %s", k, strings.Join(allScenarios, ","))
		}
	}
	c := fullCounts()
	if o.quick {
		c = quickCounts()
	}
	c.Reps = cmp.Or(o.reps, c.Reps)
	c.S6Wait = cmp.Or(o.waiters, c.S6Wait)
	res := &Results{Generated: began, Quick: o.quick, Counts: c, CPU: cpuModel(), LoadStart: loadAverage(),
		Versions: versions{Go: runtime.Version(), GoZK: moduleVersion("github.com/go-zookeeper/zk"), Revision: gitRevision()}}
	if loadHigh(res.LoadStart) {
		logf("!!!!! LOAD AVERAGE %s AT THE START: THE REPORT WILL SAY THAT ITS NUMBERS ARE NOISE !!!!!", fmtLoads(res.LoadStart))
	}
	e := &env{c: c, logf: logf, heapProfile: o.heapProf, base: "/gocurator-bench/" + strconv.FormatInt(began.UnixNano(), 36)}
	if o.java {
		j, err := newJavaRunner(ctx, &res.Versions)
		if err != nil {
			res.JavaOff = err.Error()
		}
		e.java = j
	} else {
		res.JavaOff = "turned off with -java=false"
	}
	if e.javaOff = res.JavaOff; e.javaOff != "" {
		logf("!!!!! JAVA CURATOR WILL NOT BE MEASURED: %s !!!!!", e.javaOff)
	}
	zkOpts := serverOptions()
	const setup = "forceSync=no, containers reaped every 60 s, JVM -Xmx1g with the full JIT, on the same machine as the clients; "
	onEnsemble := func(k string) bool { return strings.HasSuffix(k, "e") }
	if standalone := slices.DeleteFunc(slices.Clone(keys), onEnsemble); len(standalone) > 0 {
		loopback := slices.DeleteFunc(slices.Clone(standalone), delayed)
		logf("starting a throwaway ZooKeeper ...")
		srv, err := zktest.StartServer(append(zkOpts, zktest.WithStandaloneMode())...)
		if err != nil {
			return fmt.Errorf("starting ZooKeeper: %w", err)
		}
		defer srv.Close()
		res.ServerSetup = "a throwaway server in standalone mode (framework/zktest): " + setup + dataDirSetup(srv.DataDir()) +
			"; standalone mode has no CommitProcessor, so ZOOKEEPER-4537 (fixed in 3.8.1: a lone client's request can wait for its next ping, 10 s) cannot stall it"
		if err := e.runOn(ctx, srv, srv.Addr(), loopback, res); err != nil {
			return err
		}
		if behind := slices.DeleteFunc(standalone, func(k string) bool { return !delayed(k) }); len(behind) > 0 {
			if err := e.runBehindProxy(ctx, srv, behind, res); err != nil {
				return err
			}
		}
		srv.Close() // free its memory and CPU for the ensemble
	}
	if ensemble := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return !onEnsemble(k) }); len(ensemble) > 0 {
		logf("starting a throwaway 3-member ZooKeeper ensemble ...")
		ens, err := zktest.StartEnsemble(3, zkOpts...)
		if err != nil {
			return fmt.Errorf("starting the ensemble: %w", err)
		}
		defer ens.Close()
		leader, err := ens.Leader()
		if err != nil {
			return err
		}
		follower := ens.Members()[(leader+1)%3]
		res.EnsembleSetup = fmt.Sprintf("3 throwaway members (framework/zktest): %s%s; every client connects to member %d, a follower, "+
			"so that each write goes to the leader and is committed by a quorum before the follower replies; ZooKeeper 3.8.0's ZOOKEEPER-4537 "+
			"(fixed in 3.8.1) can make a lone client's request there wait for its next ping, 10 s: such a stall shows in scenario 1e's slowest cycle",
			setup, dataDirSetup(ens.Dir()), follower.ID())
		if err := e.runOn(ctx, follower, follower.Addr(), ensemble, res); err != nil {
			return err
		}
		ens.Close()
	}
	res.LoadEnd = loadAverage()
	res.Elapsed = time.Since(began)
	results := strings.TrimSuffix(o.out, ".md") + ".json"
	run := res
	if o.merge {
		var err error
		if res, err = mergeInto(results, run); err != nil {
			return err
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err == nil {
		err = writeFile(results, append(b, '\n'))
	}
	if err == nil {
		err = renderFile(results)
	}
	if err != nil {
		return err
	}
	merged := ""
	if o.merge {
		merged = ", merged into"
	}
	fmt.Printf("gocurator-bench: %s in %s, load average %s at the start%s; %s\n", map[bool]string{true: "quick run", false: "full run"}[o.quick],
		run.Elapsed.Round(time.Second), fmtLoads(run.LoadStart), merged, o.out)
	for _, t := range res.targetResults() {
		fmt.Printf("  %-3s %-8s %s %s: %s vs %s = %s\n", t.Scenario, t.Status, t.Measure, t.Target, t.Ours, t.Theirs, t.Ratio)
	}
	return nil
}

// mergeInto returns the results in the file at path with the scenarios of
// run in place of theirs (or added, in allScenarios' order), each noting
// that it ran on its own, when, at which revision and load. The other
// scenarios, and the report's header (its run's time, versions and load),
// stay as they were.
func mergeInto(path string, run *Results) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-merge: %w", err)
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, fmt.Errorf("-merge: %s: %w", path, err)
	}
	if res.Quick != run.Quick {
		return nil, fmt.Errorf("-merge: %s is a %s run, this one is not", path, map[bool]string{true: "-quick", false: "full"}[res.Quick])
	}
	for _, s := range run.Scenarios {
		s.Notes = append(s.Notes, fmt.Sprintf("This scenario ran on its own (gocurator-bench -scenarios %s -merge) on %s, at revision %s, "+
			"load average %s at its start (%s at its end), %d repetition(s); the rest of this report ran as its header says.",
			s.Key, run.Generated.UTC().Format("2006-01-02 15:04 MST"), run.Versions.Revision, fmtLoads(run.LoadStart), fmtLoads(run.LoadEnd), run.Counts.Reps))
		res.Scenarios = slices.DeleteFunc(res.Scenarios, func(old *Scenario) bool { return old.Key == s.Key })
		at := len(res.Scenarios)
		for i, old := range res.Scenarios {
			if slices.Index(allScenarios, old.Key) > slices.Index(allScenarios, s.Key) {
				at = i
				break
			}
		}
		res.Scenarios = slices.Insert(res.Scenarios, at, s)
	}
	// The sizes of scenarios the file's run did not have (zero there).
	res.Counts.S8Nodes = cmp.Or(res.Counts.S8Nodes, run.Counts.S8Nodes)
	res.Counts.S8Updates = cmp.Or(res.Counts.S8Updates, run.Counts.S8Updates)
	if res.JavaOff == "" && run.JavaOff != "" {
		res.JavaOff = run.JavaOff
	}
	return &res, nil
}

// serverOptions are the options of the servers the bench starts.
func serverOptions() []zktest.Option {
	return []zktest.Option{
		zktest.WithContainerCheckInterval(60 * time.Second), // ZooKeeper's default: containers are not reaped mid-run
		zktest.WithTmpfs(), // no disk stalls in what is measured
		zktest.WithJVMFlags("-Xmx1g", "-XX:TieredStopAtLevel=4"),
	}
}

// runOn runs the scenarios of keys with srv, whose clients connect to
// servers (srv's address, or a proxy's), after warming it up: the floor's
// mutex for a while, so that its JIT has compiled its request path before
// anything is measured.
func (e *env) runOn(ctx context.Context, srv *zktest.Server, servers string, keys []string, res *Results) error {
	if len(keys) == 0 {
		return nil
	}
	e.srv, e.servers = srv, servers
	m, err := srv.Mntr()
	if err != nil {
		return err
	}
	res.Versions.ZKServer = m["zk_version"]
	logf("ZooKeeper %s at %s: warming it up ...", res.Versions.ZKServer, e.servers)
	warm, err := e.lockLoop(ctx, implFloor, e.base+"/warm", loop{4, 4, 1, 0})
	if err == nil {
		_, err = warm.rep(ctx, 0)
		warm.close()
	}
	if err != nil {
		return fmt.Errorf("warming the server up: %w", err)
	}
	for _, k := range keys {
		res.Scenarios = append(res.Scenarios, e.scenario(ctx, k))
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// runBehindProxy runs the latency section's scenarios of keys with srv,
// every client behind a proxy's process in front of it, after measuring
// what a round trip takes straight and through the proxy.
func (e *env) runBehindProxy(ctx context.Context, srv *zktest.Server, keys []string, res *Results) error {
	logf("starting the proxy's process, and setting its delay so that it adds %s to a round trip ...", 2*oneWayDelay)
	p, err := startProxy(ctx, srv.Addr())
	if err != nil {
		return err
	}
	defer func() { p.close(); e.proxy = nil }()
	l, err := p.calibrate(ctx, srv.Addr(), oneWayDelay)
	if err != nil {
		return err
	}
	logf("the proxy holds each packet %s each way: a round trip of one read takes %s straight to the server, %s through the proxy",
		l.Delay, l.RTTDirect, l.RTTProxied)
	res.Latency, e.proxy, e.latency = l, p, l
	return e.runOn(ctx, srv, p.addr, keys, res)
}

// scenario runs the scenario of key.
func (e *env) scenario(ctx context.Context, key string) *Scenario {
	where := map[string]string{"e": ", on the ensemble", delayedSuffix: ", at a datacenter's latency"}[key[len(key)-1:]]
	switch key {
	case "1", "1e", "1d":
		return e.scenario1(ctx, key, where)
	case "2":
		return e.scenario2(ctx, key, "", e.c.S2Sweep)
	case "2e", "2d":
		return e.scenario2(ctx, key, where, nil)
	case "3":
		return e.scenario3(ctx)
	case "4", "4d":
		return e.scenario4(ctx, key, where)
	case "5", "5d":
		return e.scenario5(ctx, key, where)
	case "6":
		return e.scenario6(ctx)
	case "8":
		return e.scenario8(ctx)
	default:
		return e.scenario7(ctx)
	}
}

// dataDirSetup says where a server's data dir is, for the report.
func dataDirSetup(dir string) string {
	if strings.HasPrefix(dir, "/dev/shm/") {
		return "data dir on tmpfs (" + dir + "): snapshots and transaction log in memory"
	}
	return "data dir on disk (" + dir + "): no writable tmpfs at /dev/shm, so disk stalls may show in the numbers"
}

// renderFile renders the report of a results file, and the plot it links
// to, beside it.
func renderFile(path string) error {
	if !strings.HasSuffix(path, ".json") {
		return errors.New("the results file's name must end in .json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var res Results
	if err := json.Unmarshal(b, &res); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var md bytes.Buffer
	if err := res.render(&md); err != nil {
		return err
	}
	if err := writeFile(strings.TrimSuffix(path, ".json")+".md", md.Bytes()); err != nil {
		return err
	}
	if plot, ok := res.hotMutexPlot(); ok {
		var svg bytes.Buffer
		plot.writeSVG(&svg)
		return writeFile(filepath.Join(filepath.Dir(path), hotMutexSVG), svg.Bytes())
	}
	return nil
}

func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}
