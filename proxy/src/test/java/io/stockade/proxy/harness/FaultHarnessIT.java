package io.stockade.proxy.harness;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BooleanSupplier;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;
import io.stockade.testing.NetNs;
import io.stockade.testing.PgCluster;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.ScratchFilesystem;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The project's own fault harness (issue 46, "Prove it"): writers with rising tokens and zombies write through the
 * proxy to storage that writes as it reads ({@code rclone serve webdav}, serialized class), while the harness cuts
 * the storage, the fence store (etcd, PostgreSQL) or the lock service (etcd, whose real locks the writers take and
 * the proxy's verifier asks) off the network (a network namespace of the test's own each, every packet dropped both
 * ways), or
 * fills the fence journal's disk (a tmpfs of the test's own), then heals each. After every heal a write must be
 * acknowledged again within settle + 5 s, without a restart. The history checker (conformance-checker) judges each
 * run from the writers' history and direct reads of the storage's files: no stale write landed, every acknowledged
 * write in storage, every "not written" answer (403, 409, 502, 503) true.
 * <p>
 * CI runs each of the four topologies for {@code stockade.harness.seconds} (default 4 s of faults; the class
 * takes about 50 s); longer on demand: {@code scripts/fault-harness.sh 600}. Not yet in it: read-only filesystems
 * (JournalHealIT), bodies cut off on their way to the storage.
 */
@RequiresTools({Tools.Tool.NETNS, Tools.Tool.RCLONE, Tools.Tool.SCRATCH_FILESYSTEM})
class FaultHarnessIT {
    /** The serialized class: settle is at least the timeout (policies/README.md, "timeout and settle"). */
    private static final Duration TIMEOUT = Duration.ofSeconds(1);
    private static final Duration SETTLE = Duration.ofSeconds(2);
    private static final List<String> SCOPES = List.of("r0", "r1", "r2");
    private static final int WRITERS = 4;
    /** The http backend's timeout and settle in every topology. */
    private static final String[] UPSTREAM_TIMES = {"timeout: " + TIMEOUT.toMillis() + "ms",
        "settle: " + SETTLE.toMillis() + "ms"};

    /** The one policy every topology serves, {@code /docs/{id}} over the storage at {@code storage}, on a store. */
    private static String docsOver(String store, String storage) {
        return TestPolicies.on(store).policy("docs", "/docs/{id}", "docs/{id}").http(storage, UPSTREAM_TIMES).yaml();
    }

    @TempDir
    Path dir;

    /** The memory store on a disk of its own; the storage cut off, the journal's disk full. */
    @Test
    void storageCutOffAndAFullJournalDisk() throws Exception {
        Path data = Files.createDirectories(dir.resolve("data/docs"));
        try (ScratchFilesystem journalDisk = ScratchFilesystem.tmpfs(dir.resolve("journal-fs"), 256 * 1024);
             NetNs storageNet = NetNs.create()) {
            String storage = startRclone(storageNet);
            String policy = docsOver("""
                    store:
                      type: memory
                      journal: ${JOURNAL}
                    """, storage);
            try (ProxyFixture proxy = ProxyFixture.start(journalDisk.path().resolve("journal"), policy, Map.of())) {
                run(proxy, data, List.of(cut("storage cut", storageNet), new Fault("journal disk full", run -> {
                    long before = run.storeUnavailable.sum();
                    journalDisk.fill();
                    // the journal fails when its next write needs a block: the writers get there soon
                    boolean took = run.await(() -> run.storeUnavailable.sum() > before, Duration.ofSeconds(5));
                    sleepBetween(300, 1000);
                    journalDisk.free();
                    return took ? "" : " (no write met it)";
                })));
            }
        }
    }

    /**
     * The etcd fence store in a namespace of its own (the serialized class on a shared store, one replica): the
     * proxy cut off its fence store, and off its storage. A store call that cannot be answered is a 503 with
     * nothing forwarded; a raise the store committed whose answer was lost only raises the fence.
     */
    @Test
    void fenceStoreCutOffAndStorageCutOff() throws Exception {
        Tools.require(Tools.Tool.ETCD);
        Path data = Files.createDirectories(dir.resolve("data/docs"));
        try (NetNs storageNet = NetNs.create(); NetNs storeNet = NetNs.create()) {
            String storage = startRclone(storageNet);
            String etcd = startEtcd(storeNet);
            String policy = docsOver("""
                    store:
                      type: etcd
                      endpoints: %s
                      prefix: /harness/
                      timeout: 1s
                    """.formatted(etcd), storage);
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy, Map.of())) {
                run(proxy, data, List.of(cut("storage cut", storageNet), cut("fence store cut", storeNet)));
            }
        }
    }

    /**
     * The postgres fence store (a private PostgreSQL cluster started in a namespace of its own, not CI's shared
     * server): the proxy cut off its fence store, and off its storage. A statement that cannot be answered is given
     * up on after the statement timeout plus 5 s (503, nothing forwarded); a raise that committed whose answer was
     * lost only raises the fence.
     */
    @Test
    void postgresFenceStoreCutOffAndStorageCutOff() throws Exception {
        Tools.require(Tools.Tool.POSTGRES_CLUSTER);
        Path data = Files.createDirectories(dir.resolve("data/docs"));
        try (NetNs storageNet = NetNs.create(); NetNs storeNet = NetNs.create();
             PgCluster pg = PgCluster.createIn(storeNet)) {
            String storage = startRclone(storageNet);
            String policy = docsOver("""
                    store:
                      type: postgres
                      datasource: {url: "%s", user: postgres, statement-timeout: 1s, connect-timeout: 1s}
                    """.formatted(pg.url()), storage);
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy, Map.of())) {
                run(proxy, data, List.of(cut("storage cut", storageNet), cut("fence store cut", storeNet)));
            }
        }
    }

    /**
     * The lock service (etcd, in a namespace of its own) the writers take real locks from, and the proxy's verifier
     * asks (kind etcd, no cache): the proxy cut off the lock service (503 verifier-unavailable, nothing forwarded;
     * the writers cannot take or keep locks either), and off its storage. Zombies pause past their lease's TTL: the
     * lock passes on, and their next write is refused (403 or 409).
     */
    @Test
    void lockServiceCutOffAndStorageCutOff() throws Exception {
        Tools.require(Tools.Tool.ETCD);
        Path data = Files.createDirectories(dir.resolve("data/docs"));
        try (NetNs storageNet = NetNs.create(); NetNs lockNet = NetNs.create()) {
            String storage = startRclone(storageNet);
            String etcd = startEtcd(lockNet);
            String policy = TestPolicies.memoryStore().policy("docs", "/docs/{id}", "docs/{id}")
                    .fence("verify: {kind: etcd, endpoints: \"" + etcd + "\", prefix: locks/, timeout: 1s,"
                            + " cache: {enabled: false}}")
                    .http(storage, UPSTREAM_TIMES)
                    .yaml();
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy, Map.of());
                 Leases locks = Leases.etcd(etcd, "locks/", Duration.ofSeconds(2), Duration.ofSeconds(2))) {
                run(proxy, data, List.of(cut("storage cut", storageNet), cut("lock service cut", lockNet)), locks,
                        Duration.ofMillis(3000));
            }
        }
    }

    /** A fault: injects, heals, and says how it went ("" when it took effect as meant). */
    private record Fault(String name, Injection injection) {
    }

    @FunctionalInterface
    private interface Injection {
        String injectAndHeal(Run run) throws Exception;
    }

    private static Fault cut(String name, NetNs net) {
        return new Fault(name, run -> {
            net.cut();
            sleepBetween(1200, 3000);
            net.heal();
            return "";
        });
    }

    /**
     * Runs the writers and the reader for the budget, injecting one of {@code faults} after another; after every
     * heal a write must be acknowledged again within settle + 5 s; at the end the checker judges the run.
     */
    private static void run(ProxyFixture proxy, Path data, List<Fault> faults) throws Exception {
        run(proxy, data, faults, Leases.counter(SCOPES), Duration.ofMillis(700));
    }

    private static void run(ProxyFixture proxy, Path data, List<Fault> faults, Leases leases, Duration zombiePause)
            throws Exception {
        long budget = Duration.ofSeconds(Long.getLong("stockade.harness.seconds", 4)).toNanos();
        Run run = new Run(proxy, data, leases, zombiePause);
        run.start();
        long end = System.nanoTime() + budget;
        List<String> done = new ArrayList<>();
        try {
            while (System.nanoTime() < end) {
                sleepBetween(300, 800);
                Fault fault = faults.get(ThreadLocalRandom.current().nextInt(faults.size()));
                String how = fault.injection().injectAndHeal(run);
                // Every fault heals without a restart: a write is acknowledged again within the quarantine (settle)
                // and the store's or the journal's retry, or the run fails (on main a full disk failed it for good).
                long healed = System.nanoTime();
                long acked = run.acknowledged.sum();
                boolean recovered = run.await(() -> run.acknowledged.sum() > acked,
                        SETTLE.plus(Duration.ofSeconds(5)));
                done.add(fault.name() + how + (recovered ? ", writes again after "
                        + (System.nanoTime() - healed) / 1_000_000 + " ms" : ", NO RECOVERY"));
                assertTrue(recovered, "no write was acknowledged within " + SETTLE.plusSeconds(5).toSeconds()
                        + " s of healing: " + done + "; answers so far: " + run.statuses);
            }
        } finally {
            run.stop();
        }
        // Whatever was answered with an unknown outcome may still land until its answer plus settle: wait that out.
        run.awaitSettled(SETTLE.plusMillis(500));
        Map<String, String> finals = new TreeMap<>();
        for (String s : SCOPES) {
            finals.put("docs/" + s, run.readWhole(s));
        }
        HistoryChecker.Result result = HistoryChecker.check(run.history, finals, null);
        String summary = "faults: " + done + "; answers: " + run.statuses
                + (run.noLease.sum() > 0 ? "; leases not had: " + run.noLease.sum() : "") + "; " + result;
        System.out.println("fault harness: " + summary);
        assertTrue(result.ok(), summary);
        // a cut met a write (504 unknown, 503 refused) or, with real locks, a writer that could not take a lock
        assertTrue(run.statuses.containsKey(504) || run.statuses.containsKey(503) || run.noLease.sum() > 0,
                "no fault took effect: " + summary);
    }

    /** {@code rclone serve webdav} over {@code dir/data} in {@code net}, answering; its URL. */
    private String startRclone(NetNs net) throws Exception {
        int port = FreePorts.next();
        net.start(dir.resolve("rclone.log"), "rclone", "serve", "webdav", dir.resolve("data").toString(), "--addr",
                net.address() + ":" + port);
        String url = "http://" + net.address() + ":" + port;
        awaitAnswer(url + "/", "rclone", dir.resolve("rclone.log"));
        return url;
    }

    /** Waits until {@code url} answers 200 (a server starting in its namespace), within 15 s. */
    private static void awaitAnswer(String url, String what, Path log) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
        String last = "no answer";
        while (System.nanoTime() < deadline) {
            try {
                Http.Response r = Http.get(URI.create(url));
                if (r.status() == 200) {
                    return;
                }
                last = r.status() + " " + r.body();
            } catch (IOException e) {
                last = e.toString(); // not up yet
            }
            Thread.sleep(100);
        }
        throw new AssertionError(what + " did not answer " + url + " in its namespace within 15 s (last: " + last
                + "): " + Files.readString(log));
    }

    /** One etcd member in {@code net}, healthy; its client URL. */
    private String startEtcd(NetNs net) throws Exception {
        int client = FreePorts.next();
        int peer = FreePorts.next();
        String url = "http://" + net.address() + ":" + client;
        String peerUrl = "http://127.0.0.1:" + peer;
        net.start(dir.resolve("etcd.log"), "etcd", "--name", "h", "--data-dir", dir.resolve("etcd").toString(),
                "--listen-client-urls", url, "--advertise-client-urls", url, "--listen-peer-urls", peerUrl,
                "--initial-advertise-peer-urls", peerUrl, "--initial-cluster", "h=" + peerUrl,
                "--initial-cluster-state", "new");
        awaitAnswer(url + "/health", "etcd", dir.resolve("etcd.log"));
        return url;
    }

    private static void sleepBetween(int fromMillis, int toMillis) throws InterruptedException {
        Thread.sleep(ThreadLocalRandom.current().nextInt(fromMillis, toMillis));
    }

    /** The writers, the reader of the storage's files, and what they recorded. */
    private static final class Run {
        final History history = new History();
        final Map<Integer, LongAdder> statuses = new ConcurrentHashMap<>();
        final LongAdder acknowledged = new LongAdder();
        final LongAdder storeUnavailable = new LongAdder();
        /** Leases the writers could not take (the lock service cut off, or contended past the wait). */
        final LongAdder noLease = new LongAdder();
        private final ProxyFixture proxy;
        private final Path data;
        private final Leases leases;
        /** The longest a zombie pauses between two writes of one lease. */
        private final Duration zombiePause;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final AtomicLong lastUnknownAt = new AtomicLong(System.nanoTime());
        private final ExecutorService pool = Executors.newFixedThreadPool(WRITERS + 1);
        private final List<Future<?>> tasks = new ArrayList<>();

        Run(ProxyFixture proxy, Path data, Leases leases, Duration zombiePause) {
            this.proxy = proxy;
            this.data = data;
            this.leases = leases;
            this.zombiePause = zombiePause;
        }

        void start() {
            for (int w = 0; w < WRITERS; w++) {
                int writer = w;
                tasks.add(pool.submit(() -> write(writer)));
            }
            tasks.add(pool.submit(this::read));
        }

        /** Polls {@code condition} every 10 ms until it holds (true) or {@code timeout} passed (false). */
        boolean await(BooleanSupplier condition, Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (!condition.getAsBoolean()) {
                if (System.nanoTime() > deadline) {
                    return false;
                }
                Thread.sleep(10);
            }
            return true;
        }

        /**
         * One writer: takes a lease on a resource (the next token), writes with it one to three times; one lease in
         * four it pauses between two writes (a zombie: the others take newer tokens meanwhile) and then writes on.
         */
        private Void write(int writer) throws InterruptedException {
            ThreadLocalRandom random = ThreadLocalRandom.current();
            int session = 0;
            while (!stop.get()) {
                String scope = SCOPES.get(random.nextInt(SCOPES.size()));
                Leases.Lease lease = leases.acquire(scope);
                if (lease == null) {
                    noLease.increment();
                    Thread.sleep(50);
                    continue;
                }
                long token = lease.token();
                String holder = "w" + writer + "s" + session++;
                boolean zombie = random.nextInt(4) == 0;
                int writes = random.nextInt(1, 4);
                for (int n = 0; n < writes && !stop.get(); n++) {
                    if (zombie && n == 1) {
                        // a pause the holder does not notice (GC, SIGSTOP): past its lease, if the lease expires
                        Thread.sleep(random.nextLong(zombiePause.toMillis() / 2, zombiePause.toMillis() + 1));
                    } else if (System.nanoTime() > lease.validUntilNanos()) {
                        break; // an honest holder stops at its point of no return
                    }
                    send(scope, holder, token, holder + "-t" + token + "-n" + n + ";");
                    Thread.sleep(10);
                }
                lease.release().run();
            }
            return null;
        }

        private void send(String scope, String holder, long token, String value) {
            History.Op op = history.invokeAt("docs/" + scope, holder, token, value, System.nanoTime());
            try {
                Http.Response r = Http.put(proxy.uri("/docs/" + scope), value,
                        Map.of("Fencing-Token", Long.toString(token)));
                int status = r.status();
                statuses.computeIfAbsent(status, k -> new LongAdder()).increment();
                if (status / 100 == 2) {
                    op.ok(status);
                    acknowledged.increment();
                } else if (status == 409 || status == 412 || status == 403 || status == 503 || status == 502) {
                    op.fail(status); // the proxy says nothing was written: the checker holds it to that
                    if (r.body().contains("store-unavailable")) {
                        storeUnavailable.increment();
                    }
                } else {
                    op.unknown("status " + status + ": " + r.body());
                    lastUnknownAt.set(System.nanoTime());
                }
            } catch (IOException | InterruptedException e) {
                op.unknown(e.toString());
                lastUnknownAt.set(System.nanoTime());
            }
        }

        /** Reads the storage's files directly, every 20 ms; a value not ending with ';' is one being written. */
        private Void read() throws InterruptedException {
            while (!stop.get()) {
                for (String s : SCOPES) {
                    long start = System.nanoTime();
                    String value = readWhole(s);
                    if (value != null) {
                        history.read("docs/" + s, start, System.nanoTime(), value);
                    }
                }
                Thread.sleep(20);
            }
            return null;
        }

        /** The file's whole value, or null when absent or caught mid-write. */
        String readWhole(String scope) {
            try {
                String v = Files.readString(data.resolve(scope), StandardCharsets.UTF_8);
                return v.endsWith(";") ? v : null;
            } catch (NoSuchFileException e) {
                return null;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        void stop() throws Exception {
            stop.set(true);
            for (Future<?> f : tasks) {
                f.get();
            }
            pool.shutdown();
        }

        /** Waits until {@code settle} has passed since the last answer whose outcome was unknown. */
        void awaitSettled(Duration settle) throws InterruptedException {
            long until = lastUnknownAt.get() + settle.toNanos();
            long left = until - System.nanoTime();
            if (left > 0) {
                Thread.sleep(left / 1_000_000 + 1);
            }
        }
    }
}
