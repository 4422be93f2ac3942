package jvm_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gocurator/curator/internal/jvm"
	"github.com/gocurator/curator/internal/testutil"
)

// echoSource echoes its input lines, says "bye" on stderr at the end of its
// input, and with the argument "deaf" ignores its input and sleeps.
const echoSource = `
public class Echo {
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("deaf")) {
            System.out.println("deaf");
            System.out.flush();
            Thread.sleep(600_000);
        }
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        for (String l; (l = in.readLine()) != null; ) {
            System.out.println("echo " + l);
            System.out.flush();
        }
        System.err.println("bye");
    }
}
`

// echo compiles Echo (into a cache of the test's own) and returns a command
// that runs it.
func echo(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	java, err := jvm.Tool("java")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := jvm.Compile(testutil.Context(t), "Echo", []byte(echoSource), "")
	if err != nil {
		t.Fatal(err)
	}
	return exec.Command(java, append([]string{"-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", cp, "Echo"}, args...)...)
}

func TestMain(m *testing.M) {
	// Compile into a cache of the tests' own.
	dir, err := os.MkdirTemp("", "jvm-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", dir)
	os.Setenv("HOME", dir) // where XDG_CACHE_HOME does not count
	code := m.Run()
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// start starts cmd and, when the test ends, however it ends, stops the JVM
// by its pid (Kill: SIGKILL to it, then waiting for it; nothing if it has
// exited already). Call it after testutil.CheckLeaks, so that the JVM and
// its reader are gone before the leak check.
func start(t *testing.T, cmd *exec.Cmd) *jvm.Process {
	t.Helper()
	p, err := jvm.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

// linesEnd fails the test unless p's output is at its end (Lines closed),
// or comes to it within the test's bound.
func linesEnd(t *testing.T, p *jvm.Process, what string) {
	t.Helper()
	select {
	case l, ok := <-p.Lines():
		if ok {
			t.Fatalf("%s: a line %q", what, l)
		}
	case <-testutil.Context(t).Done():
		t.Fatalf("%s: Lines not closed within %v", what, testutil.Timeout)
	}
}

// nextLine returns the next line of p's output.
func nextLine(t *testing.T, p *jvm.Process) string {
	t.Helper()
	select {
	case l, ok := <-p.Lines():
		if !ok {
			t.Fatalf("output ended; stderr %q", p.Stderr())
		}
		return l
	case <-testutil.Context(t).Done():
		t.Fatal("no output")
	}
	return ""
}

func TestLinesStderrAndStop(t *testing.T) {
	testutil.CheckLeaks(t)
	p := start(t, echo(t))
	fmt.Fprintln(p.Stdin(), "one")
	fmt.Fprintln(p.Stdin(), "two")
	if a, b := nextLine(t, p), nextLine(t, p); a != "echo one" || b != "echo two" {
		t.Fatalf("lines %q, %q", a, b)
	}
	if err := p.Stop(nil, time.Minute); err != nil { // the end of its input ends it
		t.Fatal(err)
	}
	if !p.Exited() || p.Err() != nil {
		t.Fatalf("after Stop: exited %v, %v", p.Exited(), p.Err())
	}
	if got := p.Stderr(); got != "bye\n" {
		t.Fatalf("stderr %q", got)
	}
	linesEnd(t, p, "after Stop")
	if err := p.Stop(nil, time.Minute); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func TestStopKillsAfterGrace(t *testing.T) {
	testutil.CheckLeaks(t)
	p := start(t, echo(t, "deaf"))
	if l := nextLine(t, p); l != "deaf" {
		t.Fatalf("line %q", l)
	}
	err := p.Stop(nil, 200*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("Stop of a JVM that ignores its input: %v", err)
	}
	if !p.Exited() {
		t.Fatal("not waited for")
	}
	// What it was doing instead of exiting is in its stderr.
	if dump := p.Stderr(); !strings.Contains(dump, "Full thread dump") || !strings.Contains(dump, `"main"`) {
		t.Fatalf("no thread dump in the stderr of a JVM that was killed: %v; stderr:\n%s", err, dump)
	}
}

func TestStopWithSignalAndKill(t *testing.T) {
	testutil.CheckLeaks(t)
	term := start(t, echo(t, "deaf"))
	kill := start(t, echo(t, "deaf"))
	nextLine(t, term) // running, not just starting
	nextLine(t, kill)
	if err := term.Stop(syscall.SIGTERM, time.Minute); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if !errors.As(term.Err(), &ee) {
		t.Fatalf("SIGTERM: %v", term.Err())
	}
	kill.Kill()
	if !kill.Exited() || kill.Err() == nil {
		t.Fatalf("Kill: exited %v, %v", kill.Exited(), kill.Err())
	}
}

func TestUnreadOutputDoesNotHoldStop(t *testing.T) {
	testutil.CheckLeaks(t)
	p := start(t, echo(t))
	for i := range 1000 { // more than the channel holds; nobody reads
		fmt.Fprintln(p.Stdin(), i)
	}
	if err := p.Stop(nil, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestGivenStdoutAndStderr(t *testing.T) {
	testutil.CheckLeaks(t)
	cmd := echo(t)
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	p := start(t, cmd)
	linesEnd(t, p, "with a given stdout")
	fmt.Fprintln(p.Stdin(), "x")
	if err := p.Stop(nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(log.Name())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "echo x\nbye\n" || p.Stderr() != "" {
		t.Fatalf("log %q, Stderr %q", b, p.Stderr())
	}
}

func TestCompileCaches(t *testing.T) {
	ctx := testutil.Context(t)
	cp, err := jvm.Compile(ctx, "Echo", []byte(echoSource), "")
	if err != nil {
		t.Fatal(err)
	}
	classes := filepath.SplitList(cp)[0]
	st, err := os.Stat(filepath.Join(classes, "Echo.class"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := jvm.Compile(ctx, "Echo", []byte(echoSource), "")
	if err != nil || again != cp {
		t.Fatalf("second Compile: %q, %v (first %q)", again, err, cp)
	}
	if st2, err := os.Stat(filepath.Join(classes, "Echo.class")); err != nil || !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("compiled again")
	}
	other, err := jvm.Compile(ctx, "Echo", []byte(echoSource+"\n"), "")
	if err != nil || other == cp {
		t.Fatalf("a changed source: %q, %v", other, err)
	}
	_, err = jvm.Compile(ctx, "Broken", []byte("public class Broken {"), "")
	if err == nil || !strings.Contains(err.Error(), "javac Broken.java") {
		t.Fatalf("a broken source: %v", err)
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("JAVA_HOME", "")
	t.Setenv("PATH", t.TempDir())
	_, err := jvm.Tool("javac")
	if !errors.Is(err, jvm.ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install default-jdk-headless") {
		t.Fatalf("Tool without a JDK: %v", err)
	}
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "bin", "java"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JAVA_HOME", home)
	if p, err := jvm.Tool("java"); err != nil || p != filepath.Join(home, "bin", "java") {
		t.Fatalf("Tool with JAVA_HOME: %q, %v", p, err)
	}
}

func TestCuratorClasspath(t *testing.T) {
	t.Setenv(jvm.CuratorClasspathEnv, "/x.jar:/y.jar")
	if cp, err := jvm.CuratorClasspath(); err != nil || cp != "/x.jar:/y.jar" {
		t.Fatalf("with %s: %q, %v", jvm.CuratorClasspathEnv, cp, err)
	}
	t.Setenv(jvm.CuratorClasspathEnv, "")
	cp, err := jvm.CuratorClasspath()
	if err != nil {
		if !errors.Is(err, jvm.ErrNotInstalled) {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if !strings.Contains(cp, "curator-recipes.jar") {
		t.Fatalf("classpath %q", cp)
	}
}

// Compiles at once leave one cache entry and no build directory behind.
func TestCompileRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := []byte(echoSource + "// race\n")
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := jvm.Compile(ctx, "Echo", src, "")
			errs <- err
		}()
	}
	for range 2 {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(3 * time.Minute): // Compile's own bound is ctx's two minutes
			t.Fatal("Compile did not return within 3 minutes")
		}
	}
	root, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	left, err := filepath.Glob(filepath.Join(root, "gocurator-java", "build-*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("build directories left: %v", left)
	}
}
