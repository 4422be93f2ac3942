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
// The JVM sets the scenario up (sessions, locks), warms up (JIT) by running
// it for warmupMs on the same clients, and prints "ready". Then, for every
// line "rep" on stdin, it runs one measured repetition and prints its result
// as one JSON line ("rep <n>" in s2 and s4: with the first n sessions only); on "quit" (or end of input) it prints a last JSON line
// with its versions, closes its sessions and exits. The Go side asks for each
// repetition when its turn comes, so that repetitions of the Go and Java
// implementations alternate on the same server and none runs alongside
// another.
//
// Scenarios and their keys (all take path=<base path> warmupMs=<ms>):
//
//     s1  uncontended mutex, one client    ops=<acquire+release cycles per rep>
//         -> {"latNs":[...],"packets":n}
//     s2  one hot mutex                    clients=<n> durationMs=<ms>  -> {"ops":n,"elapsedNs":t}
//         (clients is the most sessions a repetition asks for: "rep 4" runs 4)
//     s3  read-write lock, W R R R W ...   readers=<n> group=<readers per writer>
//         -> {"packets":n,"drainNs":t,"acquisitions":n,"participants":n,"writers":n}
//     s4  semaphore                        clients=<n> leases=<n> durationMs=<ms>  -> {"ops":n,"elapsedNs":t}
//     s5  many lock paths, one client      threads=<n> paths=<n> durationMs=<ms>   -> {"ops":n,"elapsedNs":t}
//     s7  leader hand-off, two candidates  handoffs=<n per kind>
//         -> {"latNs":[...after the leader's close],"sessionLatNs":[...after its session's end]}
//
// Server counters come from the four-letter word "mntr" of the first server
// in the connect string.

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

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

    // A scenario, set up and warmed up: each call runs one measured
    // repetition and returns its JSON object. arg is what followed "rep" on
    // its line ("" for none).
    interface Rep {
        String run(String arg) throws Exception;
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
        Rep rep;
        switch (scenario) {
            case "s1": rep = s1(); break;
            case "s2": rep = throughput(false); break;
            case "s3": rep = s3(); break;
            case "s4": rep = throughput(true); break;
            case "s5": rep = s5(); break;
            case "s7": rep = s7(); break;
            default:
                System.err.println("unknown scenario " + scenario);
                System.exit(2);
                return;
        }
        System.out.println("ready");
        System.out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line; (line = in.readLine()) != null && !line.trim().equals("quit"); ) {
            String l = line.trim();
            if (l.equals("rep") || l.startsWith("rep ")) {
                System.out.println(rep.run(l.substring(3).trim()));
                System.out.flush();
            }
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

    // mntr returns the first server's "mntr" answer as a map.
    static Map<String, String> mntr() throws Exception {
        Map<String, String> m = new HashMap<>();
        for (String line : fourLetter("mntr").split("\n")) {
            int tab = line.indexOf('\t');
            if (tab > 0) {
                m.put(line.substring(0, tab).trim(), line.substring(tab + 1).trim());
            }
        }
        return m;
    }

    // fourLetter returns the first server's answer to a four-letter word.
    static String fourLetter(String cmd) throws Exception {
        String first = connect.split(",")[0];
        int slash = first.indexOf('/');
        if (slash >= 0) {
            first = first.substring(0, slash);
        }
        int colon = first.lastIndexOf(':');
        String host = colon < 0 ? first : first.substring(0, colon);
        int port = colon < 0 ? 2181 : Integer.parseInt(first.substring(colon + 1));
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(host, port), 5000);
            s.setSoTimeout(5000);
            OutputStream o = s.getOutputStream();
            o.write(cmd.getBytes(StandardCharsets.US_ASCII));
            o.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream buf = new ByteArrayOutputStream();
            byte[] b = new byte[4096];
            for (int n; (n = in.read(b)) > 0; ) {
                buf.write(b, 0, n);
            }
            return buf.toString(StandardCharsets.US_ASCII);
        }
    }

    static long counter(String key) throws Exception {
        String v = mntr().get(key);
        if (v == null) {
            throw new IllegalStateException("mntr has no " + key);
        }
        return Long.parseLong(v);
    }

    // s1: one client, one mutex, acquire + release in a loop: the latency of
    // each cycle in nanoseconds, and the server packets sent meanwhile.
    static Rep s1() throws Exception {
        String path = str("path", "/gocurator-bench/curator/s1");
        long warmupMs = num("warmupMs", 3000);
        int ops = (int) num("ops", 1000);
        CuratorFramework c = newClient();
        InterProcessMutex m = new InterProcessMutex(c, path);
        long until = System.nanoTime() + warmupMs * 1_000_000L;
        while (System.nanoTime() < until) {
            m.acquire();
            m.release();
        }
        return arg -> {
            long[] lat = new long[ops];
            long before = counter("zk_packets_sent");
            for (int i = 0; i < ops; i++) {
                long t = System.nanoTime();
                m.acquire();
                m.release();
                lat[i] = System.nanoTime() - t;
            }
            long after = counter("zk_packets_sent");
            StringBuilder out = new StringBuilder("{\"packets\":").append(after - before).append(",\"latNs\":[");
            for (int i = 0; i < ops; i++) {
                out.append(i == 0 ? "" : ",").append(lat[i]);
            }
            return out.append("]}").toString();
        };
    }

    interface Cycle {
        void run() throws Exception;
    }

    // timed runs every worker's cycle in a loop on its own thread until
    // durationMs has passed, and returns {cycles, elapsed ns}.
    static long[] timed(List<Cycle> workers, long durationMs) throws Exception {
        AtomicLong count = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        long[] deadline = new long[1];
        for (Cycle w : workers) {
            Thread t = new Thread(() -> {
                try {
                    start.await();
                    long n = 0;
                    while (System.nanoTime() < deadline[0]) {
                        w.run();
                        n++;
                    }
                    count.addAndGet(n);
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
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
        return new long[] {count.get(), elapsed};
    }

    // timedReps warms all workers up; each repetition runs the first n of
    // them ("rep n"), or all.
    static Rep timedReps(List<Cycle> workers) throws Exception {
        timed(workers, num("warmupMs", 3000));
        long durationMs = num("durationMs", 2000);
        return arg -> {
            int n = arg.isEmpty() ? workers.size() : Integer.parseInt(arg);
            if (n < 1 || n > workers.size()) {
                throw new IllegalArgumentException("rep " + n + ": there are " + workers.size() + " workers");
            }
            long[] res = timed(workers.subList(0, n), durationMs);
            return "{\"ops\":" + res[0] + ",\"elapsedNs\":" + res[1] + "}";
        };
    }

    // s2 (semaphore=false): clients sessions, one mutex each on the same
    // path. s4 (semaphore=true): clients sessions, an InterProcessSemaphoreV2
    // with leases leases each on the same path.
    static Rep throughput(boolean semaphore) throws Exception {
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
    static Rep s5() throws Exception {
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

    // s3: a queue W R..R W R..R ... (group readers after each writer, readers
    // readers in all), every participant with its own session. The first
    // writer holds while the queue forms, in order; once every waiter has set
    // its watch, the first writer releases and the queue drains, each
    // participant releasing as soon as it acquires. Measured: server packets
    // sent and wall time from the first release until the last participant
    // has released. One unmeasured repetition warms up.
    static Rep s3() throws Exception {
        String path = str("path", "/gocurator-bench/curator/s3");
        int readers = (int) num("readers", 50);
        int group = (int) num("group", 3);
        List<Boolean> isWriter = new ArrayList<>();
        int writers = 0;
        for (int r = 0; r < readers; ) {
            isWriter.add(true);
            writers++;
            for (int g = 0; g < group && r < readers; g++, r++) {
                isWriter.add(false);
            }
        }
        int n = isWriter.size();
        int w = writers;
        List<CuratorFramework> cs = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            cs.add(newClient());
        }
        CuratorFramework admin = newClient();
        s3rep(cs, admin, isWriter, path + "/r0");
        int[] rep = {0};
        return arg -> {
            rep[0]++;
            long[] res = s3rep(cs, admin, isWriter, path + "/r" + rep[0]);
            return "{\"packets\":" + res[0] + ",\"drainNs\":" + res[1] + ",\"acquisitions\":" + (n - 1)
                    + ",\"participants\":" + n + ",\"writers\":" + w + "}";
        };
    }

    static long[] s3rep(List<CuratorFramework> cs, CuratorFramework admin, List<Boolean> isWriter, String path)
            throws Exception {
        int n = isWriter.size();
        CountDownLatch firstHeld = new CountDownLatch(1);
        CountDownLatch go = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(n);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long watchBase = counter("zk_watch_count");
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            InterProcessReadWriteLock rw = new InterProcessReadWriteLock(cs.get(i), path);
            InterProcessLock l = isWriter.get(i) ? rw.writeLock() : rw.readLock();
            final int idx = i;
            Thread t = new Thread(() -> {
                try {
                    l.acquire();
                    if (idx == 0) {
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
            if (i == 0) {
                if (!firstHeld.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("first writer did not acquire");
                }
                continue;
            }
            long until = System.nanoTime() + 30_000_000_000L;
            while (childCount(admin, path) < i + 1) {
                if (System.nanoTime() > until || failure.get() != null) {
                    throw new IllegalStateException("participant " + i + " did not queue", failure.get());
                }
                Thread.sleep(2);
            }
        }
        long until = System.nanoTime() + 30_000_000_000L;
        while (counter("zk_watch_count") - watchBase < n - 1) {
            if (System.nanoTime() > until) {
                throw new IllegalStateException("waiters did not set their watches");
            }
            Thread.sleep(2);
        }
        long before = counter("zk_packets_sent");
        long t0 = System.nanoTime();
        go.countDown();
        if (!done.await(60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("queue did not drain");
        }
        long drain = System.nanoTime() - t0;
        Thread.sleep(100); // let background work (watch removal) reach the server
        long after = counter("zk_packets_sent");
        for (Thread t : threads) {
            t.join();
        }
        if (failure.get() != null) {
            throw new RuntimeException(failure.get());
        }
        return new long[] {after - before, drain};
    }

    static int childCount(CuratorFramework admin, String path) throws Exception {
        try {
            return admin.getChildren().forPath(path).size();
        } catch (org.apache.zookeeper.KeeperException.NoNodeException e) {
            return 0;
        }
    }

    // s7: two candidates of one LeaderLatch election, each on its own
    // session. Each hand-off makes the leader leave, by closing its latch or
    // by closing its client (which ends its session), and times from just
    // before that until the other candidate's LeaderLatchListener.isLeader
    // is called; the one that left then joins again (after a session end,
    // on a new client) and the next hand-off waits until the server shows
    // its watch on the new leader's node (wchp). A repetition is handoffs
    // hand-offs of each kind, alternating.
    static Rep s7() throws Exception {
        String path = str("path", "/gocurator-bench/curator/s7");
        long warmupMs = num("warmupMs", 3000);
        int handoffs = (int) num("handoffs", 200);
        Election el = new Election(path);
        long until = System.nanoTime() + warmupMs * 1_000_000L;
        while (System.nanoTime() < until) {
            el.handoff(false);
            el.handoff(true);
        }
        return arg -> {
            long[] closed = new long[handoffs];
            long[] ended = new long[handoffs];
            for (int i = 0; i < handoffs; i++) {
                closed[i] = el.handoff(false);
                ended[i] = el.handoff(true);
            }
            return "{\"latNs\":" + jsonArray(closed) + ",\"sessionLatNs\":" + jsonArray(ended) + "}";
        };
    }

    static String jsonArray(long[] xs) {
        StringBuilder out = new StringBuilder("[");
        for (int i = 0; i < xs.length; i++) {
            out.append(i == 0 ? "" : ",").append(xs[i]);
        }
        return out.append("]").toString();
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

    // Election is s7's two candidates: a leader and a follower that waits.
    static final class Election {
        final String path;
        Candidate leader;
        Candidate follower;

        Election(String path) throws Exception {
            this.path = path;
            leader = new Candidate(newClient(), path);
            leader.awaitLed();
            follower = new Candidate(newClient(), path);
            awaitWatched(leader.latch.getOurPath());
        }

        // handoff returns the nanoseconds from the leader's leaving until
        // the follower learned that it leads.
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
            awaitWatched(leader.latch.getOurPath());
            return took;
        }
    }

    // awaitWatched waits until some session watches path on the first server.
    static void awaitWatched(String path) throws Exception {
        long until = System.nanoTime() + 30_000_000_000L;
        while (true) {
            for (String line : fourLetter("wchp").split("\n")) {
                if (line.trim().equals(path)) {
                    return;
                }
            }
            if (System.nanoTime() > until) {
                throw new IllegalStateException("no watch on " + path + " within 30 s");
            }
            Thread.sleep(2);
        }
    }
}
