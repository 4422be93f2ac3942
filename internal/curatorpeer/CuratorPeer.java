// CuratorPeer is the Java side of gocurator's compatibility tests, chaos
// suite and demo: one JVM that runs Apache Curator 5.4's lock recipes on
// behalf of a Go program, driven by a line protocol on stdin/stdout. The Go
// side (internal/curatorpeer/peer.go) embeds this file, compiles it with
// javac against Debian's Curator jars and starts it.
//
// Requests, one a line, space separated (no argument contains a space):
//
//     <id> <worker> <verb> <arg>... [key=value]...
//
// <worker> names a thread of the peer: every request for one worker runs on
// that worker's own thread, in order (Curator's mutexes belong to the thread
// that acquired them, so acquire and release must name the same worker).
// "-" runs the request on a pool thread at once.
//
// Replies, one a line, in completion order:
//
//     <id> ok <text>
//     <id> err <exception class>: <message>
//
// Events, whenever they happen:
//
//     ! state <client> <ConnectionState> [<µs>]    (<µs>: clients made with stamp=true)
//     ! revoked <lock>
//     ! released <lock>
//     ! leader <latch|sel> true|false   (a latch's listener; a selector's takeLeadership begins, ends)
//
// <µs> is the wall-clock time (microseconds since the Unix epoch) at which
// the client's ConnectionStateListener ran.
//
// Verbs:
//
//     client <name> <connect> [ns=<namespace>] [session=<ms>] [connection=<ms>] [maxsleep=<ms>]
//            [stamp=true] [tracker=false]                        -> <session id>
//            (tracker=false: no EnsembleTracker, which would replace <connect>
//            with the members' addresses from /zookeeper/config: needed behind proxies)
//     session <client>                                          -> <session id>
//     remote <client>                  -> <host:port> of the server it is connected to, or -
//     close-client <client>
//     mutex <lock> <client> <path>
//     rwlock <lock> <client> <path> [data=<text>]    (use <lock>.read, <lock>.write)
//     semaphore <lock> <client> <path> <maxLeases> [data=<text>]
//     semmutex <lock> <client> <path>
//     multi <lock> <client> <path>,<path>...
//     acquire <lock> [timeout=<ms>] [qty=<n>]                    -> true | false
//     release <lock>            (a semaphore: every lease this worker holds)
//     revocable <lock> [release-on=<worker>]
//     revoke <client> <node path>
//     participants <lock>                                        -> <n> <node>...
//     is-protected <name>                                        -> <bool> <normalized> <id|->
//     guard-enter <dir>[,<dir>...] kind=excl|shared|count [max=<n>] [label=<text>]
//                                                                -> <token> violations=<n>
//     guard-leave <token>
//     loop <lock> rounds=<n> guard=<dir>[,<dir>...] kind=excl|shared|count
//          [max=<n>] [label=<text>] [hold=<ms>]                  -> violations=<n>
//     chaos <lock> label=<text> guard=<dir> told=<file> kind=excl|shared|count [max=<n>]
//           [hold=<ms>] [writes=<n>] [resource=<url>] [progress=<url>] [acquire=<ms>]
//           [linger=<ms>]
//           -> acquisitions=<n> told=<n> fenced=<n> stale-tries=<n> failures=<n>
//              timeouts=<n> notoken=<n>
//     elect <client> kind=latch|selector path=<path> label=<text> guard=<dir> told=<file>
//           [hold=<ms>] [writes=<n>] [resource=<url>] [progress=<url>] [linger=<ms>]
//           -> (as chaos) the chaos loop of an election candidate; stopped by chaos-stop
//     chaos-stop <label>
//     counts                  -> <label>=<acquisitions>:acquiring|holding ... (every chaos loop)
//     latch <latch> <client> <path> [id=<id>]                    (a LeaderLatch)
//     latch-start <latch>, latch-close <latch> [mode=notify]
//     latch-has <latch>                                          -> true | false
//     latch-await <latch> <ms>                                   -> true | false
//     selector <sel> <client> <path> [id=<id>] [autorequeue=true] (a LeaderSelector)
//     selector-start <sel>, selector-close <sel>, selector-requeue <sel>
//     selector-release <sel>   (its takeLeadership returns)
//     selector-has <sel>                                         -> true | false
//     election-participants <latch|sel>                          -> <n> <id>:<isLeader>...
//     election-leader <latch|sel>                                -> <id>:<isLeader>
//     linger <client> on|off
//     inside <client>                                            -> <n>
//     holdings <client>                       -> <holding>=<token> ... (those inside)
//     ping
//     quit
//
// The guard (the same rule as the Go side's, see guard_test.go): a critical
// section is entered by creating a marker in a shared directory, and any
// overlap that the lock should have prevented is appended to
// <dir>/violations. Writers (excl) create the directory <dir>/held and then
// check <dir>/readers is empty; readers (shared) create a file in
// <dir>/readers and then check <dir>/held is absent; counted holders (count)
// create a file in <dir>/holders and then check there are at most max. Each
// entry appends its label to <dir>/log.
//
// The chaos suite (compat_test/chaos_test.go). "chaos" runs, on its worker,
// acquire → hold → release until "chaos-stop <label>" (acquire with a timeout
// of acquire= ms, default 1000, so a stop is seen). Each acquisition is a
// holding named <label>.<n>. Its client's ConnectionStateListener *tells*
// every holding of that client on SUSPENDED or LOST, synchronously in the
// listener: the holding leaves the guard at once, writes no more, and
// appends "<holding> <µs> <state>" to the told= file. A holding is also told
// at once if its client has not been connected all along since its acquire
// began (Curator does not check that a lock granted across a session change
// is still ours: CURATOR-604). An untold holding gets its fencing token
// (where resource= is given: the czxid of its lock node, whose path is read
// from InterProcessMutex's private threadData), enters the guard, and makes
// writes= GET requests <resource>&h=<holding>&t=<token> (200: accepted, 409:
// fenced, after which it writes no more), hold= ms apart; with progress=,
// it first calls GET <progress>?h=<holding> once inside. While "linger
// <client> on", a holding of that client that is inside keeps holding and
// writing until told, for at most linger= ms (default 10000). Before it
// looks at its lock again, a holder checks how long it has been since it
// last did: over a second longer than its nap means the process was paused
// (SIGSTOP) in between, and the write that was due goes out unchecked
// (counted in stale-tries), as work resumed after a pause does: the fenced
// resource must refuse it.
//
// The chaos guard is the rule above with named markers, so that an overlap
// can be judged afterwards against the times the holders were told: a holding
// creates <dir>/inside/<kind>~<holding>, then lists <dir>/inside; an excl
// holding conflicts with every other marker, a shared one with excl markers,
// a count one when there are more than max count markers. A conflict appends
// "<holding> <µs> <kind> <max> <other>,<other>..." to <dir>/conflicts.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.net.HttpURLConnection;
import java.net.SocketAddress;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.ProtectedUtils;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public final class CuratorPeer {
    private static final PrintStream OUT =
        new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);

    /** A client as the recipes see it (maybe a namespace facade) and the one to close. */
    private static final class Client {
        final CuratorFramework base;
        final CuratorFramework view;

        Client(CuratorFramework base, CuratorFramework view) {
            this.base = base;
            this.view = view;
        }
    }

    private final Map<String, Client> clients = new ConcurrentHashMap<>();
    private final Map<String, Object> locks = new ConcurrentHashMap<>();
    // Leader elections: latches and selectors by name, and each selector's
    // permits to return from takeLeadership.
    private final Map<String, LeaderLatch> latches = new ConcurrentHashMap<>();
    private final Map<String, LeaderSelector> selectors = new ConcurrentHashMap<>();
    private final Map<String, java.util.concurrent.Semaphore> selectorRelease = new ConcurrentHashMap<>();
    private final Map<String, ExecutorService> workers = new ConcurrentHashMap<>();
    private final Map<String, Deque<Lease>> leases = new ConcurrentHashMap<>();
    private final Map<String, Deque<Path>> entered = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    // The chaos suite: each client's tracker, the client each lock was made
    // on, and the running chaos loops by label.
    private final Map<String, Tracker> trackers = new ConcurrentHashMap<>();
    private final Map<String, String> lockClients = new ConcurrentHashMap<>();
    private final Map<String, ChaosLoop> chaosLoops = new ConcurrentHashMap<>();
    private final ExecutorService pool = Executors.newCachedThreadPool(daemon("pool"));

    public static void main(String[] args) throws Exception {
        new CuratorPeer().serve();
    }

    static void emit(String line) {
        synchronized (OUT) {
            OUT.print(line.replace('\n', ' ').replace('\r', ' ') + "\n");
            OUT.flush();
        }
    }

    private static java.util.concurrent.ThreadFactory daemon(String name) {
        return r -> {
            Thread t = new Thread(r, "peer-" + name);
            t.setDaemon(true);
            return t;
        };
    }

    private ExecutorService worker(String name) {
        return workers.computeIfAbsent(name, n -> Executors.newSingleThreadExecutor(daemon(n)));
    }

    private void serve() throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        emit("! ready");
        String line;
        while ((line = in.readLine()) != null) {
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            String[] f = line.split(" ");
            if (f.length < 3) {
                emit("? bad request: " + line);
                continue;
            }
            final String id = f[0];
            final String workerName = f[1];
            final String verb = f[2];
            final String[] args = Arrays.copyOfRange(f, 3, f.length);
            if (verb.equals("quit")) {
                emit(id + " ok bye");
                break;
            }
            Runnable r = () -> {
                try {
                    emit(id + " ok " + handle(workerName, verb, args));
                } catch (Throwable e) {
                    emit(id + " err " + describe(e));
                }
            };
            if (workerName.equals("-")) {
                pool.execute(r);
            } else {
                worker(workerName).execute(r);
            }
        }
        shutdown();
    }

    /** How long quit waits for the clients to close their sessions. */
    private static final long CLOSE_GRACE_MS = 5000;

    /**
     * Closes every client, all at once, and exits. A client that has not
     * closed within CLOSE_GRACE_MS (ZooKeeper's close waits for the server's
     * answer to closeSession, with no time limit of its own) does not hold
     * the exit up: the stacks of every thread go to stderr, for the log, and
     * the JVM halts all the same.
     */
    private void shutdown() {
        List<Thread> closing = new ArrayList<>();
        for (Map.Entry<String, Client> e : clients.entrySet()) {
            Thread t = new Thread(() -> {
                try {
                    e.getValue().base.close();
                } catch (Throwable ignored) {
                    // exiting anyway
                }
            }, "close-" + e.getKey());
            t.setDaemon(true);
            t.start();
            closing.add(t);
        }
        long deadline = System.currentTimeMillis() + CLOSE_GRACE_MS;
        for (Thread t : closing) {
            try {
                t.join(Math.max(1, deadline - System.currentTimeMillis()));
            } catch (InterruptedException ignored) {
                break;
            }
            if (t.isAlive()) {
                System.err.println("quit: " + t.getName() + " did not finish within " + CLOSE_GRACE_MS + " ms; the stacks:");
                for (Map.Entry<Thread, StackTraceElement[]> st : Thread.getAllStackTraces().entrySet()) {
                    System.err.println("\"" + st.getKey().getName() + "\" " + st.getKey().getState());
                    for (StackTraceElement el : st.getValue()) {
                        System.err.println("\tat " + el);
                    }
                }
                break;
            }
        }
        // Nothing here needs shutdown hooks (every line is flushed as it
        // is written), and none may hold the exit up.
        System.err.flush();
        Runtime.getRuntime().halt(0);
    }

    static String describe(Throwable e) {
        StringBuilder sb = new StringBuilder(e.getClass().getName() + ": " + e.getMessage());
        for (Throwable c = e.getCause(); c != null && c != e; c = c.getCause()) {
            sb.append(" / caused by ").append(c.getClass().getName()).append(": ").append(c.getMessage());
        }
        return sb.toString();
    }

    /** Positional arguments (those without '='). */
    private static List<String> positional(String[] args) {
        List<String> out = new ArrayList<>();
        for (String a : args) {
            if (!a.contains("=")) {
                out.add(a);
            }
        }
        return out;
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> out = new HashMap<>();
        for (String a : args) {
            int i = a.indexOf('=');
            if (i > 0) {
                out.put(a.substring(0, i), a.substring(i + 1));
            }
        }
        return out;
    }

    private static String arg(List<String> pos, int i, String what) {
        if (i >= pos.size()) {
            throw new IllegalArgumentException("missing argument: " + what);
        }
        return pos.get(i);
    }

    /** The value of name in m, or an IllegalArgumentException saying there is no such kind. */
    private static <T> T named(Map<String, T> m, String kind, String name) {
        T v = m.get(name);
        if (v == null) {
            throw new IllegalArgumentException("no " + kind + " " + name);
        }
        return v;
    }

    private Client client(String name) {
        return named(clients, "client", name);
    }

    private Object lock(String ref) {
        int dot = ref.lastIndexOf('.');
        if (dot > 0) {
            Object o = locks.get(ref.substring(0, dot));
            if (o instanceof InterProcessReadWriteLock) {
                InterProcessReadWriteLock rw = (InterProcessReadWriteLock) o;
                switch (ref.substring(dot + 1)) {
                    case "read":
                        return rw.readLock();
                    case "write":
                        return rw.writeLock();
                    default:
                        break;
                }
            }
        }
        Object o = locks.get(ref);
        if (o == null || o instanceof InterProcessReadWriteLock) {
            throw new IllegalArgumentException("no lock " + ref);
        }
        return o;
    }

    private String handle(String workerName, String verb, String[] args) throws Exception {
        List<String> pos = positional(args);
        Map<String, String> opt = options(args);
        switch (verb) {
            case "ping":
                return "pong";
            case "client": {
                String name = arg(pos, 0, "name");
                String connect = arg(pos, 1, "connect string");
                int session = Integer.parseInt(opt.getOrDefault("session", "20000"));
                int maxSleep = Integer.parseInt(opt.getOrDefault("maxsleep", Integer.toString(Integer.MAX_VALUE)));
                int connection = Integer.parseInt(opt.getOrDefault("connection", "10000"));
                boolean stamp = Boolean.parseBoolean(opt.getOrDefault("stamp", "false"));
                // tracker=false: Curator's EnsembleTracker would otherwise replace
                // the connect string with the members' own addresses from
                // /zookeeper/config, so that a client behind fault proxies
                // reconnects around them.
                CuratorFramework base = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(session)
                    .connectionTimeoutMs(connection)
                    .retryPolicy(new ExponentialBackoffRetry(20, 10, maxSleep))
                    .ensembleTracker(Boolean.parseBoolean(opt.getOrDefault("tracker", "true")))
                    .build();
                Tracker tracker = new Tracker();
                trackers.put(name, tracker);
                base.getConnectionStateListenable().addListener((c, s) -> {
                    long at = micros();
                    tracker.stateChanged(s, at);
                    emit("! state " + name + " " + s + (stamp ? " " + at : ""));
                });
                base.start();
                if (!base.blockUntilConnected(30, TimeUnit.SECONDS)) {
                    base.close();
                    throw new IllegalStateException("no connection to " + connect);
                }
                CuratorFramework view = opt.containsKey("ns") ? base.usingNamespace(opt.get("ns")) : base;
                clients.put(name, new Client(base, view));
                return Long.toString(base.getZookeeperClient().getZooKeeper().getSessionId());
            }
            case "session":
                return Long.toString(client(arg(pos, 0, "client")).base.getZookeeperClient().getZooKeeper().getSessionId());
            case "remote": {
                ZooKeeper zk = client(arg(pos, 0, "client")).base.getZookeeperClient().getZooKeeper();
                Method m = ZooKeeper.class.getDeclaredMethod("testableRemoteSocketAddress");
                m.setAccessible(true);
                SocketAddress a = (SocketAddress) m.invoke(zk);
                if (!(a instanceof java.net.InetSocketAddress)) {
                    return "-";
                }
                java.net.InetSocketAddress ia = (java.net.InetSocketAddress) a;
                return ia.getAddress().getHostAddress() + ":" + ia.getPort();
            }
            case "close-client": {
                String name = arg(pos, 0, "client");
                Client c = clients.remove(name);
                if (c != null) {
                    c.base.close();
                }
                trackers.remove(name);
                return "closed";
            }
            case "mutex":
                locks.put(arg(pos, 0, "lock"), new InterProcessMutex(client(arg(pos, 1, "client")).view, arg(pos, 2, "path")));
                lockClients.put(arg(pos, 0, "lock"), arg(pos, 1, "client"));
                return "made";
            case "rwlock": {
                lockClients.put(arg(pos, 0, "lock"), arg(pos, 1, "client"));
                CuratorFramework c = client(arg(pos, 1, "client")).view;
                String path = arg(pos, 2, "path");
                InterProcessReadWriteLock rw = opt.containsKey("data")
                    ? new InterProcessReadWriteLock(c, path, opt.get("data").getBytes(StandardCharsets.UTF_8))
                    : new InterProcessReadWriteLock(c, path);
                locks.put(arg(pos, 0, "lock"), rw);
                return "made";
            }
            case "semaphore": {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(client(arg(pos, 1, "client")).view,
                    arg(pos, 2, "path"), Integer.parseInt(arg(pos, 3, "maxLeases")));
                if (opt.containsKey("data")) {
                    s.setNodeData(opt.get("data").getBytes(StandardCharsets.UTF_8));
                }
                locks.put(arg(pos, 0, "lock"), s);
                lockClients.put(arg(pos, 0, "lock"), arg(pos, 1, "client"));
                return "made";
            }
            case "semmutex":
                locks.put(arg(pos, 0, "lock"), new InterProcessSemaphoreMutex(client(arg(pos, 1, "client")).view, arg(pos, 2, "path")));
                return "made";
            case "multi":
                locks.put(arg(pos, 0, "lock"), new InterProcessMultiLock(client(arg(pos, 1, "client")).view,
                    Arrays.asList(arg(pos, 2, "paths").split(","))));
                return "made";
            case "acquire": {
                String ref = arg(pos, 0, "lock");
                long timeout = Long.parseLong(opt.getOrDefault("timeout", "-1"));
                int qty = Integer.parseInt(opt.getOrDefault("qty", "1"));
                return Boolean.toString(acquire(workerName, ref, timeout, qty));
            }
            case "release":
                release(workerName, arg(pos, 0, "lock"));
                return "released";
            case "revocable": {
                String ref = arg(pos, 0, "lock");
                Object o = lock(ref);
                if (!(o instanceof InterProcessMutex)) {
                    throw new IllegalArgumentException(ref + " is not revocable");
                }
                InterProcessMutex m = (InterProcessMutex) o;
                String releaseOn = opt.get("release-on");
                m.makeRevocable(l -> {
                    emit("! revoked " + ref);
                    if (releaseOn != null) {
                        worker(releaseOn).execute(() -> {
                            try {
                                m.release();
                                emit("! released " + ref);
                            } catch (Throwable e) {
                                emit("! release-failed " + ref + " " + describe(e));
                            }
                        });
                    }
                });
                return "revocable";
            }
            case "revoke":
                Revoker.attemptRevoke(client(arg(pos, 0, "client")).view, arg(pos, 1, "node path"));
                return "requested";
            case "participants": {
                Object o = lock(arg(pos, 0, "lock"));
                Collection<String> nodes;
                if (o instanceof InterProcessMutex) {
                    nodes = ((InterProcessMutex) o).getParticipantNodes();
                } else if (o instanceof InterProcessSemaphoreV2) {
                    nodes = ((InterProcessSemaphoreV2) o).getParticipantNodes();
                } else {
                    throw new IllegalArgumentException(o.getClass().getSimpleName() + " has no participant nodes");
                }
                StringBuilder sb = new StringBuilder(Integer.toString(nodes.size()));
                for (String n : nodes) {
                    sb.append(' ').append(n);
                }
                return sb.toString();
            }
            case "is-protected": {
                String name = arg(pos, 0, "name");
                Optional<String> id = ProtectedUtils.extractProtectedId(name);
                return ProtectedUtils.isProtectedZNode(name) + " " + ProtectedUtils.normalize(name) + " " + id.orElse("-");
            }
            case "loop":
                return loop(workerName, arg(pos, 0, "lock"), opt);
            case "chaos":
                return chaos(workerName, arg(pos, 0, "lock"), opt);
            case "elect":
                return elect(arg(pos, 0, "client"), opt);
            case "counts": {
                List<String> counts = new ArrayList<>();
                for (ChaosLoop l : chaosLoops.values()) {
                    boolean acquiring = l.acquiring; // first: the count is then at least as new
                    counts.add(l.label + "=" + l.acquisitions + (acquiring ? ":acquiring" : ":holding"));
                }
                Collections.sort(counts);
                return String.join(" ", counts);
            }
            case "chaos-stop": {
                ChaosLoop l = chaosLoops.get(arg(pos, 0, "label"));
                if (l == null) {
                    throw new IllegalArgumentException("no chaos loop " + pos.get(0));
                }
                l.stop = true;
                return "stopping";
            }
            case "linger": {
                tracker(arg(pos, 0, "client")).linger = arg(pos, 1, "on|off").equals("on");
                return "linger " + pos.get(1);
            }
            case "holdings": {
                List<String> ids = new ArrayList<>();
                for (Holding h : tracker(arg(pos, 0, "client")).holdings) {
                    if (h.inside()) {
                        ids.add(h.id + "=" + h.token);
                    }
                }
                Collections.sort(ids);
                return String.join(" ", ids);
            }
            case "inside": {
                int n = 0;
                for (Holding h : tracker(arg(pos, 0, "client")).holdings) {
                    if (h.inside()) {
                        n++;
                    }
                }
                return Integer.toString(n);
            }
            case "guard-enter": {
                String kind = opt.getOrDefault("kind", "excl");
                int max = Integer.parseInt(opt.getOrDefault("max", "1"));
                String label = opt.getOrDefault("label", "java-" + workerName);
                Deque<Path> undo = new ArrayDeque<>();
                int v = 0;
                for (String g : arg(pos, 0, "guard").split(",")) {
                    v += enter(Paths.get(g), kind, max, label, undo);
                }
                String token = "g" + tokens.incrementAndGet();
                entered.put(token, undo);
                return token + " violations=" + v;
            }
            case "guard-leave": {
                Deque<Path> undo = entered.remove(arg(pos, 0, "token"));
                if (undo == null) {
                    throw new IllegalArgumentException("no guard token " + pos.get(0));
                }
                while (!undo.isEmpty()) {
                    Files.deleteIfExists(undo.pop());
                }
                return "left";
            }
            case "latch": {
                String name = arg(pos, 0, "latch");
                LeaderLatch l = new LeaderLatch(client(arg(pos, 1, "client")).view, arg(pos, 2, "path"), opt.getOrDefault("id", ""));
                l.addListener(new LeaderLatchListener() {
                    @Override
                    public void isLeader() {
                        emit("! leader " + name + " true");
                    }

                    @Override
                    public void notLeader() {
                        emit("! leader " + name + " false");
                    }
                });
                latches.put(name, l);
                return "made";
            }
            case "latch-start":
                latch(arg(pos, 0, "latch")).start();
                return "started";
            case "latch-close": {
                LeaderLatch l = latch(arg(pos, 0, "latch"));
                l.close(opt.getOrDefault("mode", "silent").equals("notify")
                    ? LeaderLatch.CloseMode.NOTIFY_LEADER : LeaderLatch.CloseMode.SILENT);
                return "closed";
            }
            case "latch-has":
                return Boolean.toString(latch(arg(pos, 0, "latch")).hasLeadership());
            case "latch-await":
                return Boolean.toString(latch(arg(pos, 0, "latch")).await(Long.parseLong(arg(pos, 1, "ms")), TimeUnit.MILLISECONDS));
            case "selector": {
                String name = arg(pos, 0, "selector");
                java.util.concurrent.Semaphore release = new java.util.concurrent.Semaphore(0);
                selectorRelease.put(name, release);
                LeaderSelector sel = new LeaderSelector(client(arg(pos, 1, "client")).view, arg(pos, 2, "path"),
                    new LeaderSelectorListenerAdapter() {
                        @Override
                        public void takeLeadership(CuratorFramework c) throws Exception {
                            emit("! leader " + name + " true");
                            try {
                                release.acquire();
                            } finally {
                                emit("! leader " + name + " false");
                            }
                        }
                    });
                if (opt.containsKey("id")) {
                    sel.setId(opt.get("id"));
                }
                if (Boolean.parseBoolean(opt.getOrDefault("autorequeue", "false"))) {
                    sel.autoRequeue();
                }
                selectors.put(name, sel);
                return "made";
            }
            case "selector-start":
                selector(arg(pos, 0, "selector")).start();
                return "started";
            case "selector-close":
                selector(arg(pos, 0, "selector")).close();
                return "closed";
            case "selector-requeue":
                return Boolean.toString(selector(arg(pos, 0, "selector")).requeue());
            case "selector-release":
                selector(arg(pos, 0, "selector"));
                selectorRelease.get(pos.get(0)).release();
                return "released";
            case "selector-has":
                return Boolean.toString(selector(arg(pos, 0, "selector")).hasLeadership());
            case "election-participants": {
                String name = arg(pos, 0, "latch or selector");
                Collection<Participant> ps = latches.containsKey(name) ? latch(name).getParticipants() : selector(name).getParticipants();
                StringBuilder sb = new StringBuilder(Integer.toString(ps.size()));
                for (Participant p : ps) {
                    sb.append(' ').append(p.getId()).append(':').append(p.isLeader());
                }
                return sb.toString();
            }
            case "election-leader": {
                String name = arg(pos, 0, "latch or selector");
                Participant p = latches.containsKey(name) ? latch(name).getLeader() : selector(name).getLeader();
                return p.getId() + ":" + p.isLeader();
            }
            default:
                throw new IllegalArgumentException("unknown verb " + verb);
        }
    }

    private LeaderLatch latch(String name) {
        return named(latches, "latch", name);
    }

    private LeaderSelector selector(String name) {
        return named(selectors, "selector", name);
    }

    private boolean acquire(String workerName, String ref, long timeoutMs, int qty) throws Exception {
        Object o = lock(ref);
        if (o instanceof InterProcessSemaphoreV2) {
            InterProcessSemaphoreV2 s = (InterProcessSemaphoreV2) o;
            Collection<Lease> got = timeoutMs < 0 ? s.acquire(qty) : s.acquire(qty, timeoutMs, TimeUnit.MILLISECONDS);
            if (got == null) {
                return false;
            }
            leases.computeIfAbsent(workerName + " " + ref, k -> new ArrayDeque<>()).addAll(got);
            return true;
        }
        InterProcessLock l = (InterProcessLock) o;
        if (timeoutMs < 0) {
            l.acquire();
            return true;
        }
        return l.acquire(timeoutMs, TimeUnit.MILLISECONDS);
    }

    private void release(String workerName, String ref) throws Exception {
        Object o = lock(ref);
        if (o instanceof InterProcessSemaphoreV2) {
            Deque<Lease> held = leases.remove(workerName + " " + ref);
            if (held == null || held.isEmpty()) {
                throw new IllegalStateException("worker " + workerName + " holds no lease of " + ref);
            }
            for (Lease l : held) {
                l.close();
            }
            return;
        }
        ((InterProcessLock) o).release();
    }

    private String loop(String workerName, String ref, Map<String, String> opt) throws Exception {
        int rounds = Integer.parseInt(opt.getOrDefault("rounds", "1"));
        String kind = opt.getOrDefault("kind", "excl");
        int max = Integer.parseInt(opt.getOrDefault("max", "1"));
        String label = opt.getOrDefault("label", "java-" + workerName);
        long hold = Long.parseLong(opt.getOrDefault("hold", "0"));
        List<Path> guards = new ArrayList<>();
        for (String g : opt.getOrDefault("guard", "").split(",")) {
            if (!g.isEmpty()) {
                guards.add(Paths.get(g));
            }
        }
        int violations = 0;
        for (int r = 0; r < rounds; r++) {
            acquire(workerName, ref, -1, 1);
            Deque<Path> undo = new ArrayDeque<>();
            try {
                for (Path g : guards) {
                    violations += enter(g, kind, max, label, undo);
                }
                if (hold > 0) {
                    Thread.sleep(hold); // time spent in the critical section, so overlaps would show
                }
            } finally {
                while (!undo.isEmpty()) {
                    Files.deleteIfExists(undo.pop());
                }
                release(workerName, ref);
            }
        }
        return "violations=" + violations;
    }

    /** Enters one guard directory; returns the number of violations seen. */
    static int enter(Path g, String kind, int max, String label, Deque<Path> undo) throws Exception {
        int v = 0;
        Path held = g.resolve("held");
        switch (kind) {
            case "excl":
                try {
                    Files.createDirectory(held);
                    undo.push(held);
                } catch (FileAlreadyExistsException e) {
                    v += violation(g, label + ": entered an exclusive section someone holds");
                }
                try (Stream<Path> s = Files.list(g.resolve("readers"))) {
                    if (s.findAny().isPresent()) {
                        v += violation(g, label + ": entered an exclusive section with readers inside");
                    }
                }
                break;
            case "shared": {
                Path m = g.resolve("readers").resolve(label + "-" + UUID.randomUUID());
                Files.createFile(m);
                undo.push(m);
                if (Files.exists(held)) {
                    v += violation(g, label + ": entered a shared section a writer holds");
                }
                break;
            }
            case "count": {
                Path m = g.resolve("holders").resolve(label + "-" + UUID.randomUUID());
                Files.createFile(m);
                undo.push(m);
                long n;
                try (Stream<Path> s = Files.list(g.resolve("holders"))) {
                    n = s.count();
                }
                if (n > max) {
                    v += violation(g, label + ": " + n + " holders inside, at most " + max + " allowed");
                }
                break;
            }
            default:
                throw new IllegalArgumentException("unknown guard kind " + kind);
        }
        Files.write(g.resolve("log"), (label + "\n").getBytes(StandardCharsets.UTF_8),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        return v;
    }

    static int violation(Path g, String what) throws Exception {
        Files.write(g.resolve("violations"), ("java " + what + "\n").getBytes(StandardCharsets.UTF_8),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
        return 1;
    }

    // ---- The chaos suite ----

    /** Microseconds since the Unix epoch, from the wall clock (as Go's time.Now().UnixMicro()). */
    static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    static void appendLine(Path file, String line) throws IOException {
        Files.write(file, (line + "\n").getBytes(StandardCharsets.UTF_8),
            StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND);
    }

    private Tracker tracker(String client) {
        Tracker t = trackers.get(client);
        if (t == null) {
            throw new IllegalArgumentException("no client " + client);
        }
        return t;
    }

    /** What the chaos suite knows of one client's connection, and its current holdings. */
    private static final class Tracker {
        volatile boolean connected;
        final AtomicLong errorStates = new AtomicLong(); // SUSPENDED and LOST heard so far
        final Set<Holding> holdings = ConcurrentHashMap.newKeySet();
        volatile boolean linger;

        /** Runs in the client's ConnectionStateListener. */
        void stateChanged(ConnectionState s, long at) {
            if (s == ConnectionState.SUSPENDED || s == ConnectionState.LOST) {
                connected = false;
                errorStates.incrementAndGet(); // before telling: see Holding registration in chaos()
                for (Holding h : holdings) {
                    h.tell(at, s.toString());
                }
            } else if (s.isConnected()) {
                connected = true;
            }
        }
    }

    /** A nap this much longer than asked means the process was paused during it. */
    private static final long PAUSE_GAP_MS = 1000;

    /** A running chaos loop and its counts. */
    private static final class ChaosLoop {
        final String label;
        volatile boolean stop;
        volatile boolean acquiring;  // read by "counts", before acquisitions
        volatile long acquisitions;  // read by "counts"; written by the loop's thread only
        long told, fenced, failures, timeouts, noToken, staleTries;
        private final Set<String> failureKinds = new java.util.HashSet<>();

        ChaosLoop(String label) {
            this.label = label;
        }

        /** Counts a failure, and logs the first of each kind to stderr. */
        void failed(String what, Exception e) {
            failures++;
            if (failureKinds.add(what + " " + e.getClass().getName())) {
                System.err.println("chaos " + label + ": " + what + " failed: " + describe(e));
            }
        }

        String report() {
            return "acquisitions=" + acquisitions + " told=" + told + " fenced=" + fenced + " stale-tries=" + staleTries + " failures=" + failures
                + " timeouts=" + timeouts + " notoken=" + noToken;
        }
    }

    /** One acquisition of a chaos loop, from acquire to release. */
    private static final class Holding {
        final String id;
        final String kind;
        final int max;
        final Path inside;
        final Path conflicts;
        final Path toldFile;
        volatile boolean toldFlag; // read by the holder before each write
        volatile long token;       // the fencing token it writes with, once read
        private boolean told;      // guarded by this
        private boolean finished;  // guarded by this
        private Path marker;       // guarded by this

        Holding(String id, String kind, int max, Path guard, Path toldFile) {
            this.id = id;
            this.kind = kind;
            this.max = max;
            this.inside = guard.resolve("inside");
            this.conflicts = guard.resolve("conflicts");
            this.toldFile = toldFile;
        }

        synchronized boolean inside() {
            return marker != null;
        }

        /** Enters the guard unless told; reports whether it did. */
        synchronized boolean enter() throws IOException {
            if (told) {
                return false;
            }
            Path m = inside.resolve(kind + "~" + id);
            Files.createFile(m);
            marker = m;
            List<String> others = new ArrayList<>();
            try (Stream<Path> s = Files.list(inside)) {
                s.forEach(p -> {
                    String n = p.getFileName().toString();
                    int tilde = n.indexOf('~');
                    if (tilde < 0 || p.equals(m)) {
                        return;
                    }
                    String k = n.substring(0, tilde);
                    if (kind.equals("excl") || k.equals(kind.equals("shared") ? "excl" : "count")) {
                        others.add(n.substring(tilde + 1));
                    }
                });
            }
            long at = micros();
            boolean overlap = kind.equals("count") ? others.size() + 1 > max : !others.isEmpty();
            if (overlap) {
                appendLine(conflicts, id + " " + at + " " + kind + " " + max + " " + String.join(",", others));
            }
            return true;
        }

        /** The holding is over: it leaves the guard, and can no longer be told. */
        synchronized void finish() {
            finished = true;
            leave();
        }

        private synchronized void leave() {
            if (marker != null) {
                try {
                    Files.deleteIfExists(marker);
                } catch (IOException e) {
                    emit("! guard-error " + id + " " + describe(e));
                }
                marker = null;
            }
        }

        /** The holder is told its lock can no longer be trusted: it leaves the guard at once. */
        void tell(long at, String why) {
            synchronized (this) {
                if (told || finished) {
                    return;
                }
                told = true;
                toldFlag = true;
                leave();
            }
            try {
                appendLine(toldFile, id + " " + at + " " + why);
            } catch (IOException e) {
                emit("! guard-error " + id + " " + describe(e));
            }
        }
    }

    /** The czxid of the lock node a mutex (or a read-write lock's half) holds for this thread. */
    private static long fencingToken(CuratorFramework c, InterProcessMutex m) throws Exception {
        Field f = InterProcessMutex.class.getDeclaredField("threadData");
        f.setAccessible(true);
        Object data = ((Map<?, ?>) f.get(m)).get(Thread.currentThread());
        if (data == null) {
            return -1;
        }
        Field p = data.getClass().getDeclaredField("lockPath");
        p.setAccessible(true);
        Stat st = c.checkExists().forPath((String) p.get(data));
        return st == null ? -1 : st.getCzxid();
    }

    /** Tells the progress endpoint that holding id is inside. */
    private static void note(String progress, String id) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(progress + "?h=" + id).openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(5000);
        int code = c.getResponseCode();
        try (InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream()) {
            if (in != null) {
                in.readAllBytes(); // so the connection is kept alive
            }
        }
        if (code != 200) {
            throw new IOException("progress answered " + code);
        }
    }

    /** One write to the fenced resource: true if accepted, false if fenced. */
    private static boolean write(String resource, String holder, long token) throws IOException {
        URL u = new URL(resource + "&h=" + holder + "&t=" + token);
        HttpURLConnection c = (HttpURLConnection) u.openConnection();
        c.setConnectTimeout(5000);
        c.setReadTimeout(5000);
        int code = c.getResponseCode();
        try (InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream()) {
            if (in != null) {
                in.readAllBytes(); // so the connection is kept alive
            }
        }
        switch (code) {
            case 200:
                return true;
            case 409:
                return false;
            default:
                throw new IOException("resource answered " + code);
        }
    }

    private String chaos(String workerName, String ref, Map<String, String> opt) throws Exception {
        String label = opt.get("label");
        if (label == null || !opt.containsKey("guard") || !opt.containsKey("told")) {
            throw new IllegalArgumentException("chaos needs label=, guard= and told=");
        }
        String kind = opt.getOrDefault("kind", "excl");
        int max = Integer.parseInt(opt.getOrDefault("max", "1"));
        Path guard = Paths.get(opt.get("guard"));
        Path toldFile = Paths.get(opt.get("told"));
        String resource = opt.get("resource");
        String progress = opt.get("progress");
        long hold = Long.parseLong(opt.getOrDefault("hold", "2"));
        int writes = Integer.parseInt(opt.getOrDefault("writes", "2"));
        long acquireMs = Long.parseLong(opt.getOrDefault("acquire", "1000"));
        long lingerMs = Long.parseLong(opt.getOrDefault("linger", "10000"));
        int dot = ref.lastIndexOf('.');
        String clientName = lockClients.get(dot > 0 && !locks.containsKey(ref) ? ref.substring(0, dot) : ref);
        if (clientName == null) {
            throw new IllegalArgumentException("no lock " + ref);
        }
        Tracker tr = tracker(clientName);
        CuratorFramework view = client(clientName).view;
        Object lock = lock(ref);
        ChaosLoop loop = new ChaosLoop(label);
        if (chaosLoops.putIfAbsent(label, loop) != null) {
            throw new IllegalArgumentException("chaos loop " + label + " is running already");
        }
        try {
            while (!loop.stop) {
                long errorStates = tr.errorStates.get();
                boolean wasConnected = tr.connected;
                boolean got;
                loop.acquiring = true;
                try {
                    got = acquire(workerName, ref, acquireMs, 1);
                } catch (Exception e) {
                    loop.failed("acquire", e);
                    continue;
                }
                if (!got) {
                    loop.timeouts++;
                    continue;
                }
                loop.acquisitions++;
                loop.acquiring = false; // after the count: see "counts"
                Holding h = new Holding(label + "." + loop.acquisitions, kind, max, guard, toldFile);
                // Registered before the check: a SUSPENDED or LOST from now on
                // either finds h in holdings or is counted in errorStates.
                tr.holdings.add(h);
                try {
                    if (!wasConnected || tr.errorStates.get() != errorStates || !tr.connected) {
                        h.tell(micros(), "during-acquire");
                    }
                    long token = 0;
                    if (resource != null && !h.toldFlag) {
                        try {
                            token = fencingToken(view, (InterProcessMutex) lock);
                        } catch (Exception e) {
                            token = -1;
                        }
                        if (token < 0) {
                            loop.noToken++;
                            continue; // the finally releases
                        }
                    }
                    holdInside(loop, tr, h, token, resource, progress, hold, writes, lingerMs);
                } catch (IOException e) {
                    loop.failed("write", e);
                } finally {
                    tr.holdings.remove(h);
                    h.finish();
                    if (h.toldFlag) {
                        loop.told++;
                    }
                    try {
                        release(workerName, ref);
                    } catch (Exception e) {
                        loop.failed("release", e);
                    }
                }
            }
        } finally {
            chaosLoops.remove(label);
        }
        return loop.report();
    }

    /**
     * A holding's time inside: it enters the guard (unless told), notes its
     * progress, and makes writes= writes hold= ms apart, then, while the
     * client lingers, on and on until told. A gap since the holder last
     * looked at its lock: paused (SIGSTOP) in between, the write that was due
     * goes out before it can look, as work resumed after a pause does. The
     * fenced resource must refuse it.
     */
    private static void holdInside(ChaosLoop loop, Tracker tr, Holding h, long token, String resource, String progress,
                                   long hold, int writes, long lingerMs) throws IOException, InterruptedException {
        h.token = token;
        if (!h.enter()) {
            return;
        }
        if (progress != null) {
            note(progress, h.id);
        }
        long start = System.nanoTime();
        long looked = start;
        long nap = 0;
        for (int i = 0; ; i++) {
            if (resource != null && i > 0 && System.nanoTime() - looked > (nap + PAUSE_GAP_MS) * 1_000_000L) {
                loop.staleTries++;
                if (!write(resource, h.id, token)) {
                    loop.fenced++;
                    return;
                }
            }
            if (h.toldFlag || (i >= writes && !(tr.linger && System.nanoTime() - start < lingerMs * 1_000_000L))) {
                return;
            }
            looked = System.nanoTime();
            if (resource != null && !write(resource, h.id, token)) {
                loop.fenced++;
                return;
            }
            nap = i < writes ? Math.max(1, hold / Math.max(1, writes)) : 20;
            Thread.sleep(nap); // time in the critical section
        }
    }

    /**
     * The chaos suite's election loop (elect): a candidate of a LeaderLatch
     * (each term: a new latch, started, awaited, led, closed) or of a
     * LeaderSelector (auto-requeued; each term: one takeLeadership) named by
     * its label. Each term is a holding, as the chaos loop's: told when its
     * client hears SUSPENDED or LOST, when the latch hears notLeader, or when
     * the selector interrupts takeLeadership; it writes the term's fencing
     * token (the czxid of the latch's node, or of the selector's lock node).
     */
    private String elect(String clientName, Map<String, String> opt) throws Exception {
        String label = opt.get("label");
        String kind = opt.get("kind");
        String path = opt.get("path");
        if (label == null || path == null || !opt.containsKey("guard") || !opt.containsKey("told")
            || !("latch".equals(kind) || "selector".equals(kind))) {
            throw new IllegalArgumentException("elect needs kind=latch|selector, path=, label=, guard= and told=");
        }
        Path guard = Paths.get(opt.get("guard"));
        Path toldFile = Paths.get(opt.get("told"));
        String resource = opt.get("resource");
        String progress = opt.get("progress");
        long hold = Long.parseLong(opt.getOrDefault("hold", "20"));
        int writes = Integer.parseInt(opt.getOrDefault("writes", "2"));
        long lingerMs = Long.parseLong(opt.getOrDefault("linger", "10000"));
        Tracker tr = tracker(clientName);
        CuratorFramework view = client(clientName).view;
        ChaosLoop loop = new ChaosLoop(label);
        if (chaosLoops.putIfAbsent(label, loop) != null) {
            throw new IllegalArgumentException("chaos loop " + label + " is running already");
        }
        AtomicReference<Holding> current = new AtomicReference<>();
        try {
            if (kind.equals("latch")) {
                while (!loop.stop) {
                    LeaderLatch latch = new LeaderLatch(view, path, label);
                    latch.addListener(new LeaderLatchListener() {
                        @Override
                        public void isLeader() {
                        }

                        @Override
                        public void notLeader() {
                            Holding h = current.get();
                            if (h != null) {
                                h.tell(micros(), "notLeader");
                            }
                        }
                    });
                    loop.acquiring = true;
                    long errorStates = tr.errorStates.get();
                    boolean wasConnected = tr.connected;
                    try {
                        latch.start();
                        boolean led = false;
                        while (!loop.stop && !(led = latch.await(200, TimeUnit.MILLISECONDS))) {
                            // waiting in the queue; looking at stop between waits
                        }
                        if (led) {
                            lead(loop, tr, label, guard, toldFile, current, latch::hasLeadership, wasConnected, errorStates,
                                () -> czxid(view, latch.getOurPath()), resource, progress, hold, writes, lingerMs);
                        }
                    } catch (Exception e) {
                        loop.failed("latch", e);
                        Thread.sleep(20); // pacing after a failure
                    } finally {
                        latch.close();
                    }
                }
            } else {
                AtomicReference<LeaderSelector> self = new AtomicReference<>();
                // The error states heard, and whether connected, when the
                // selector began to wait for its next term: at start, then
                // at the end of each term (auto-requeue).
                AtomicLong waitErrorStates = new AtomicLong(tr.errorStates.get());
                AtomicBoolean waitConnected = new AtomicBoolean(tr.connected);
                LeaderSelector sel = new LeaderSelector(view, path, new LeaderSelectorListenerAdapter() {
                    @Override
                    public void takeLeadership(CuratorFramework c) throws Exception {
                        try {
                            lead(loop, tr, label, guard, toldFile, current, () -> true, waitConnected.get(), waitErrorStates.get(),
                                () -> fencingToken(view, selectorMutex(self.get())), resource, progress, hold, writes, lingerMs);
                        } finally {
                            waitErrorStates.set(tr.errorStates.get());
                            waitConnected.set(tr.connected);
                        }
                    }
                });
                self.set(sel);
                sel.setId(label);
                sel.autoRequeue();
                loop.acquiring = true;
                sel.start();
                while (!loop.stop) {
                    Thread.sleep(50); // the selector leads on its own thread
                }
                sel.close();
            }
        } finally {
            chaosLoops.remove(label);
        }
        return loop.report();
    }

    /**
     * One term of leadership of an election loop, as a holding. wasConnected
     * and errorStates are the client's when the candidate began to wait for
     * this term: a term granted across a SUSPENDED or LOST is told at once,
     * as the chaos loop's locks are (CURATOR-604), since Curator 5.4's latch
     * may lead with a node of its session before the LOST and never hear
     * that the server deleted it (CURATOR-696), and its selector is a mutex.
     */
    private static void lead(ChaosLoop loop, Tracker tr, String label, Path guard, Path toldFile,
                             AtomicReference<Holding> current, java.util.function.BooleanSupplier leads,
                             boolean wasConnected, long errorStates,
                             java.util.concurrent.Callable<Long> token, String resource, String progress,
                             long hold, int writes, long lingerMs) throws InterruptedException {
        loop.acquisitions++;
        loop.acquiring = false; // after the count: see "counts"
        Holding h = new Holding(label + "." + loop.acquisitions, "excl", 1, guard, toldFile);
        tr.holdings.add(h); // before the checks: a SUSPENDED or LOST from now on finds it
        current.set(h);
        try {
            if (!wasConnected || tr.errorStates.get() != errorStates || !tr.connected || !leads.getAsBoolean()) {
                h.tell(micros(), "during-acquire");
            }
            long t = 0;
            if (resource != null && !h.toldFlag) {
                try {
                    t = token.call();
                } catch (Exception e) {
                    t = -1;
                }
                if (t < 0) {
                    loop.noToken++;
                    return;
                }
            }
            holdInside(loop, tr, h, t, resource, progress, hold, writes, lingerMs);
        } catch (IOException e) {
            loop.failed("write", e);
        } finally {
            current.set(null);
            tr.holdings.remove(h);
            h.finish();
            if (h.toldFlag) {
                loop.told++;
            }
            loop.acquiring = true;
        }
    }

    /** The czxid of the node at path, or -1 if there is none. */
    private static long czxid(CuratorFramework c, String path) throws Exception {
        if (path == null) {
            return -1;
        }
        Stat st = c.checkExists().forPath(path);
        return st == null ? -1 : st.getCzxid();
    }

    /** A LeaderSelector's private mutex. */
    private static InterProcessMutex selectorMutex(LeaderSelector s) throws Exception {
        Field f = LeaderSelector.class.getDeclaredField("mutex");
        f.setAccessible(true);
        return (InterProcessMutex) f.get(s);
    }
}
