package io.stockade.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;

import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ZooKeeper provider against a real ZooKeeper server (Curator's {@code TestingServer}, in process, on a free
 * loopback port, tickTime 200 ms so sessions of 0.4..4 s are allowed): the token is the lock node's czxid; a waiter
 * gets the lock when the holder releases; an expired session and a lost connection end the lease at once (not at
 * the next renewal); and a real proxy verifying against the same server refuses the holder whose session expired.
 */
class ZooKeeperLeaseIT {
    private static final Logger[] QUIET = {Logger.getLogger("org.apache.zookeeper"),
            Logger.getLogger("org.apache.curator")};

    static {
        for (Logger logger : QUIET) {
            logger.setLevel(Level.SEVERE);
        }
    }

    private static final Duration TTL = Duration.ofSeconds(3);

    private TestingServer zk;
    private final List<LeaseProvider> providers = new java.util.ArrayList<>();

    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        zk = new TestingServer(new InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true);
    }

    @AfterEach
    void stop() throws Exception {
        providers.forEach(LeaseProvider::close);
        zk.close();
    }

    private LeaseProvider provider(String holder) {
        LeaseProvider p = Leases.newBuilder().holderIdentity(holder).zookeeper(zk.getConnectString(), "/locks/");
        providers.add(p);
        return p;
    }

    private ZooKeeper observer() throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper client = new ZooKeeper(zk.getConnectString(), 4_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        assertTrue(connected.await(10, TimeUnit.SECONDS));
        return client;
    }

    /** The lock node of {@code lease}: its path, through the grant. */
    private static ZooKeeperLeaseService.Handle handle(Lease lease) {
        return (ZooKeeperLeaseService.Handle) ((WatchedLease) lease).grant().handle();
    }

    /** Ends the lease's session at the server, as an expiry does: the ensemble deletes its lock node at once. */
    private void expire(Lease lease) throws Exception {
        ZooKeeper victim = handle(lease).zk();
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper twin = new ZooKeeper(zk.getConnectString(), 4_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, victim.getSessionId(), victim.getSessionPasswd());
        try {
            assertTrue(connected.await(10, TimeUnit.SECONDS), "the twin connected");
        } finally {
            twin.close();
        }
    }

    private static void awaitLoss(Lease lease, CompletableFuture<LossReason> reported) throws Exception {
        LossReason reason = reported.get(TTL.toMillis() / 2, TimeUnit.MILLISECONDS); // well before a renewal
        assertTrue(reason == LossReason.CONNECTION_LOST || reason == LossReason.REVOKED, reason.toString());
        assertFalse(lease.isValid());
        assertThrows(LeaseLostException.class, () -> lease.checkpoint(Duration.ZERO));
    }

    private static CompletableFuture<LossReason> lossOf(Lease lease) {
        CompletableFuture<LossReason> reported = new CompletableFuture<>();
        lease.addListener((l, reason) -> reported.complete(reason));
        return reported;
    }

    @Test
    void theTokenIsTheLockNodesCzxidAndAWaiterGetsTheLockWhenTheHolderReleases() throws Exception {
        String name = "files/" + UUID.randomUUID();
        try (ZooKeeper observer = observer()) {
            Lease first = provider("w1").acquire(name, TTL, Duration.ofSeconds(5));
            String node = handle(first).path();
            assertTrue(node.startsWith("/locks/" + name + "/_c_") && node.matches(".*-lock-[0-9]{10}"), node);
            Stat stat = observer.exists(node, false);
            assertEquals(stat.getCzxid(), first.token());

            LeaseProvider second = provider("w2");
            assertThrows(TimeoutException.class, () -> second.acquire(name, TTL, Duration.ofMillis(300)));
            assertEquals(List.of(node.substring(node.lastIndexOf('/') + 1)),
                    observer.getChildren("/locks/" + name, false), "the waiter that gave up left no node");

            CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
                try {
                    return second.acquire(name, TTL, Duration.ofSeconds(10));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (observer.getChildren("/locks/" + name, false).size() < 2) {
                assertTrue(System.nanoTime() < deadline, "the waiter queued");
                Thread.onSpinWait();
            }
            assertFalse(waiting.isDone(), "the waiter waits while the first holds the lock");
            first.close();
            assertEquals(Optional.of(LossReason.RELEASED), first.lossReason());
            Lease next = waiting.get(10, TimeUnit.SECONDS);
            assertTrue(next.token() > first.token(), next.token() + " > " + first.token());
            assertNotNull(observer.exists(handle(next).path(), false));
            assertEquals(null, observer.exists(node, false), "released: the node is deleted");
            next.close();
        }
    }

    @Test
    void anExpiredSessionEndsTheLeaseAtOnce() throws Exception {
        Lease lease = provider("w1").acquire("files/expiring", TTL, Duration.ofSeconds(5));
        CompletableFuture<LossReason> reported = lossOf(lease);
        String node = handle(lease).path();
        expire(lease);
        awaitLoss(lease, reported);
        try (ZooKeeper observer = observer()) {
            assertEquals(null, observer.exists(node, false), "the ensemble deleted the node with the session");
        }
        Lease next = provider("w2").acquire("files/expiring", TTL, Duration.ofSeconds(5));
        assertTrue(next.token() > lease.token());
    }

    @Test
    void aLostConnectionEndsTheLeaseAtOnceBeforeTheSessionCouldExpire() throws Exception {
        Lease lease = provider("w1").acquire("files/suspended", TTL, Duration.ofSeconds(5));
        CompletableFuture<LossReason> reported = lossOf(lease);
        long before = System.nanoTime();
        zk.stop();
        awaitLoss(lease, reported);
        assertEquals(Optional.of(LossReason.CONNECTION_LOST), lease.lossReason());
        assertTrue(System.nanoTime() - before < TTL.toNanos(), "reported within the ttl");
    }

    @Test
    void aTtlTheServersDoNotAllowIsRefusedAndABadPrefixOrNameIsAClearError() {
        // tickTime 200 ms: sessions of at most 4 s; a longer ttl would outlive the ephemeral node
        IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                () -> provider("w1").acquire("files/long", Duration.ofSeconds(30), Duration.ofSeconds(5)));
        assertTrue(tooLong.getMessage().contains("shorter than the lease ttl"), tooLong.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Leases.newBuilder().zookeeper(zk.getConnectString(), "locks/"));
        assertThrows(IllegalArgumentException.class,
                () -> Leases.newBuilder().zookeeper("zk:2181/chroot", "/locks/"));
        IllegalArgumentException badName = assertThrows(IllegalArgumentException.class,
                () -> provider("w1").acquire("files//x", TTL, Duration.ofSeconds(5)));
        assertTrue(badName.getMessage().contains("is not a ZooKeeper path"), badName.getMessage());
    }

    /**
     * A real proxy (a child JVM) verifying against the same ZooKeeper: the holder writes; once its session expired
     * its write is refused (403: its node is gone) and nothing reaches the storage; a new holder writes; the old
     * token is then stale (409). The proxy runs with the default verdict cache: ZooKeeper reports no time left for
     * a session, so the holder's remembered verdict lasts at most 1 s (policies/README.md, {@code cache}) after the
     * lookup its first write made; the zombie is refused from then on.
     */
    @Test
    void aHolderWhoseSessionExpiredIsRefusedByARealProxy() throws Exception {
        String name = "z-" + UUID.randomUUID();
        Path stored = dir.resolve("files").resolve("files").resolve(name);
        try (Children.Proxy proxy = new Children.Proxy(dir, "{kind: zookeeper, servers: \"" + zk.getConnectString()
                + "\", prefix: /locks/}")) {
            HttpClient http = HttpClient.newHttpClient();
            URI file = URI.create(proxy.base + "/files/" + name);
            Lease old = provider("w1").acquire("files/" + name, TTL, Duration.ofSeconds(5));
            assertEquals(201, put(http, file, "old", old.token()).statusCode());
            long windowEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(1); // the lookup was sent before this
            assertEquals("old", Files.readString(stored));

            CompletableFuture<LossReason> reported = lossOf(old);
            expire(old);
            awaitLoss(old, reported);
            while (System.nanoTime() - windowEnd < 0) { // the documented window of a remembered verdict
                Thread.sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(windowEnd - System.nanoTime())));
            }
            HttpResponse<String> zombie = put(http, file, "zombie", old.token());
            assertEquals(403, zombie.statusCode(), zombie.body());
            assertTrue(zombie.body().contains("nobody holds the ZooKeeper lock"), zombie.body());
            assertEquals("old", Files.readString(stored), "nothing reached the storage");

            try (Lease next = provider("w2").acquire("files/" + name, TTL, Duration.ofSeconds(5))) {
                HttpResponse<String> w = FencedHttpClient.of(http, next, Duration.ofSeconds(1)).send(
                        HttpRequest.newBuilder(file).PUT(HttpRequest.BodyPublishers.ofString("new")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(204, w.statusCode(), w.body());
                HttpResponse<String> stale = put(http, file, "zombie", old.token());
                assertEquals(409, stale.statusCode(), stale.body());
                assertEquals("new", Files.readString(stored));
            }
        }
    }

    private static HttpResponse<String> put(HttpClient http, URI uri, String body, long token) throws Exception {
        return http.send(HttpRequest.newBuilder(uri).header("Fencing-Token", Long.toString(token))
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
