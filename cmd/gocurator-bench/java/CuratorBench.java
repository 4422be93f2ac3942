// CuratorBench is the Java side of gocurator-bench: it runs one scenario of
// the benchmark with Apache Curator 5.4's lock recipes, against the same
// ZooKeeper server and with the same counts as the Go side. gocurator-bench
// compiles it with javac against Debian's Curator jars and runs one JVM per
// scenario.
//
// Usage:
//
//     java -D<key>=<value>... CuratorBench <scenario> <connect string>
//
// The JVM sets the scenario up (sessions, locks) and prints its versions,
// a JSON line. Then it answers each line on stdin with one line on stdout
// until the end of input, when it closes its sessions and exits. The Go
// side sends each request when its turn comes, so that repetitions of the
// Go and Java implementations alternate on the same server and none runs
// alongside another; it warms the JVM up with repetitions of its own,
// counts the server's packets and waits for watches itself. In every
// scenario, "cpu" answers the CPU time this JVM has used, in nanoseconds
// (all its threads: Curator's, ZooKeeper's client, the JIT, the GC).
//
// The scenarios, "loop" (timed loops: loop), "s3" (a read-write lock
// queue: ReadWriteQueue), "s7" (a leader hand-off: Election) and "s8" (a
// cache of a tree: TreeCache), each document their keys (system
// properties; all take path=<base path>) and requests.

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.cache.CuratorCache;
import org.apache.curator.framework.recipes.cache.CuratorCacheListener;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBench {
    static String connect;
    static final List<CuratorFramework> clients = new ArrayList<>();

    // Handler answers a scenario's requests, one line each.
    interface Handler {
        String handle(String request) throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: java -D<key>=<value>... CuratorBench <scenario> <connect>");
            System.exit(2);
        }
        String scenario = args[0];
        connect = args[1];
        Handler h;
        switch (scenario) {
            case "loop": h = loop(); break;
            case "s3": h = new ReadWriteQueue(); break;
            case "s7": h = new Election(); break;
            case "s8": h = new TreeCache(); break;
            default: throw new IllegalArgumentException("unknown scenario " + scenario);
        }
        System.out.println("{\"Java\":\"" + System.getProperty("java.version") + "\",\"Curator\":\"" + curatorVersion()
                + "\",\"ZKClient\":\"" + org.apache.zookeeper.Version.getFullVersion().replace("\"", "'") + "\"}");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null; ) {
            String req = line.trim();
            System.out.println(req.equals("cpu") ? String.valueOf(cpuNs()) : h.handle(req));
            System.out.flush();
        }
        for (CuratorFramework c : clients) {
            c.close(); // ends its session, so that none outlives the scenario
        }
        System.exit(0);
    }

    // cpuNs is the CPU time this JVM has used, in nanoseconds.
    static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static int num(String key) {
        return Integer.parseInt(System.getProperty(key)); // throws on a missing key
    }

    static String curatorVersion() {
        try (InputStream in = InterProcessMutex.class.getResourceAsStream(
                "/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            if (in == null) {
                return "unknown";
            }
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "unknown");
        } catch (Exception e) {
            return "unknown";
        }
    }

    static CuratorFramework newClient() throws Exception {
        CuratorFramework c = CuratorFrameworkFactory.newClient(connect, 30000, 15000,
                new ExponentialBackoffRetry(100, 5));
        c.start();
        if (!c.blockUntilConnected(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("no connection to " + connect);
        }
        clients.add(c);
        return c;
    }

    interface Cycle {
        void run() throws Exception;
    }

    // pool runs the workers of timed loops, on threads kept between
    // repetitions.
    static final ExecutorService pool = Executors.newCachedThreadPool();

    // timed runs every worker's cycle in a loop on its own thread until
    // durationMs has passed, and returns the nanoseconds of the repetition
    // and of each cycle.
    static String timed(List<Cycle> workers, long durationMs) throws Exception {
        long t0 = System.nanoTime();
        long deadline = t0 + durationMs * 1_000_000L;
        List<Callable<long[]>> loops = new ArrayList<>();
        for (Cycle w : workers) {
            loops.add(() -> {
                LongStream.Builder lat = LongStream.builder();
                for (long start = System.nanoTime(), end; start < deadline; start = end) {
                    w.run();
                    end = System.nanoTime();
                    lat.add(end - start);
                }
                return lat.build().toArray();
            });
        }
        List<Future<long[]>> done = pool.invokeAll(loops);
        StringBuilder out = new StringBuilder().append(System.nanoTime() - t0);
        for (Future<long[]> f : done) {
            for (long x : f.get()) { // throws a worker's failure
                out.append(' ').append(x);
            }
        }
        return out.toString();
    }

    // loop: clients sessions and threads threads, thread t on client t %
    // clients, each cycle of a thread an acquire and release of a lock (a
    // lease of an InterProcessSemaphoreV2 of leases leases, if leases > 0)
    // chosen at random among paths paths below path. Each repetition, "rep
    // <n>", runs the first n threads (0: all) for durationMs, answered as
    // timed returns.
    static Handler loop() throws Exception {
        int clients = num("clients");
        int paths = num("paths");
        int leases = num("leases");
        List<Cycle[]> locks = new ArrayList<>(); // by client and path
        for (int i = 0; i < clients; i++) {
            CuratorFramework c = newClient();
            Cycle[] cycles = new Cycle[paths];
            for (int p = 0; p < paths; p++) {
                String lp = System.getProperty("path") + "/l" + p;
                if (leases > 0) {
                    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, lp, leases);
                    cycles[p] = () -> s.returnLease(s.acquire());
                } else {
                    InterProcessMutex m = new InterProcessMutex(c, lp);
                    cycles[p] = () -> {
                        m.acquire();
                        m.release();
                    };
                }
            }
            locks.add(cycles);
        }
        List<Cycle> workers = new ArrayList<>();
        for (int t = 0; t < num("threads"); t++) {
            Cycle[] cycles = locks.get(t % clients);
            workers.add(() -> cycles[ThreadLocalRandom.current().nextInt(paths)].run());
        }
        long durationMs = num("durationMs");
        return req -> {
            int n = Integer.parseInt(req.substring("rep ".length()));
            return timed(workers.subList(0, n == 0 ? workers.size() : n), durationMs); // throws for n > the threads
        };
    }

    // ReadWriteQueue is s3: a queue of the pattern's participants (W a
    // writer, R a reader), each with its own session and thread. "add <path>
    // <i>" starts participant i of a queue on path, which acquires and
    // releases as soon as it holds, except the first (i 0), which holds
    // until "drain" and whose "add" answers once it holds. "drain" makes the
    // first writer release, waits until every participant has acquired and
    // released, and answers the nanoseconds that took.
    static final class ReadWriteQueue implements Handler {
        final String pattern = System.getProperty("pattern");
        final List<CuratorFramework> cs = new ArrayList<>();
        final List<Future<?>> queued = new ArrayList<>();
        CountDownLatch go;

        ReadWriteQueue() throws Exception {
            for (int i = 0; i < pattern.length(); i++) {
                cs.add(newClient());
            }
        }

        public String handle(String req) throws Exception {
            String[] f = req.split(" ");
            switch (f[0]) {
                case "add": return add(f[1], Integer.parseInt(f[2]));
                case "drain": return drain();
                default: throw new IllegalArgumentException("s3: " + req);
            }
        }

        String add(String path, int i) throws Exception {
            if (i == 0) {
                queued.clear();
                go = new CountDownLatch(1);
            }
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(cs.get(i), path);
            InterProcessLock l = pattern.charAt(i) == 'W' ? rw.writeLock() : rw.readLock();
            CountDownLatch held = new CountDownLatch(1);
            queued.add(pool.submit(() -> {
                l.acquire();
                held.countDown();
                if (i == 0) {
                    go.await();
                }
                l.release();
                return null;
            }));
            if (i == 0 && !held.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the first writer did not acquire");
            }
            for (Future<?> q : queued) {
                if (q.isDone()) {
                    q.get(); // none can end before the drain but by failing: throws its failure
                }
            }
            return "added";
        }

        String drain() throws Exception {
            long t0 = System.nanoTime();
            go.countDown();
            for (Future<?> q : queued) {
                q.get(60, TimeUnit.SECONDS); // throws a participant's failure
            }
            return String.valueOf(System.nanoTime() - t0);
        }
    }

    // Candidate is a LeaderLatch on a client, and when it learned it leads.
    static final class Candidate {
        final CuratorFramework client;
        final LeaderLatch latch;
        final Future<Long> ledAt; // System.nanoTime() once LeaderLatch.await returned

        Candidate(CuratorFramework client, String path) throws Exception {
            this.client = client;
            latch = new LeaderLatch(client, path);
            latch.start();
            ledAt = pool.submit(() -> {
                latch.await();
                return System.nanoTime();
            });
        }
    }

    // Election is s7: two candidates of one LeaderLatch election, each on
    // its own session, a leader and a follower. "leader" answers the
    // leader's node path. "handoff close" and "handoff session" make the
    // leader leave, by closing its latch or its client (which ends its
    // session), and the follower take over; the one that left joins again
    // (after a session end, on a new client). They answer the nanoseconds
    // from just before the close until the follower's LeaderLatch.await
    // returned. The Go side waits until the follower watches the leader's
    // node before each hand-off.
    static final class Election implements Handler {
        final String path = System.getProperty("path");
        Candidate leader;
        Candidate follower;

        Election() throws Exception {
            leader = new Candidate(newClient(), path);
            leader.ledAt.get(30, TimeUnit.SECONDS);
            follower = new Candidate(newClient(), path);
        }

        public String handle(String req) throws Exception {
            switch (req) {
                case "leader": return leader.latch.getOurPath();
                case "handoff close": return String.valueOf(handoff(false));
                case "handoff session": return String.valueOf(handoff(true));
                default: throw new IllegalArgumentException("s7: " + req);
            }
        }

        long handoff(boolean bySession) throws Exception {
            Candidate old = leader;
            Candidate next = follower;
            long t0 = System.nanoTime();
            if (bySession) {
                old.client.close();
            } else {
                old.latch.close();
            }
            long took = next.ledAt.get(30, TimeUnit.SECONDS) - t0;
            CuratorFramework c = old.client;
            if (bySession) {
                clients.remove(c);
                c = newClient();
            }
            leader = next;
            follower = new Candidate(c, path);
            return took;
        }
    }

    // TreeCache is s8: a CuratorCache of the tree at tree=<path> (a root,
    // parents=<n> children, children=<n> under each), on one client. "load"
    // starts a cache and answers, once it is initialized, the nanoseconds
    // that took, the CPU nanoseconds the JVM used meanwhile, the heap bytes
    // it then holds (the heap's used bytes after forced collections, less
    // those before) and how many nodes it holds; "updates" changes
    // updates=<n> leaves' data, one at a time, on the cache's client, and
    // answers the nanoseconds from just before each write until the
    // cache's listener heard it; "close" closes the cache.
    static final class TreeCache implements Handler {
        final String tree = System.getProperty("tree");
        final int parents = num("parents");
        final int children = num("children");
        final int updates = num("updates");
        final CuratorFramework client;
        final LinkedBlockingQueue<String> changed = new LinkedBlockingQueue<>();
        CuratorCache cache;

        TreeCache() throws Exception {
            client = newClient();
        }

        public String handle(String req) throws Exception {
            switch (req) {
                case "load": return load();
                case "updates": return updates();
                case "close":
                    cache.close();
                    cache = null;
                    return "closed";
                default: throw new IllegalArgumentException("s8: " + req);
            }
        }

        static long usedHeap() {
            for (int i = 0; i < 3; i++) {
                System.gc();
            }
            return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        }

        String load() throws Exception {
            long heap0 = usedHeap();
            long cpu0 = cpuNs();
            long t0 = System.nanoTime();
            CountDownLatch initialized = new CountDownLatch(1);
            changed.clear();
            cache = CuratorCache.build(client, tree);
            cache.listenable().addListener(CuratorCacheListener.builder()
                .forInitialized(initialized::countDown)
                .forChanges((before, after) -> changed.add(after.getPath()))
                .build());
            cache.start();
            if (!initialized.await(2, TimeUnit.MINUTES)) {
                throw new IllegalStateException("the cache was not initialized within 2 minutes");
            }
            long took = System.nanoTime() - t0;
            long cpu = cpuNs() - cpu0;
            long heap = usedHeap() - heap0;
            return took + " " + cpu + " " + heap + " " + cache.size();
        }

        String updates() throws Exception {
            StringBuilder out = new StringBuilder();
            for (int i = 0; i < updates; i++) {
                String leaf = String.format("%s/p%03d/c%03d", tree, i % parents, (i / parents) % Math.max(1, children));
                long t0 = System.nanoTime();
                client.setData().forPath(leaf, Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                for (String p = ""; !p.equals(leaf); ) {
                    p = changed.poll(30, TimeUnit.SECONDS);
                    if (p == null) {
                        throw new IllegalStateException("the change of " + leaf + " was not heard within 30 s");
                    }
                }
                if (out.length() > 0) {
                    out.append(' ');
                }
                out.append(System.nanoTime() - t0);
            }
            return out.toString();
        }
    }
}
