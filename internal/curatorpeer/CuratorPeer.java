// CuratorPeer is the Java side of gocurator's compatibility tests: one JVM
// that runs Apache Curator 5.4's lock recipes on behalf of a Go test, driven
// by a line protocol on stdin/stdout. The Go side (compat_test/peer_test.go)
// compiles it with javac against Debian's Curator jars and starts it.
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
//     ! state <client> <ConnectionState>
//     ! revoked <lock>
//     ! released <lock>
//
// Verbs:
//
//     client <name> <connect> [ns=<namespace>] [session=<ms>]  -> <session id>
//     session <client>                                          -> <session id>
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

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
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
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.ProtectedUtils;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMultiLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreMutex;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.framework.recipes.locks.Revoker;
import org.apache.curator.retry.ExponentialBackoffRetry;

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
    private final Map<String, ExecutorService> workers = new ConcurrentHashMap<>();
    private final Map<String, Deque<Lease>> leases = new ConcurrentHashMap<>();
    private final Map<String, Deque<Path>> entered = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicLong tokens = new java.util.concurrent.atomic.AtomicLong();
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

    private void shutdown() {
        for (Client c : clients.values()) {
            try {
                c.base.close();
            } catch (Throwable ignored) {
                // exiting anyway
            }
        }
        System.exit(0);
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

    private Client client(String name) {
        Client c = clients.get(name);
        if (c == null) {
            throw new IllegalArgumentException("no client " + name);
        }
        return c;
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
                CuratorFramework base = CuratorFrameworkFactory.builder()
                    .connectString(connect)
                    .sessionTimeoutMs(session)
                    .connectionTimeoutMs(10000)
                    .retryPolicy(new ExponentialBackoffRetry(20, 10))
                    .build();
                base.getConnectionStateListenable().addListener(
                    (c, s) -> emit("! state " + name + " " + s));
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
            case "close-client": {
                Client c = clients.remove(arg(pos, 0, "client"));
                if (c != null) {
                    c.base.close();
                }
                return "closed";
            }
            case "mutex":
                locks.put(arg(pos, 0, "lock"), new InterProcessMutex(client(arg(pos, 1, "client")).view, arg(pos, 2, "path")));
                return "made";
            case "rwlock": {
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
            default:
                throw new IllegalArgumentException("unknown verb " + verb);
        }
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
}
