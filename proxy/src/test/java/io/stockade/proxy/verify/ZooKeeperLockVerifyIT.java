package io.stockade.proxy.verify;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.verify.cache.RememberingVerifier;
import io.stockade.testing.Http;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.stockade.proxy.VerifiedFiles.mentions;
import static io.stockade.proxy.VerifiedFiles.put;
import static io.stockade.proxy.VerifiedFiles.start;
import static io.stockade.proxy.VerifiedFiles.stored;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify: {kind: zookeeper}} against a real ZooKeeper server (Curator's {@code TestingServer}, in
 * process, on a free loopback port) whose locks are taken with Curator's own {@code InterProcessMutex} recipe: the
 * holder's token (its node's czxid) writes; an invented token, the token of a holder whose session expired and a
 * token for a lock nobody holds are refused (403); a ZooKeeper that is down refuses the write (503). Every refusal
 * checks that nothing reached the storage.
 */
class ZooKeeperLockVerifyIT {
    /** ZooKeeper and Curator log every connection and session at INFO; kept here so the levels stick. */
    private static final Logger[] QUIET = {Logger.getLogger("org.apache.zookeeper"),
            Logger.getLogger("org.apache.curator")};

    static {
        for (Logger logger : QUIET) {
            logger.setLevel(Level.SEVERE);
        }
    }

    @TempDir
    Path dir;

    private ProxyFixture startProxy(String verify, TestingServer zk) throws Exception {
        return start(dir, verify, Map.of("ZK", zk.getConnectString()));
    }

    private static CuratorFramework curator(TestingServer zk) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(zk.getConnectString())
                .sessionTimeoutMs(10_000)
                .connectionTimeoutMs(5_000)
                .retryPolicy(new RetryOneTime(100))
                .build();
        client.start();
        assertTrue(client.blockUntilConnected(10, TimeUnit.SECONDS), "Curator connected");
        return client;
    }

    /** The token of the lock node {@code client}'s session owns under {@code lockPath}: its czxid. */
    static long token(CuratorFramework client, String lockPath) throws Exception {
        long session = client.getZookeeperClient().getZooKeeper().getSessionId();
        for (String child : client.getChildren().forPath(lockPath)) {
            Stat stat = client.checkExists().forPath(lockPath + "/" + child);
            if (stat != null && stat.getEphemeralOwner() == session) {
                return stat.getCzxid();
            }
        }
        throw new AssertionError("no lock node of session " + Long.toHexString(session) + " under " + lockPath);
    }

    /** Ends {@code client}'s session at the server (as an expiry does): its ephemeral lock node goes at once. */
    private static void expire(TestingServer zk, CuratorFramework client) throws Exception {
        ZooKeeper victim = client.getZookeeperClient().getZooKeeper();
        long session = victim.getSessionId();
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper twin = new ZooKeeper(zk.getConnectString(), 10_000, event -> {
            if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        }, session, victim.getSessionPasswd());
        try {
            assertTrue(connected.await(10, TimeUnit.SECONDS), "the twin connected");
        } finally {
            twin.close(); // closes the session: the server deletes its ephemeral nodes
        }
        // gone when a fresh session no longer sees any node of the old one
        try (CuratorFramework observer = curator(zk)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (ownsNodes(observer, "/", session)) {
                assertTrue(System.nanoTime() < deadline, "session " + Long.toHexString(session) + " ended");
                Thread.onSpinWait();
            }
        }
    }

    private static boolean ownsNodes(CuratorFramework client, String path, long session) throws Exception {
        List<String> children;
        try {
            children = client.getChildren().forPath(path);
        } catch (KeeperException.NoNodeException gone) {
            return false;
        }
        for (String child : children) {
            String full = (path.endsWith("/") ? path : path + "/") + child;
            Stat stat = client.checkExists().forPath(full);
            if (stat != null && (stat.getEphemeralOwner() == session || ownsNodes(client, full, session))) {
                return true;
            }
        }
        return false;
    }

    @Test
    void theHoldersTokenWritesAnInventedOneOrOneForALockNobodyHoldsIsRefused() throws Exception {
        try (TestingServer zk = new TestingServer(true);
             CuratorFramework w1 = curator(zk);
             ProxyFixture proxy = startProxy("kind: zookeeper\nservers: ${ZK}\nprefix: /locks/", zk)) {
            InterProcessMutex mutex = new InterProcessMutex(w1, "/locks/files/a");
            assertTrue(mutex.acquire(10, TimeUnit.SECONDS));
            long token = token(w1, "/locks/files/a");

            Http.Response inflated = put(proxy, "a", "evil", Long.MAX_VALUE);
            assertEquals(403, inflated.status(), inflated.body());
            assertTrue(inflated.body().contains("unverified-token"), inflated.body());
            assertTrue(inflated.body().contains("not the token of the holder of the ZooKeeper lock '/locks/files/a'"),
                    inflated.body());
            assertFalse(mentions(inflated.body(), token), "the 403 gives the holder's token away: " + inflated.body());
            assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
            assertEquals(Optional.empty(), stored(dir, "a"));
            Http.Response nextZxid = put(proxy, "a", "evil", token + 1);
            assertEquals(403, nextZxid.status(), nextZxid.body());
            // the holder's token for another scope, whose lock path does not exist
            Http.Response nobody = put(proxy, "b", "evil", token);
            assertEquals(403, nobody.status(), nobody.body());
            assertTrue(nobody.body().contains("nobody holds the ZooKeeper lock '/locks/files/b'"), nobody.body());
            assertEquals(Optional.empty(), stored(dir, "b"));
            assertEquals(Optional.empty(), stored(dir, "a"));

            assertEquals(201, put(proxy, "a", "v", token).status());
            assertEquals(Optional.of("v"), stored(dir, "a"));
            assertEquals(3, proxy.counted("files", Outcome.UNVERIFIED, 3));

            mutex.release(); // the lock path stays, empty: nobody holds it
            Http.Response released = put(proxy, "a", "after release", token + 1);
            assertEquals(403, released.status(), released.body());
            assertTrue(released.body().contains("nobody holds the ZooKeeper lock '/locks/files/a'"), released.body());
            assertEquals(Optional.of("v"), stored(dir, "a"));
        }
    }

    /**
     * A handoff: the first holder's session expires (ended at the server), its lock node goes, and the contender
     * queued behind it holds the lock. The old token is refused (403) while the new holder has not written, stale
     * (409) after; a queued contender's own token is refused while it waits. With the default cache: ZooKeeper
     * reports no time left for a session, so the old holder's remembered verdict lasts at most the cache's bound
     * (1 s) after the lookup that made it, and the zombie is refused from then on.
     */
    @Test
    void anOldHoldersTokenIsRefusedAfterItsSessionExpired() throws Exception {
        try (TestingServer zk = new TestingServer(true);
             CuratorFramework w1 = curator(zk);
             CuratorFramework w2 = curator(zk);
             ProxyFixture proxy = startProxy("kind: zookeeper\nservers: ${ZK}", zk)) {
            InterProcessMutex first = new InterProcessMutex(w1, "/files/a");
            assertTrue(first.acquire(10, TimeUnit.SECONDS));
            long old = token(w1, "/files/a");
            assertEquals(201, put(proxy, "a", "old", old).status());
            // the proxy's lookup was sent before this: its remembered verdict has ended by windowEnd
            long windowEnd = System.nanoTime() + RememberingVerifier.UNKNOWN_BOUND.toNanos();

            InterProcessMutex second = new InterProcessMutex(w2, "/files/a");
            CompletableFuture<Boolean> taken = CompletableFuture.supplyAsync(() -> {
                try {
                    return second.acquire(20, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (w2.getChildren().forPath("/files/a").size() < 2) {
                assertTrue(System.nanoTime() < deadline, "the second contender queued");
                Thread.onSpinWait();
            }
            long queued = token(w2, "/files/a");
            assertTrue(queued > old);
            Http.Response early = put(proxy, "a", "early", queued);
            assertEquals(403, early.status(), "a queued contender does not hold the lock: " + early.body());
            assertEquals(Optional.of("old"), stored(dir, "a"));

            expire(zk, w1);
            assertTrue(taken.get(20, TimeUnit.SECONDS), "the second contender took the lock");
            assertEquals(queued, token(w2, "/files/a"));

            while (System.nanoTime() - windowEnd < 0) { // the documented window: the remembered verdict's bound
                Thread.sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(windowEnd - System.nanoTime())));
            }
            Http.Response stale = put(proxy, "a", "zombie", old);
            assertEquals(403, stale.status(), stale.body());
            assertTrue(stale.body().contains("not the token of the holder of the ZooKeeper lock '/files/a'"),
                    stale.body());
            assertEquals(Optional.of("old"), stored(dir, "a"));
            assertEquals(204, put(proxy, "a", "new", queued).status());
            assertEquals(409, put(proxy, "a", "zombie", old).status(), "stale once the newer holder wrote");
            assertEquals(Optional.of("new"), stored(dir, "a"));
        }
    }

    /**
     * Curator's recipe sorts children by the sequence number after their last {@code lock-}, whatever comes
     * before it (its protected mode's {@code _c_<uuid>-} prefix): the verifier's holder is the recipe's. A child
     * that is not a lock node and sorts first (here a nested lock's path) leaves the lock without a holder.
     */
    @Test
    void theHolderIsTheRecipesAndANestedLockFirstMeansNobodyHoldsIt() throws Exception {
        try (TestingServer zk = new TestingServer(true);
             CuratorFramework w1 = curator(zk);
             ProxyFixture proxy = startProxy("kind: zookeeper\nservers: ${ZK}", zk)) {
            // two contenders whose names sort one way as text and the other way by sequence number
            w1.create().creatingParentsIfNeeded().forPath("/files/a");
            String earlier = w1.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                    .forPath("/files/a/_c_ffffffff-ffff-ffff-ffff-ffffffffffff-lock-");
            String later = w1.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                    .forPath("/files/a/_c_00000000-0000-0000-0000-000000000000-lock-");
            assertTrue(later.compareTo(earlier) < 0);
            assertEquals(earlier, new InterProcessMutex(w1, "/files/a").getParticipantNodes().iterator().next(),
                    "the recipe's holder");
            long laterToken = w1.checkExists().forPath(later).getCzxid();
            Http.Response queued = put(proxy, "a", "v", laterToken);
            assertEquals(403, queued.status(), queued.body());
            assertEquals(Optional.empty(), stored(dir, "a"));
            assertEquals(201, put(proxy, "a", "v", w1.checkExists().forPath(earlier).getCzxid()).status());

            // a nested lock's path under files/b, and no lock node: the nested child blocks the recipe
            w1.create().creatingParentsIfNeeded().forPath("/files/b/!nested");
            String b = w1.create().withMode(CreateMode.EPHEMERAL_SEQUENTIAL).forPath("/files/b/lock-");
            Http.Response r = put(proxy, "b", "v", w1.checkExists().forPath(b).getCzxid());
            assertEquals(403, r.status(), r.body());
            assertTrue(r.body().contains("is not a lock node"), r.body());
            assertEquals(Optional.empty(), stored(dir, "b"));
        }
    }

    @Test
    void zooKeeperDownIs503WithinTheTimeoutAndNothingIsWrittenThenItAnswersAgain() throws Exception {
        try (TestingServer zk = new TestingServer(true);
             CuratorFramework w1 = curator(zk);
             ProxyFixture proxy = startProxy("kind: zookeeper\nservers: ${ZK}\ntimeout: 500ms\ncache: {ttl: 1m}", zk)) {
            InterProcessMutex a = new InterProcessMutex(w1, "/files/a");
            InterProcessMutex b = new InterProcessMutex(w1, "/files/b");
            assertTrue(a.acquire(10, TimeUnit.SECONDS));
            assertTrue(b.acquire(10, TimeUnit.SECONDS));
            long tokenA = token(w1, "/files/a");
            long tokenB = token(w1, "/files/b");
            assertEquals(201, put(proxy, "a", "v1", tokenA).status());
            assertEquals(1, proxy.server().metrics().verifications("files", "genuine"));
            // remembered (no lookup) for at most 1 s: ZooKeeper reports no time left for the holder's session
            assertEquals(2, put(proxy, "a", "v2", tokenA).status() / 100, "remembered: no lookup");
            assertEquals(1, proxy.server().metrics().verifications("files", "remembered"));

            zk.stop();

            long start = System.nanoTime();
            Http.Response down = put(proxy, "b", "v1", tokenB);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(503, down.status(), down.body());
            assertTrue(down.body().contains("verifier-unavailable"), down.body());
            assertTrue(down.header("Retry-After").isPresent());
            assertEquals(Optional.empty(), stored(dir, "b"));
            assertEquals(Optional.empty(), proxy.server().store().get("files/b"));
            assertTrue(tookMs < 2000, "answered in " + tookMs + " ms");

            zk.restart(); // same data directory: w1's session and lock nodes are still there
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            Http.Response after;
            do {
                after = put(proxy, "b", "v1", tokenB);
                assertTrue(after.status() == 503 || after.status() == 201, after.status() + " " + after.body());
                assertTrue(System.nanoTime() < deadline, "the verifier answers again once ZooKeeper does");
            } while (after.status() == 503);
            assertEquals(Optional.of("v1"), stored(dir, "b"));
        }
    }

    @Test
    void aScopeThatIsNoZooKeeperPathIsRefused() throws Exception {
        try (TestingServer zk = new TestingServer(true);
             ProxyFixture proxy = startProxy("kind: zookeeper\nservers: ${ZK}", zk)) {
            // U+FFF0 (a specials-block character): a valid path segment for the proxy, not for ZooKeeper
            Http.Response r = put(proxy, "a%EF%BF%B0", "v", 7);
            assertEquals(403, r.status(), r.body());
            assertTrue(r.body().contains("not a valid ZooKeeper path"), r.body());
            assertEquals(Optional.empty(), stored(dir, "a\ufff0"));
            assertEquals(Optional.empty(), proxy.server().store().get("files/a\ufff0"));
        }
    }
}
