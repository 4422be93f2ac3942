// Command gocurator-bench measures gocurator's lock recipes against the
// floor (the textbook ZooKeeper lock on raw go-zookeeper), Apache Curator
// 5.4 in a JVM, and go-zookeeper's own zk.Lock, on one ZooKeeper server,
// and writes docs/performance.md. `make bench` runs it.
//
// Usage:
//
//	gocurator-bench [-servers host:port] [-quick] [-out docs/performance.md] [-java=true]
//	                [-scenarios 1,2,3,4,5,6,7] [-reps n] [-waiters n] [-gobench=true] [-profile dir]
//
// Without -servers it starts a throwaway ZooKeeper (Debian's zookeeper
// package; forceSync off, as the tests run it; its data dir on /dev/shm
// where that is a writable tmpfs) and removes it afterwards.
// With -servers, the first server must answer the four-letter words mntr
// and wchp (4lw.commands.whitelist), allow a few hundred connections from this host
// (maxClientCnxns), and serve no other client during the run: its counters
// are the herd measure. The run's nodes are deleted afterwards.
//
// A -quick run writes its report to $TMPDIR/gocurator-bench-quick.md unless
// -out is given, so that smoke numbers never replace docs/performance.md.
// The plot of scenario 2's sweep, hot-mutex-sessions.svg, goes next to the
// report (docs/hot-mutex-sessions.svg for a full run), which links to it.
//
// Scenarios:
//
//  1. uncontended mutex acquire + release, one client: p50 / p99 latency;
//  2. one hot mutex, 8 sessions in a loop: acquisitions per second; and,
//     for gocurator, Curator and the floor, with 1, 2, 4, 8, 16 and 32
//     sessions (the plot);
//  3. read-write lock, W R R R W R R R … with 50 readers: server packets
//     per writer release (the herd) and time to drain the queue;
//  4. semaphore with 3 leases, 16 sessions: leases per second;
//  5. 200 lock paths, 16 goroutines on one session: acquisitions per second;
//  6. 10,000 handles waiting on one lock in one process: memory per waiter
//     and FIFO order (Go only);
//  7. a LeaderLatch election of two candidates: the time from the leader's
//     Close, or from the end of its session, until the other knows it leads.
//
// The Java side (java/CuratorBench.java, embedded) is compiled with javac
// (once: internal/jvm caches the classes) and run as one child JVM per
// scenario, which
// sets up and warms up, then runs each repetition when asked on stdin and
// prints its result as one JSON line. Within a scenario the repetitions of
// all implementations alternate, one at a time.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocurator/curator/framework/zktest"
)

type options struct {
	servers   string
	quick     bool
	out       string
	java      bool
	scenarios string
	reps      int
	gobench   bool
	profile   string
	waiters   int
}

func main() {
	var o options
	flag.StringVar(&o.servers, "servers", "", "ZooKeeper connect string; empty starts a throwaway server")
	flag.BoolVar(&o.quick, "quick", false, "small counts, one repetition: a smoke run of about a minute")
	flag.StringVar(&o.out, "out", "docs/performance.md", "the report to write (with -quick: $TMPDIR/gocurator-bench-quick.md unless given); empty writes none")
	flag.BoolVar(&o.java, "java", true, "measure Java Curator too (needs javac and Debian's libcurator-recipes-java)")
	flag.StringVar(&o.scenarios, "scenarios", "1,2,3,4,5,6,7", "scenarios to run")
	flag.IntVar(&o.reps, "reps", 0, "repetitions (0: 3, or 1 with -quick)")
	flag.BoolVar(&o.gobench, "gobench", true, "also run `go test -bench . -benchmem ./recipes` and put its output in the report")
	flag.StringVar(&o.profile, "profile", "", "write CPU profiles of gocurator's runs to this directory")
	flag.IntVar(&o.waiters, "waiters", 0, "waiting handles in scenario 6 (0: 10000, or 500 with -quick)")
	flag.Parse()
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if o.quick && !outSet {
		// a smoke run must not overwrite the committed report
		o.out = filepath.Join(os.TempDir(), "gocurator-bench-quick.md")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "gocurator-bench:", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func parseScenarios(s string) (map[int]bool, error) {
	out := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 7 {
			return nil, fmt.Errorf("-scenarios: %q is not a scenario (1 to 7)", f)
		}
		out[n] = true
	}
	return out, nil
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	which, err := parseScenarios(o.scenarios)
	if err != nil {
		return err
	}
	c := fullCounts()
	if o.quick {
		c = quickCounts()
	}
	if o.reps > 0 {
		c.Reps = o.reps
	}
	if o.waiters > 0 {
		c.S6Wait = o.waiters
	}
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	rep := &report{Generated: began, Quick: o.quick, Counts: c, Machine: readMachine(), GoVersion: runtime.Version(),
		GoZKVersion: moduleVersion("github.com/go-zookeeper/zk"), Revision: gitRevision(), LoadStart: loadAverage()}

	e := &env{servers: o.servers, c: c, logf: logf, profileDir: o.profile,
		base: "/gocurator-bench/" + strconv.FormatInt(began.UnixNano(), 36)}
	var srv *zktest.Server
	if e.servers == "" {
		logf("starting a throwaway ZooKeeper ...")
		srv, err = zktest.StartServer(
			zktest.WithContainerCheckInterval(60*time.Second), // ZooKeeper's default: containers are not reaped mid-run
			zktest.WithTmpfs(), // no disk stalls in what is measured
			zktest.WithJVMFlags("-Xmx1g", "-XX:TieredStopAtLevel=4"))
		if err != nil {
			return fmt.Errorf("starting ZooKeeper: %w", err)
		}
		defer srv.Close()
		e.servers = srv.Addr()
		rep.ServerSetup = "throwaway standalone server started by the command (framework/zktest): forceSync=no, " +
			"containers reaped every 60 s, JVM -Xmx1g with the full JIT, on the same machine as the clients; " + dataDirSetup(srv.DataDir())
	} else {
		rep.ServerSetup = "external (-servers " + e.servers + "); packets are counted on its first server only"
	}
	if m, err := mntr(e.servers); err != nil {
		return fmt.Errorf("mntr on %s: %w", e.servers, err)
	} else {
		rep.ZKServerVersion = m["zk_version"]
	}
	logf("ZooKeeper %s at %s", rep.ZKServerVersion, e.servers)

	if o.java {
		j, err := newJavaRunner(ctx)
		if err != nil {
			rep.JavaOff = err.Error()
			logf("!!!!! JAVA CURATOR WILL NOT BE MEASURED: %v !!!!!", err)
		} else {
			e.java = j
		}
	} else {
		rep.JavaOff = "turned off with -java=false"
		logf("!!!!! JAVA CURATOR WILL NOT BE MEASURED (-java=false) !!!!!")
	}
	e.javaOff = rep.JavaOff

	if err := e.warmServer(ctx); err != nil {
		return fmt.Errorf("warming the server up: %w", err)
	}
	runners := []func(context.Context) *scenarioResult{e.scenario1, e.scenario2, e.scenario3, e.scenario4, e.scenario5, e.scenario6, e.scenario7}
	for i, f := range runners {
		if !which[i+1] {
			continue
		}
		rep.Scenarios = append(rep.Scenarios, f(ctx))
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	rep.LoadEnd = loadAverage()
	if e.java != nil {
		rep.JavaVersion, rep.CuratorVersion, rep.ZKClientVersion = e.java.javaVersion, e.java.curatorVersion, e.java.zkClientVersion
	}
	if srv == nil {
		if err := e.cleanup(ctx); err != nil {
			logf("cleaning up %s: %v", e.base, err)
		}
	} else {
		srv.Close() // free the CPU for the Go benchmarks
	}

	if o.gobench {
		rep.GoBenchCmd, rep.GoBench, rep.GoBenchErr = runGoBench(ctx, o.quick)
	}
	if o.profile != "" {
		rep.Notes = append(rep.Notes, "CPU profiles of gocurator's runs were written to "+o.profile+" (go tool pprof).")
	}
	rep.Elapsed = time.Since(began)
	if o.out != "" {
		if err := writeOutput(o.out, rep.write); err != nil {
			return err
		}
		// the plot the report links to, next to it
		if plot, ok := rep.hotMutexPlot(); ok {
			if err := writeOutput(filepath.Join(filepath.Dir(o.out), hotMutexSVG), plot.writeSVG); err != nil {
				return err
			}
		}
	}
	fmt.Printf("gocurator-bench: %s in %s\n", map[bool]string{true: "quick run", false: "full run"}[o.quick], rep.Elapsed.Round(time.Second))
	for _, t := range rep.targets() {
		fmt.Printf("  scenario %d: %-8s %s — %s\n", t.Scenario, t.Status, t.Text, t.Measured)
	}
	return nil
}

// dataDirSetup says where the server's data dir is, for the report.
func dataDirSetup(dir string) string {
	typ := fsType(dir)
	if typ == "tmpfs" {
		return "data dir on tmpfs (" + dir + "): snapshots and transaction log in memory"
	}
	return "data dir on disk (" + dir + ", " + typ + "): no writable tmpfs at /dev/shm, so disk stalls may show in the numbers"
}

// writeOutput writes a file of the run's output with write.
func writeOutput(path string, write func(io.Writer)) error {
	var buf bytes.Buffer
	write(&buf)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}

// warmServer runs the floor's mutex for a while so the server's JIT has
// compiled its request path before anything is measured.
func (e *env) warmServer(ctx context.Context) error {
	d := 3 * time.Second
	if e.c.Reps <= 1 && e.c.S1Ops < 1000 {
		d = time.Second
	}
	logf("warming the server up for %s ...", d)
	ss, closeAll, err := connectAll(ctx, implFloor, e.servers, 4)
	if err != nil {
		return err
	}
	defer closeAll()
	var workers []func(context.Context) error
	for _, s := range ss {
		mk, _ := s.Mutex(e.base + "/warm")
		workers = append(workers, cycleOf(mk()))
	}
	_, _, err = runTimed(ctx, workers, d)
	return err
}

// cleanup removes the run's tree from an external server.
func (e *env) cleanup(ctx context.Context) error {
	c, err := connectRaw(ctx, e.servers)
	if err != nil {
		return err
	}
	defer c.close()
	return deleteTree(c.Conn, e.base)
}

// runGoBench runs the recipes' go test benchmarks from the module root.
func runGoBench(ctx context.Context, quick bool) (cmdline, out, errText string) {
	args := []string{"test", "-run", "^$", "-bench", ".", "-benchmem", "-count", "1"}
	if quick {
		args = append(args, "-benchtime", "100x")
	}
	args = append(args, "./recipes")
	cmdline = "go " + strings.Join(args, " ")
	goBin, err := exec.LookPath("go")
	if err != nil {
		return cmdline, "", "go not found"
	}
	root, err := moduleRoot(ctx, goBin)
	if err != nil {
		return cmdline, "", err.Error()
	}
	logf("running %s ...", cmdline)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = root
	b, err := cmd.CombinedOutput()
	if err != nil {
		return cmdline, string(b), err.Error()
	}
	return cmdline, string(b), ""
}

func moduleRoot(ctx context.Context, goBin string) (string, error) {
	out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the gocurator module (run from the repository)")
	}
	return filepath.Dir(mod), nil
}
