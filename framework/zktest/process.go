package zktest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gocurator/curator/internal/jvm"
)

// ClasspathEnv names the environment variable that, when set, replaces the
// default classpath used to run ZooKeeper.
const ClasspathEnv = "ZOOKEEPER_CLASSPATH"

// Paths of Debian's zookeeper package (and of the slf4j binding that makes
// the server log to stderr, which we redirect to LogPath).
const (
	debianZooKeeperJar = "/usr/share/java/zookeeper.jar"
	debianSlf4jSimple  = "/usr/share/java/slf4j-simple.jar"
)

const installHint = "install ZooKeeper and Java with `apt-get install zookeeper` " +
	"(Debian/Ubuntu; `make test` installs it), or set " + ClasspathEnv +
	" to a classpath holding ZooKeeper 3.5+ and its dependencies"

// ErrNotInstalled is wrapped by the error of a missing prerequisite. The
// prerequisites are java and the ZooKeeper jar, and, for TLSAvailable,
// Debian's netty-codec jar.
var ErrNotInstalled = errors.New("zktest: ZooKeeper or Java not installed")

// sigTerm asks the JVM to shut down.
var sigTerm os.Signal = syscall.SIGTERM

// stopGrace is how long Stop waits after SIGTERM before it sends SIGKILL.
const stopGrace = 5 * time.Second

// javaBinary finds java: $JAVA_HOME/bin/java, else java on $PATH.
func javaBinary() (string, error) {
	p, err := jvm.Tool("java")
	if err != nil {
		return "", fmt.Errorf("%w: java not found (JAVA_HOME unset or wrong, and no java on PATH); %s",
			ErrNotInstalled, installHint)
	}
	return p, nil
}

// classpath returns $ZOOKEEPER_CLASSPATH, or Debian's jars. The Debian jar's
// manifest Class-Path pulls in ZooKeeper's dependencies, except the
// netty-codec jar that TLS needs, added when tls is set.
func classpath(tls bool) (string, error) {
	if cp := os.Getenv(ClasspathEnv); cp != "" {
		return cp, nil
	}
	if _, err := os.Stat(debianZooKeeperJar); err != nil {
		return "", fmt.Errorf("%w: %s not found; %s", ErrNotInstalled, debianZooKeeperJar, installHint)
	}
	cp := debianZooKeeperJar
	jars := []string{debianSlf4jSimple}
	if tls {
		jars = append(jars, debianNettyCodec)
	}
	for _, jar := range jars {
		if _, err := os.Stat(jar); err == nil {
			cp += string(os.PathListSeparator) + jar
		}
	}
	return cp, nil
}

// process is one run of a JVM (a jvm.Process: its own process group, dies
// with the thread that started it, stopped only by its pid).
type process struct {
	jvm     *jvm.Process
	cmd     *exec.Cmd
	done    chan struct{} // closed once the JVM has been waited for
	waitErr error         // valid after done is closed
	logFile *os.File
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// launch starts a JVM running mainClass with the config file cfgPath, under
// cfg's wrapper command for server id, if any. Its output goes to logPath
// (appended) and to cfg.logOutput.
func launch(cfg *config, id int, mainClass, dir, cfgPath, logPath string) (*process, error) {
	java, err := javaBinary()
	if err != nil {
		return nil, err
	}
	cp, err := classpath(cfg.tls != nil)
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("zktest: open log: %w", err)
	}
	fmt.Fprintf(logFile, "---- zktest: starting %s %s at %s\n", mainClass, cfgPath, time.Now().Format(time.RFC3339Nano))

	args := []string{
		"-Xmx256m",
		"-Xss1m",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-Xshare:auto",
		"-XX:-UsePerfData",
		"-XX:+ExitOnOutOfMemoryError",
		"-Djava.net.preferIPv4Stack=true",
		"-Djava.awt.headless=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.4lw.commands.whitelist=*",
		"-Dzookeeper.forceSync=no",
		"-Dzookeeper.snapshot.trust.empty=true",
		"-Dzookeeper.extendedTypesEnabled=false",
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dzookeeper.fastleader.maxNotificationInterval=1000",
		"-Dznode.container.checkIntervalMs=" + strconv.FormatInt(cfg.containerCheck.Milliseconds(), 10),
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
	}
	if cfg.tls != nil {
		args = append(args, tlsJVMFlags(cfg.tls)...)
	}
	args = append(args, cfg.jvmFlags...)
	args = append(args, "-cp", cp, mainClass, cfgPath)

	args = append([]string{java}, args...)
	if cfg.wrap != nil {
		args = append(cfg.wrap(id), args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	var out io.Writer = logFile
	if cfg.logOutput != nil {
		// One writer value for both streams: exec then copies with a single
		// goroutine, which Wait waits for.
		out = io.MultiWriter(logFile, cfg.logOutput)
	}
	cmd.Stdout = out
	cmd.Stderr = out
	j, err := jvm.Start(cmd)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("zktest: %w", err)
	}
	p := &process{jvm: j, cmd: cmd, done: make(chan struct{}), logFile: logFile}
	go func() {
		<-j.Done()
		p.waitErr = j.Err()
		close(p.done)
	}()
	return p, nil
}

// terminate stops the process (SIGTERM when graceful, SIGKILL after
// stopGrace; else SIGKILL at once), waits for it and closes its log file.
// Only this pid is ever signalled.
func (p *process) terminate(graceful bool) {
	if graceful {
		_ = p.jvm.Stop(sigTerm, stopGrace)
	} else {
		p.jvm.Kill()
	}
	<-p.done
	p.logFile.Close()
}

// freePorts reserves n distinct free TCP ports on 127.0.0.1. The listeners are
// held until all ports are picked, then closed, so the ports are distinct;
// another process can still take one before ZooKeeper binds it, which start
// detects (bindFailed) and retries with fresh ports.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("zktest: reserve port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTail returns about the last n lines of the file at path.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	defer f.Close()
	const max = 16 << 10
	st, err := f.Stat()
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	off := st.Size() - max
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// bindFailed reports whether the log at path says a port was taken.
func bindFailed(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	// Only look at the latest run.
	if i := bytes.LastIndex(b, []byte("---- zktest: starting")); i >= 0 {
		b = b[i:]
	}
	return bytes.Contains(b, []byte("Address already in use")) ||
		bytes.Contains(b, []byte("BindException"))
}
