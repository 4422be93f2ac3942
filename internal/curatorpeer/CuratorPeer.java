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
//     ! cache <name> created|changed|deleted <path> <data as text>   (a CuratorCache's listener)
//     ! cache <name> initialized
//     ! value <name> <text>             (a SharedValue's listener)
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
//     guard-enter <url>[,<url>...] kind=excl|shared|count [max=<n>] [label=<text>]
//                                                                -> <token>
//     guard-leave <token>
//     loop <lock> rounds=<n> guard=<url>[,<url>...] kind=excl|shared|count
//          [max=<n>] [label=<text>] [hold=<ms>]                  -> rounds=<n>
//     chaos <client> mutex|write|read|sem|latch|selector <label> path=<path> referee=<url>
//           [leases=<n>] [fenced=true] [hold=<ms>] [writes=<n>] [acquire=<ms>] [linger=<ms>]
//           -> acquisitions=<n> told=<n> fenced=<n> stale-tries=<n> timeouts=<n>
//              failures=<n> notoken=<n> guard-errors=<n>       (once stopped by chaos-stop)
//     chaos-stop <label>
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
//     atomic <name> <client> <path> [lock=<path>] [retries=<n>] [sleep=<ms>]
//                                  (a DistributedAtomicLong; lock= promotes to a lock there,
//                                   with the same retries; retries= default 10, sleep= 1)
//     atomic-add <name> <delta> [times=<n>]                     -> succeeded=<n> failed=<n>
//     atomic-get <name>                                          -> <value>
//     barrier <name> <client> <path>                             (a DistributedBarrier)
//     barrier-set <name>, barrier-remove <name>
//     barrier-wait <name> [timeout=<ms>]                         -> true | false
//     dbarrier <name> <client> <path> <memberQty>                (a DistributedDoubleBarrier member)
//     dbarrier-enter <name> [timeout=<ms>]                       -> true | false
//     dbarrier-leave <name> [timeout=<ms>]                       -> true | false
//     shared-value <name> <client> <path> <seed>                 (a SharedValue, started)
//     shared-value-set <name> <text>
//     shared-value-get <name>                                    -> <text>
//     group <name> <client> <path> <id> [<payload>]              (a GroupMember, started; without a
//                                                                  payload, Curator's default: the local address)
//     group-set <name> <text>                                    (setThisData)
//     group-members <name>                                       -> <n> <id>=<data as text>... (sorted by id)
//     group-close <name>
//     churn <client> <base> ops=<n> [seed=<s>] [pause=<ms>]
//           -> ops=<n> errors=<n>    (random writes below base: see Churn)
//     cache <cache> <client> <path>  (a CuratorCache, started; "! cache <cache> created|changed|deleted
//                                     <path> <data>" as it hears them, "! cache <cache> initialized")
//     cache-dump <cache>             -> <n> <path>:<czxid>:<mzxid>:<hex data>...  (sorted by path)
//     cache-close <cache>
//     ping
//     quit
//
// A guard is the test's critical-section detector (compat_test/guard_test.go),
// which a holder enters while it holds a lock: GET <url>/enter?kind=&max=
// &label= answers a marker's number, GET <url>/leave?m=<number> leaves. The
// test records every entry and every overlap the lock should have prevented.
//
// The chaos suite (compat_test/chaos_test.go). "chaos" runs one contender,
// on its worker, until "chaos-stop <label>": a mutex's, a read-write lock
// half's or a semaphore lease's (acquire within acquire= ms, default 1000,
// hold, release), or a LeaderLatch candidate's (each term a new latch) or an
// auto-requeued LeaderSelector's. Each acquisition (term) is a holding named
// <label>.<n>, which tells the suite's referee (GET <referee>/<verb>?h=
// <holding>..., answered with a word: compat_test/chaos_referee_test.go)
// when it enters (enter, with b=<µs its wait began> and t=<token>; "told"
// if it was told first), each step it takes inside (step: a fenced write
// for fenced= contenders; "fenced" if refused, "linger" while the test wants
// its client's holders to hold on), when it is told (told, with at=<µs>)
// and when it leaves (leave). Its client's ConnectionStateListener *tells*
// every holding of that client on SUSPENDED or LOST, synchronously in the
// listener: the holding writes no more. A holding is also told at once if
// its client has not been connected all along since its wait began (Curator
// does not check that a lock granted across a session change is still ours:
// CURATOR-604), and a latch's when it hears notLeader. An untold holding of
// a fenced= contender reads its fencing token (the czxid of its lock or
// latch node; a lock node's path is read from InterProcessMutex's private
// threadData), enters, and takes writes= steps hold= ms apart, then, while
// the referee says linger, one every 20 ms, for at most linger= ms (default
// 10000). Before it looks at whether it was told, a holder checks how long
// its last nap took: over a second longer than asked means the process was
// paused (SIGSTOP) in between, and the step that was due goes out unchecked
// (counted in stale-tries), as work resumed after a pause does: the fenced
// resource must refuse it.

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.lang.reflect.Field;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.time.Instant;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.ProtectedUtils;
import org.apache.curator.framework.recipes.atomic.AtomicValue;
import org.apache.curator.framework.recipes.atomic.DistributedAtomicLong;
import org.apache.curator.framework.recipes.atomic.PromotedToLock;
import org.apache.curator.framework.recipes.barriers.DistributedBarrier;
import org.apache.curator.framework.recipes.barriers.DistributedDoubleBarrier;
import org.apache.curator.framework.recipes.cache.ChildData;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
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
import org.apache.curator.framework.recipes.nodes.GroupMember;
import org.apache.curator.framework.recipes.shared.SharedValue;
import org.apache.curator.framework.recipes.shared.SharedValueListener;
import org.apache.curator.framework.recipes.shared.SharedValueReader;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.retry.RetryNTimes;
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
    // Curator's other recipes, by name: atomic longs, barriers, double
    // barrier members, caches, shared values and group members.
    private final Map<String, DistributedAtomicLong> atomics = new ConcurrentHashMap<>();
    private final Map<String, DistributedBarrier> barriers = new ConcurrentHashMap<>();
    private final Map<String, DistributedDoubleBarrier> doubleBarriers = new ConcurrentHashMap<>();
    private final Map<String, CuratorCache> caches = new ConcurrentHashMap<>();
    private final Map<String, SharedValue> sharedValues = new ConcurrentHashMap<>();
    private final Map<String, GroupMember> groups = new ConcurrentHashMap<>();
    private final Map<String, LeaderSelector> selectors = new ConcurrentHashMap<>();
    private final Map<String, java.util.concurrent.Semaphore> selectorRelease = new ConcurrentHashMap<>();
    private final Map<String, ExecutorService> workers = new ConcurrentHashMap<>();
    private final Map<String, Deque<Lease>> leases = new ConcurrentHashMap<>();
    private final Map<String, List<String>> entered = new ConcurrentHashMap<>(); // guard tokens' leave requests
    private final AtomicLong tokens = new AtomicLong();
    // The chaos suite: each client's tracker, and the running contenders by label.
    private final Map<String, Tracker> trackers = new ConcurrentHashMap<>();
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
            case "chaos":
                return chaos(arg(pos, 0, "client"), arg(pos, 1, "role"), arg(pos, 2, "label"), opt);
            case "chaos-stop": {
                ChaosLoop l = chaosLoops.get(arg(pos, 0, "label"));
                if (l == null) {
                    throw new IllegalArgumentException("no chaos loop " + pos.get(0));
                }
                l.stop = true;
                return "stopping";
            }
            case "guard-enter": {
                String kind = opt.getOrDefault("kind", "excl");
                int max = Integer.parseInt(opt.getOrDefault("max", "1"));
                String label = opt.getOrDefault("label", "java-" + workerName);
                String token = "g" + tokens.incrementAndGet();
                entered.put(token, enter(arg(pos, 0, "guard"), kind, max, label));
                return token;
            }
            case "guard-leave": {
                List<String> leaves = entered.remove(arg(pos, 0, "token"));
                if (leaves == null) {
                    throw new IllegalArgumentException("no guard token " + pos.get(0));
                }
                for (String l : leaves) {
                    get(l);
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
            case "churn":
                return churn(client(arg(pos, 0, "client")).view, arg(pos, 1, "base"), Integer.parseInt(opt.getOrDefault("ops", "100")),
                    Long.parseLong(opt.getOrDefault("seed", "1")), Long.parseLong(opt.getOrDefault("pause", "0")));
            case "atomic": {
                String name = arg(pos, 0, "name");
                CuratorFramework c = client(arg(pos, 1, "client")).view;
                int retries = Integer.parseInt(opt.getOrDefault("retries", "10"));
                int sleep = Integer.parseInt(opt.getOrDefault("sleep", "1"));
                RetryNTimes policy = new RetryNTimes(retries, sleep);
                DistributedAtomicLong l = opt.containsKey("lock")
                    ? new DistributedAtomicLong(c, arg(pos, 2, "path"), policy,
                        PromotedToLock.builder().lockPath(opt.get("lock")).retryPolicy(new RetryNTimes(retries, sleep)).build())
                    : new DistributedAtomicLong(c, arg(pos, 2, "path"), policy);
                atomics.put(name, l);
                return "made";
            }
            case "atomic-add": {
                DistributedAtomicLong l = named(atomics, "atomic", arg(pos, 0, "name"));
                long delta = Long.parseLong(arg(pos, 1, "delta"));
                int times = Integer.parseInt(opt.getOrDefault("times", "1"));
                int ok = 0;
                int failed = 0;
                for (int i = 0; i < times; i++) {
                    AtomicValue<Long> v = l.add(delta);
                    if (v.succeeded()) {
                        ok++;
                    } else {
                        failed++;
                    }
                }
                return "succeeded=" + ok + " failed=" + failed;
            }
            case "atomic-get":
                return Long.toString(named(atomics, "atomic", arg(pos, 0, "name")).get().postValue());
            case "barrier":
                barriers.put(arg(pos, 0, "name"), new DistributedBarrier(client(arg(pos, 1, "client")).view, arg(pos, 2, "path")));
                return "made";
            case "barrier-set":
                named(barriers, "barrier", arg(pos, 0, "name")).setBarrier();
                return "set";
            case "barrier-remove":
                named(barriers, "barrier", arg(pos, 0, "name")).removeBarrier();
                return "removed";
            case "barrier-wait": {
                DistributedBarrier b = named(barriers, "barrier", arg(pos, 0, "name"));
                long timeout = Long.parseLong(opt.getOrDefault("timeout", "-1"));
                if (timeout < 0) {
                    b.waitOnBarrier();
                    return "true";
                }
                return Boolean.toString(b.waitOnBarrier(timeout, TimeUnit.MILLISECONDS));
            }
            case "dbarrier":
                doubleBarriers.put(arg(pos, 0, "name"), new DistributedDoubleBarrier(client(arg(pos, 1, "client")).view,
                    arg(pos, 2, "path"), Integer.parseInt(arg(pos, 3, "memberQty"))));
                return "made";
            case "dbarrier-enter":
            case "dbarrier-leave": {
                DistributedDoubleBarrier b = named(doubleBarriers, "double barrier", arg(pos, 0, "name"));
                long timeout = Long.parseLong(opt.getOrDefault("timeout", "-1"));
                boolean enter = verb.equals("dbarrier-enter");
                if (timeout < 0) {
                    if (enter) {
                        b.enter();
                    } else {
                        b.leave();
                    }
                    return "true";
                }
                return Boolean.toString(enter ? b.enter(timeout, TimeUnit.MILLISECONDS) : b.leave(timeout, TimeUnit.MILLISECONDS));
            }
            case "cache": {
                String name = arg(pos, 0, "name");
                CuratorCache cache = CuratorCache.build(client(arg(pos, 1, "client")).view, arg(pos, 2, "path"));
                cache.listenable().addListener(CuratorCacheListener.builder()
                    .forCreates(n -> emit("! cache " + name + " created " + n.getPath() + " " + text(n)))
                    .forChanges((old, n) -> emit("! cache " + name + " changed " + n.getPath() + " " + text(n)))
                    .forDeletes(old -> emit("! cache " + name + " deleted " + old.getPath() + " " + text(old)))
                    .forInitialized(() -> emit("! cache " + name + " initialized"))
                    .build());
                caches.put(name, cache);
                cache.start();
                return "started";
            }
            case "cache-dump": {
                List<ChildData> nodes = new ArrayList<>();
                named(caches, "cache", arg(pos, 0, "cache")).stream().forEach(nodes::add);
                nodes.sort((a, b) -> a.getPath().compareTo(b.getPath()));
                StringBuilder sb = new StringBuilder(Integer.toString(nodes.size()));
                for (ChildData d : nodes) {
                    sb.append(' ').append(d.getPath()).append(':').append(d.getStat().getCzxid())
                        .append(':').append(d.getStat().getMzxid()).append(':');
                    if (d.getData() != null) {
                        for (byte x : d.getData()) {
                            sb.append(String.format("%02x", x));
                        }
                    }
                }
                return sb.toString();
            }
            case "cache-close": {
                CuratorCache cache = caches.remove(arg(pos, 0, "cache"));
                if (cache != null) {
                    cache.close();
                }
                return "closed";
            }
            case "shared-value": {
                String name = arg(pos, 0, "name");
                SharedValue v = new SharedValue(client(arg(pos, 1, "client")).view, arg(pos, 2, "path"),
                    arg(pos, 3, "seed").getBytes(StandardCharsets.UTF_8));
                v.getListenable().addListener(new SharedValueListener() {
                    @Override
                    public void valueHasChanged(SharedValueReader r, byte[] value) {
                        emit("! value " + name + " " + new String(value, StandardCharsets.UTF_8));
                    }

                    @Override
                    public void stateChanged(CuratorFramework c, ConnectionState s) {
                    }
                });
                sharedValues.put(name, v);
                v.start();
                return "started";
            }
            case "shared-value-set":
                named(sharedValues, "shared value", arg(pos, 0, "name")).setValue(arg(pos, 1, "text").getBytes(StandardCharsets.UTF_8));
                return "set";
            case "shared-value-get":
                return new String(named(sharedValues, "shared value", arg(pos, 0, "name")).getValue(), StandardCharsets.UTF_8);
            case "group": {
                String name = arg(pos, 0, "name");
                CuratorFramework c = client(arg(pos, 1, "client")).view;
                String path = arg(pos, 2, "path"), id = arg(pos, 3, "id");
                GroupMember m = pos.size() > 4
                    ? new GroupMember(c, path, id, pos.get(4).getBytes(StandardCharsets.UTF_8))
                    : new GroupMember(c, path, id);
                groups.put(name, m);
                m.start();
                return "started";
            }
            case "group-set":
                named(groups, "group member", arg(pos, 0, "name")).setThisData(arg(pos, 1, "text").getBytes(StandardCharsets.UTF_8));
                return "set";
            case "group-members": {
                Map<String, byte[]> members = new java.util.TreeMap<>(named(groups, "group member", arg(pos, 0, "name")).getCurrentMembers());
                StringBuilder sb = new StringBuilder(Integer.toString(members.size()));
                for (Map.Entry<String, byte[]> e : members.entrySet()) {
                    byte[] data = e.getValue();
                    sb.append(' ').append(e.getKey()).append('=')
                        .append(data == null || data.length == 0 ? "-" : new String(data, StandardCharsets.UTF_8));
                }
                return sb.toString();
            }
            case "group-close": {
                GroupMember m = groups.remove(arg(pos, 0, "name"));
                if (m != null) {
                    m.close();
                }
                return "closed";
            }
            default:
                throw new IllegalArgumentException("unknown verb " + verb);
        }
    }

    /** A cached node's data as text ("-" for none). */
    private static String text(ChildData d) {
        byte[] data = d.getData();
        return data == null || data.length == 0 ? "-" : new String(data, StandardCharsets.UTF_8);
    }

    private LeaderLatch latch(String name) {
        return named(latches, "latch", name);
    }

    /**
     * Churn makes ops random writes below base, pause ms apart: a node of
     * two levels (base/n0..n4, and base/nX/m0..m3) made (its parents too),
     * its data set, or it deleted (with what is below it), each with
     * Curator's retries. A write that fails all the same (a server
     * restarting, say) counts as an error, and the churn goes on.
     */
    private static String churn(CuratorFramework c, String base, int ops, long seed, long pause) throws Exception {
        java.util.Random r = new java.util.Random(seed);
        int errors = 0;
        for (int i = 0; i < ops; i++) {
            String p = base + "/n" + r.nextInt(5);
            if (r.nextBoolean()) {
                p += "/m" + r.nextInt(4);
            }
            byte[] data = ("j" + i).getBytes(StandardCharsets.UTF_8);
            try {
                switch (r.nextInt(3)) {
                    case 0:
                        c.create().orSetData().creatingParentsIfNeeded().forPath(p, data);
                        break;
                    case 1:
                        c.setData().forPath(p, data);
                        break;
                    default:
                        c.delete().deletingChildrenIfNeeded().forPath(p);
                        break;
                }
            } catch (org.apache.zookeeper.KeeperException.NoNodeException | org.apache.zookeeper.KeeperException.NodeExistsException
                     | org.apache.zookeeper.KeeperException.NotEmptyException e) {
                // another write of the churn's came first
            } catch (Exception e) {
                errors++;
            }
            if (pause > 0) {
                Thread.sleep(pause);
            }
        }
        return "ops=" + ops + " errors=" + errors;
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
        for (int r = 0; r < rounds; r++) {
            acquire(workerName, ref, -1, 1);
            try {
                List<String> leaves = enter(opt.getOrDefault("guard", ""), kind, max, label);
                if (hold > 0) {
                    Thread.sleep(hold); // time spent in the critical section, so overlaps would show
                }
                for (String l : leaves) {
                    get(l);
                }
            } finally {
                release(workerName, ref);
            }
        }
        return "rounds=" + rounds;
    }

    /** Enters the guards at urls (comma-separated) as label: the requests that leave them. */
    static List<String> enter(String urls, String kind, int max, String label) throws IOException {
        List<String> leaves = new ArrayList<>();
        for (String g : urls.split(",")) {
            if (!g.isEmpty()) {
                leaves.add(g + "/leave?m=" + get(g + "/enter?kind=" + kind + "&max=" + max + "&label=" + label));
            }
        }
        return leaves;
    }

    /**
     * One GET of the test's (a guard's, the chaos suite's referee's): the answer, which must be 200.
     * Bounded by a minute: a pause of this process (SIGSTOP, up to the session timeout + 20 s in
     * the chaos suite) stops no clock, so a shorter bound would time a call out on the resume.
     */
    static String get(String url) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
        c.setConnectTimeout(60_000);
        c.setReadTimeout(60_000);
        int code = c.getResponseCode();
        try (InputStream in = code < 400 ? c.getInputStream() : c.getErrorStream()) {
            String body = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8); // read: the connection is kept alive
            if (code != 200) {
                throw new IOException(url + " answered " + code + ": " + body);
            }
            return body;
        }
    }

    // ---- The chaos suite ----

    /** Microseconds since the Unix epoch, from the wall clock (as Go's time.Now().UnixMicro()). */
    static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1_000;
    }

    private Tracker tracker(String client) {
        return named(trackers, "client", client);
    }

    /** What the chaos contenders know of one client's connection, and its current holdings. */
    private static final class Tracker {
        volatile boolean connected;
        final AtomicLong errorStates = new AtomicLong(); // SUSPENDED and LOST heard so far
        final Set<Holding> holdings = ConcurrentHashMap.newKeySet();

        /** Runs in the client's ConnectionStateListener: SUSPENDED and LOST tell every holding (the TN14 pattern). */
        void stateChanged(ConnectionState s, long at) {
            if (s == ConnectionState.SUSPENDED || s == ConnectionState.LOST) {
                connected = false;
                errorStates.incrementAndGet(); // before telling: see hold
                for (Holding h : holdings) {
                    h.tell(at);
                }
            } else if (s.isConnected()) {
                connected = true;
            }
        }
    }

    /** A contender's wait for its lock or term: when it began, and its client's connection then. */
    private static final class Wait {
        final long began = micros();
        final long errorStates;
        final boolean connected;

        Wait(Tracker tr) {
            errorStates = tr.errorStates.get();
            connected = tr.connected;
        }

        /** Reports whether the client has not been connected all along since. */
        boolean lapsed(Tracker tr) {
            return !connected || tr.errorStates.get() != errorStates || !tr.connected;
        }
    }

    /** A nap this much longer than asked means the process was paused during it. */
    private static final long PAUSE_GAP_MS = 1000;

    /** A running chaos contender: its settings and counts. */
    private static final class ChaosLoop {
        final String label;
        final Tracker tr;
        final String referee;
        final boolean fenced;
        final long hold, acquireMs, lingerMs;
        final int writes;
        volatile boolean stop;
        long acquisitions, told, refused, failures, timeouts, noToken, staleTries, guardErrors;
        private final Set<String> failureKinds = new java.util.HashSet<>();

        ChaosLoop(String label, Tracker tr, Map<String, String> opt) {
            this.label = label;
            this.tr = tr;
            referee = opt.get("referee");
            fenced = Boolean.parseBoolean(opt.get("fenced"));
            hold = Long.parseLong(opt.getOrDefault("hold", "2"));
            writes = Integer.parseInt(opt.getOrDefault("writes", "2"));
            acquireMs = Long.parseLong(opt.getOrDefault("acquire", "1000"));
            lingerMs = Long.parseLong(opt.getOrDefault("linger", "10000"));
        }

        /** Counts a failure, and logs the first of each kind to stderr. */
        void failed(String what, Exception e) {
            failures++;
            if (failureKinds.add(what + " " + e.getClass().getName())) {
                System.err.println("chaos " + label + ": " + what + " failed: " + describe(e));
            }
        }

        String report() {
            return "acquisitions=" + acquisitions + " told=" + told + " fenced=" + refused + " stale-tries=" + staleTries
                + " timeouts=" + timeouts + " failures=" + failures + " notoken=" + noToken + " guard-errors=" + guardErrors;
        }

        /** One request to the referee, verb and query as "<verb>?<query>": its answer's word. */
        String call(String request) throws IOException {
            return get(referee + "/" + request);
        }
    }

    /** One holding of a chaos contender, from its grant until the contender gives it up. */
    private static final class Holding {
        final String id;
        final ChaosLoop loop;
        volatile boolean told; // read by the holder before each step
        private boolean finished; // guarded by this

        Holding(String id, ChaosLoop loop) {
            this.id = id;
            this.loop = loop;
        }

        /** The holding is told its lock can no longer be trusted: it writes no more, and the referee takes it out of the guard. */
        void tell(long at) {
            synchronized (this) {
                if (told || finished) {
                    return;
                }
                told = true;
            }
            try {
                loop.call("told?h=" + id + "&at=" + at);
            } catch (IOException e) {
                // The holding stays in the guard until it leaves: an overlap the run cannot excuse.
                emit("! referee-error " + id + " " + describe(e));
            }
        }

        /** The holding is over: it can no longer be told. Reports whether it was. */
        synchronized boolean finish() {
            finished = true;
            return told;
        }
    }

    /** Acquires a lock within ms: what releases it, or null if the time ran out. */
    private interface Acquirer {
        AutoCloseable acquire(long ms) throws Exception;
    }

    private String chaos(String clientName, String role, String label, Map<String, String> opt) throws Exception {
        CuratorFramework view = client(clientName).view;
        ChaosLoop loop = new ChaosLoop(label, tracker(clientName), opt);
        String path = opt.get("path");
        if (loop.referee == null || path == null) {
            throw new IllegalArgumentException("chaos needs path= and referee=");
        }
        if (chaosLoops.putIfAbsent(label, loop) != null) {
            throw new IllegalArgumentException("chaos loop " + label + " is running already");
        }
        try {
            switch (role) {
                case "latch":
                    latchLoop(loop, view, path);
                    break;
                case "selector":
                    selectorLoop(loop, view, path);
                    break;
                case "sem": {
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(view, path, Integer.parseInt(opt.getOrDefault("leases", "1")));
                    lockLoop(loop, ms -> s.acquire(ms, TimeUnit.MILLISECONDS), null);
                    break;
                }
                default: {
                    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(view, path);
                    InterProcessMutex m = role.equals("mutex") ? new InterProcessMutex(view, path)
                        : role.equals("write") ? rw.writeLock() : rw.readLock();
                    lockLoop(loop, ms -> m.acquire(ms, TimeUnit.MILLISECONDS) ? m::release : null, () -> fencingToken(view, m));
                }
            }
        } finally {
            chaosLoops.remove(label);
        }
        return loop.report();
    }

    private static void lockLoop(ChaosLoop loop, Acquirer lock, java.util.concurrent.Callable<Long> token) throws InterruptedException {
        while (!loop.stop) {
            Wait w = new Wait(loop.tr);
            AutoCloseable held;
            try {
                held = lock.acquire(loop.acquireMs);
            } catch (Exception e) {
                loop.failed("acquire", e);
                Thread.sleep(20); // pacing after a failure
                continue;
            }
            if (held == null) {
                loop.timeouts++;
                continue;
            }
            try {
                hold(loop, w, () -> true, token, null);
            } finally {
                try {
                    held.close();
                } catch (Exception e) {
                    loop.failed("release", e);
                }
            }
        }
    }

    /** A LeaderLatch candidate: each term a new latch, started, awaited, led and closed. */
    private static void latchLoop(ChaosLoop loop, CuratorFramework view, String path) throws Exception {
        AtomicReference<Holding> current = new AtomicReference<>();
        while (!loop.stop) {
            LeaderLatch latch = new LeaderLatch(view, path, loop.label);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                }

                @Override
                public void notLeader() {
                    Holding h = current.get();
                    if (h != null) {
                        h.tell(micros());
                    }
                }
            });
            Wait w = new Wait(loop.tr);
            try {
                latch.start();
                boolean led = false;
                while (!loop.stop && !(led = latch.await(200, TimeUnit.MILLISECONDS))) {
                    // waiting in the queue; looking at stop between waits
                }
                if (led) {
                    hold(loop, w, latch::hasLeadership, () -> czxid(view, latch.getOurPath()), current);
                }
            } catch (Exception e) {
                loop.failed("latch", e);
                Thread.sleep(20); // pacing after a failure
            } finally {
                latch.close();
            }
        }
    }

    /** A LeaderSelector candidate, auto-requeued: each takeLeadership is a term. */
    private static void selectorLoop(ChaosLoop loop, CuratorFramework view, String path) throws Exception {
        AtomicReference<LeaderSelector> self = new AtomicReference<>();
        AtomicReference<Wait> waiting = new AtomicReference<>(new Wait(loop.tr)); // begun at the start, then at each term's end
        LeaderSelector sel = new LeaderSelector(view, path, new LeaderSelectorListenerAdapter() {
            @Override
            public void takeLeadership(CuratorFramework c) throws Exception {
                try {
                    hold(loop, waiting.get(), () -> true, () -> fencingToken(view, selectorMutex(self.get())), null);
                } finally {
                    waiting.set(new Wait(loop.tr));
                }
            }
        });
        self.set(sel);
        sel.setId(loop.label);
        sel.autoRequeue();
        sel.start();
        while (!loop.stop) {
            Thread.sleep(50); // the selector leads on its own thread
        }
        sel.close();
    }

    /**
     * One holding, just granted after wait w: told at once if the client
     * was not connected all along since w began, or if leads says it does
     * not lead (a latch may lead with a node of its session from before a
     * LOST and never hear that the server deleted it: CURATOR-696); else a
     * fenced contender reads its token, and it holds (holdInside).
     */
    private static void hold(ChaosLoop loop, Wait w, java.util.function.BooleanSupplier leads,
                             java.util.concurrent.Callable<Long> token, AtomicReference<Holding> current) throws InterruptedException {
        loop.acquisitions++;
        Holding h = new Holding(loop.label + "." + loop.acquisitions, loop);
        loop.tr.holdings.add(h); // before the checks: a SUSPENDED or LOST from now on finds it
        if (current != null) {
            current.set(h);
        }
        try {
            if (w.lapsed(loop.tr) || !leads.getAsBoolean()) {
                h.tell(micros());
            }
            long t = 0;
            if (loop.fenced && !h.told) {
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
            if (!h.told) {
                holdInside(loop, h, w.began, t);
            }
        } finally {
            if (current != null) {
                current.set(null);
            }
            loop.tr.holdings.remove(h);
            if (h.finish()) {
                loop.told++;
            }
        }
    }

    /** A holding's time inside the referee's guard (see the top of this file). */
    private static void holdInside(ChaosLoop loop, Holding h, long began, long token) throws InterruptedException {
        String reply;
        try {
            reply = loop.call("enter?h=" + h.id + "&b=" + began + "&t=" + token);
        } catch (IOException e) {
            loop.guardErrors++;
            loop.failed("enter", e);
            return;
        }
        if (reply.equals("told")) {
            return;
        }
        try {
            boolean linger = reply.equals("linger");
            long start = System.nanoTime();
            long looked = start;
            long nap = 0;
            for (int i = 0; ; i++) {
                if (loop.fenced && i > 0 && System.nanoTime() - looked > (nap + PAUSE_GAP_MS) * 1_000_000L) {
                    loop.staleTries++;
                    if (loop.call("step?h=" + h.id).equals("fenced")) {
                        loop.refused++;
                        return;
                    }
                }
                if (h.told || (i >= loop.writes && !(linger && System.nanoTime() - start < loop.lingerMs * 1_000_000L))) {
                    return;
                }
                looked = System.nanoTime();
                reply = loop.call("step?h=" + h.id);
                if (reply.equals("fenced")) {
                    loop.refused++;
                    return;
                }
                linger = reply.equals("linger");
                nap = i < loop.writes ? Math.max(1, loop.hold / Math.max(1, loop.writes)) : 20;
                Thread.sleep(nap); // time in the critical section
            }
        } catch (IOException e) {
            loop.failed("step", e);
        } finally {
            try {
                loop.call("leave?h=" + h.id);
            } catch (IOException e) {
                loop.guardErrors++;
                loop.failed("leave", e);
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
        return czxid(c, (String) p.get(data));
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
