// CuratorBench is the Java side of gocurator-bench: it runs one scenario of
// the benchmark with Apache Curator 5.4's lock recipes, against the same
// ZooKeeper server and with the same counts as the Go side. gocurator-bench
// compiles it with javac against Debian's Curator jars and runs one JVM per
// scenario.
//
// Usage:
//
//     java CuratorBench <scenario> <connect string> key=value...
//
// The JVM sets the scenario up (sessions, locks; s2, s4 and s5 also warm up
// for warmupMs, for the JIT) and prints "ready". Then it answers each line
// on stdin with one line on stdout, until "quit" (or the end of input),
// when it prints a last JSON line with its versions, closes its sessions
// and exits. The Go side sends each request when its turn comes, so that
// repetitions of the Go and Java implementations alternate on the same
// server and none runs alongside another; it counts the server's packets
// and waits for watches itself. In every scenario, "cpu" answers the CPU
// time this JVM has used, in nanoseconds (all its threads: Curator's,
// ZooKeeper's client, the JIT, the GC).
//
// Scenarios, their keys (all take path=<base path>) and requests:
//
//     s2  one hot mutex                    clients=<n> durationMs=<ms> warmupMs=<ms>
//         "rep [<n>]": acquire+release in a loop on the first n (all) clients for durationMs
//         -> {"ops":n,"elapsedNs":t,"latNs":[...each cycle]}
//         (gocurator-bench's scenario 1 is s2 with one client)
//     s3  read-write lock, W R R R W ...   readers=<n> group=<readers per writer>
//         "form" -> "formed"; "drain" -> <ns> (see ReadWriteQueue)
//     s4  semaphore                        clients=<n> leases=<n> durationMs=<ms> warmupMs=<ms>
//         "rep [<n>]" as s2, each cycle a lease's acquire and return
//     s5  many lock paths, one client      threads=<n> paths=<n> durationMs=<ms> warmupMs=<ms>
//         "rep" as s2
//     s7  leader hand-off, two candidates
//         "leader" -> <path>; "handoff close|session" -> <ns> <path> (see Election)

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.LongStream;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.locks.InterProcessLock;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.framework.recipes.locks.InterProcessSemaphoreV2;
import org.apache.curator.framework.recipes.locks.Lease;
import org.apache.curator.retry.ExponentialBackoffRetry;

public class CuratorBench {
    static String connect;
    static final Map<String, String> opts = new HashMap<>();
    static final List<CuratorFramework> clients = new ArrayList<>();

    // Handler answers a scenario's requests, one line each.
    interface Handler {
        String handle(String request) throws Exception;
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: CuratorBench <scenario> <connect> key=value...");
            System.exit(2);
        }
        String scenario = args[0];
        connect = args[1];
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq < 0) {
                System.err.println("bad argument " + args[i]);
                System.exit(2);
            }
            opts.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        Handler h;
        switch (scenario) {
            case "s2": h = throughput(false); break;
            case "s3": h = new ReadWriteQueue(); break;
            case "s4": h = throughput(true); break;
            case "s5": h = s5(); break;
            case "s7": h = new Election(); break;
            default:
                System.err.println("unknown scenario " + scenario);
                System.exit(2);
                return;
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && !line.trim().equals("quit"); ) {
            String req = line.trim();
            System.out.println(req.equals("cpu") ? String.valueOf(cpuNs()) : h.handle(req));
            System.out.flush();
        }
        System.out.println("{\"scenario\":\"" + scenario + "\",\"java\":\"" + System.getProperty("java.version")
                + "\",\"curator\":\"" + curatorVersion() + "\",\"zkClient\":\""
                + org.apache.zookeeper.Version.getFullVersion().replace("\"", "'") + "\"}");
        System.out.flush();
        // close every session (in parallel: closing each waits for the server)
        List<Thread> closers = new ArrayList<>();
        for (CuratorFramework c : clients) {
            Thread t = new Thread(c::close);
            t.start();
            closers.add(t);
        }
        for (Thread t : closers) {
            t.join();
        }
        System.exit(0);
    }

    // cpuNs is the CPU time this JVM has used, in nanoseconds.
    static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    static long num(String key, long def) {
        String v = opts.get(key);
        return v == null ? def : Long.parseLong(v);
    }

    static String str(String key, String def) {
        String v = opts.get(key);
        return v == null ? def : v;
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

    // timed runs every worker's cycle in a loop on its own thread until
    // durationMs has passed, and returns the repetition's JSON object: the
    // nanoseconds of every cycle and the elapsed time.
    static String timed(List<Cycle> workers, long durationMs) throws Exception {
        List<long[]> lats = new ArrayList<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        long[] deadline = new long[1];
        for (Cycle w : workers) {
            LongStream.Builder lat = LongStream.builder();
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    for (long t0 = System.nanoTime(), t1; t0 < deadline[0]; t0 = t1) {
                        w.run();
                        t1 = System.nanoTime();
                        lat.add(t1 - t0);
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
                synchronized (lats) {
                    lats.add(lat.build().toArray());
                }
            });
            t.start();
            threads.add(t);
        }
        long t0 = System.nanoTime();
        deadline[0] = t0 + durationMs * 1_000_000L;
        start.countDown();
        for (Thread t : threads) {
            t.join();
        }
        long elapsed = System.nanoTime() - t0;
        if (failure.get() != null) {
            throw new RuntimeException(failure.get());
        }
        StringBuilder out = new StringBuilder("{\"elapsedNs\":").append(elapsed).append(",\"latNs\":[");
        long ops = 0;
        for (long[] lat : lats) {
            for (long x : lat) {
                out.append(ops++ == 0 ? "" : ",").append(x);
            }
        }
        return out.append("],\"ops\":").append(ops).append("}").toString();
    }

    // timedReps warms all workers up; each repetition, "rep" or "rep <n>",
    // runs all of them or the first n.
    static Handler timedReps(List<Cycle> workers) throws Exception {
        timed(workers, num("warmupMs", 3000));
        long durationMs = num("durationMs", 2000);
        return req -> {
            String arg = req.substring("rep".length()).trim();
            int n = arg.isEmpty() ? workers.size() : Integer.parseInt(arg);
            if (n < 1 || n > workers.size()) {
                throw new IllegalArgumentException(req + ": there are " + workers.size() + " workers");
            }
            return timed(workers.subList(0, n), durationMs);
        };
    }

    // s2 (semaphore=false): clients sessions, one mutex each on the same
    // path. s4 (semaphore=true): clients sessions, an InterProcessSemaphoreV2
    // with leases leases each on the same path.
    static Handler throughput(boolean semaphore) throws Exception {
        String path = str("path", "/gocurator-bench/curator/s2");
        int n = (int) num("clients", 8);
        int leases = (int) num("leases", 3);
        List<Cycle> workers = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            CuratorFramework c = newClient();
            if (semaphore) {
                InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, path, leases);
                workers.add(() -> {
                    Lease l = s.acquire();
                    s.returnLease(l);
                });
            } else {
                InterProcessMutex m = new InterProcessMutex(c, path);
                workers.add(() -> {
                    m.acquire();
                    m.release();
                });
            }
        }
        return timedReps(workers);
    }

    // s5: one client, threads threads, each acquiring and releasing a lock
    // chosen at random among paths paths.
    static Handler s5() throws Exception {
        String path = str("path", "/gocurator-bench/curator/s5");
        int threads = (int) num("threads", 16);
        int paths = (int) num("paths", 200);
        CuratorFramework c = newClient();
        InterProcessMutex[] locks = new InterProcessMutex[paths];
        for (int i = 0; i < paths; i++) {
            locks[i] = new InterProcessMutex(c, path + "/l" + i);
        }
        List<Cycle> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            workers.add(() -> {
                InterProcessMutex m = locks[ThreadLocalRandom.current().nextInt(paths)];
                m.acquire();
                m.release();
            });
        }
        return timedReps(workers);
    }

    // ReadWriteQueue is s3: a queue W R..R W R..R ... (group readers after
    // each writer, readers readers in all), every participant with its own
    // session and thread. "form" forms the queue on a new path, in order,
    // while the first writer holds, and answers "formed" once every
    // participant's node exists. "drain" makes the first writer release,
    // waits until every participant has acquired and released (each as soon
    // as it acquires), and 100 ms more for background work to reach the
    // server, and answers the nanoseconds from the release until the last
    // participant had released.
    static final class ReadWriteQueue implements Handler {
        final String path = str("path", "/gocurator-bench/curator/s3");
        final List<Boolean> isWriter = new ArrayList<>();
        final List<CuratorFramework> cs = new ArrayList<>();
        final CuratorFramework admin;
        int reps;
        CountDownLatch go;
        CountDownLatch done;
        AtomicReference<Throwable> failure;
        List<Thread> threads;

        ReadWriteQueue() throws Exception {
            int readers = (int) num("readers", 50);
            int group = (int) num("group", 3);
            for (int r = 0; r < readers; ) {
                isWriter.add(true);
                for (int g = 0; g < group && r < readers; g++, r++) {
                    isWriter.add(false);
                }
            }
            for (int i = 0; i < isWriter.size(); i++) {
                cs.add(newClient());
            }
            admin = newClient();
        }

        public String handle(String req) throws Exception {
            switch (req) {
                case "form": return form();
                case "drain": return drain();
                default: throw new IllegalArgumentException("s3: " + req);
            }
        }

        String form() throws Exception {
            String p = path + "/r" + reps++;
            int n = isWriter.size();
            CountDownLatch firstHeld = new CountDownLatch(1);
            go = new CountDownLatch(1);
            done = new CountDownLatch(n);
            failure = new AtomicReference<>();
            threads = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                InterProcessReadWriteLock rw = new InterProcessReadWriteLock(cs.get(i), p);
                InterProcessLock l = isWriter.get(i) ? rw.writeLock() : rw.readLock();
                boolean first = i == 0;
                Thread t = new Thread(() -> {
                    try {
                        l.acquire();
                        if (first) {
                            firstHeld.countDown();
                            go.await();
                        }
                        l.release();
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    } finally {
                        done.countDown();
                    }
                });
                t.start();
                threads.add(t);
                if (first) {
                    if (!firstHeld.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("the first writer did not acquire", failure.get());
                    }
                    continue;
                }
                // the next participant queues only once this one's node exists
                long until = System.nanoTime() + 30_000_000_000L;
                while (admin.getChildren().forPath(p).size() < i + 1) {
                    if (System.nanoTime() > until || failure.get() != null) {
                        throw new IllegalStateException("participant " + i + " did not queue", failure.get());
                    }
                    Thread.sleep(2);
                }
            }
            return "formed";
        }

        String drain() throws Exception {
            long t0 = System.nanoTime();
            go.countDown();
            if (!done.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the queue did not drain");
            }
            long drain = System.nanoTime() - t0;
            Thread.sleep(100); // let background work (watch removal) reach the server
            for (Thread t : threads) {
                t.join();
            }
            if (failure.get() != null) {
                throw new RuntimeException(failure.get());
            }
            return String.valueOf(drain);
        }
    }

    // Candidate is a LeaderLatch on a client, and when it learned it leads.
    static final class Candidate {
        final CuratorFramework client;
        final LeaderLatch latch;
        final CountDownLatch led = new CountDownLatch(1);
        volatile long ledAt;

        Candidate(CuratorFramework client, String path) throws Exception {
            this.client = client;
            latch = new LeaderLatch(client, path);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {
                    ledAt = System.nanoTime();
                    led.countDown();
                }

                @Override
                public void notLeader() {
                }
            });
            latch.start();
        }

        void awaitLed() throws Exception {
            if (!led.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("no candidate led within 30 s");
            }
        }
    }

    // Election is s7: two candidates of one LeaderLatch election, each on
    // its own session, a leader and a follower. "leader" answers the
    // leader's node path. "handoff close" and "handoff session" make the
    // leader leave, by closing its latch or its client (which ends its
    // session), and the follower take over; the one that left joins again
    // (after a session end, on a new client). They answer the nanoseconds
    // from just before the close until the follower's
    // LeaderLatchListener.isLeader was called, and the new leader's node
    // path. The Go side waits until the follower watches that node before
    // the next hand-off.
    static final class Election implements Handler {
        final String path = str("path", "/gocurator-bench/curator/s7");
        Candidate leader;
        Candidate follower;

        Election() throws Exception {
            leader = new Candidate(newClient(), path);
            leader.awaitLed();
            follower = new Candidate(newClient(), path);
        }

        public String handle(String req) throws Exception {
            switch (req) {
                case "leader": return leader.latch.getOurPath();
                case "handoff close": return handoff(false) + " " + leader.latch.getOurPath();
                case "handoff session": return handoff(true) + " " + leader.latch.getOurPath();
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
            next.awaitLed();
            long took = next.ledAt - t0;
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
}
