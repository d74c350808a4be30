package io.stockade.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

import io.stockade.testing.RedisServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Redis provider against a real {@code redis-server} (Debian's, each test class its own on a free loopback
 * port): acquire, contention, renewal, release, expiry, re-acquisition, every loss reported once with its reason,
 * racing holders, and tokens strictly rising per lock across holders and across a Redis crash with the AOF on.
 */
@RequiresTools(Tools.Tool.REDIS)
class RedisLeaseIT {

    private static RedisServer redis;
    private static LeaseProvider a;
    private static LeaseProvider b;
    private static Jedis admin;

    @BeforeAll
    static void start() {
        redis = RedisServer.start(RedisServer.options());
        a = Leases.newBuilder().holderIdentity("a").redis(redis.url());
        b = Leases.newBuilder().holderIdentity("b").redis(redis.url());
        admin = new Jedis(redis.url());
    }

    @AfterAll
    static void stop() {
        for (AutoCloseable c : new AutoCloseable[] {admin, a, b, redis}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception ignored) {
                // closing
            }
        }
    }

    private static String name() {
        return "jobs/" + UUID.randomUUID();
    }

    private static CompletableFuture<LossReason> heard(Lease lease) {
        CompletableFuture<LossReason> heard = new CompletableFuture<>();
        lease.addListener((l, r) -> heard.complete(r));
        return heard;
    }

    @Test
    void acquireContendReleaseAndTokensStrictlyIncreaseAcrossHolders() throws Exception {
        String name = name();
        Lease first = a.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5));
        String value = admin.get(name);
        assertTrue(value.matches(first.token() + ":[0-9a-f]{32}:a"), value);
        assertEquals(Long.toString(first.token()), admin.get("stockade:token:{" + name + "}"));
        long pttl = admin.pttl(name);
        assertTrue(pttl > 4000 && pttl <= 5000, "PX ttl: " + pttl);
        assertEquals(-1, admin.pttl("stockade:token:{" + name + "}"), "the counter never expires");

        assertThrows(TimeoutException.class, () -> b.acquire(name, Duration.ofSeconds(5), Duration.ofMillis(300)));
        first.close();
        assertNull(admin.get(name), "released: the key is deleted");
        Lease second = b.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5));
        assertTrue(second.token() > first.token(), second.token() + " > " + first.token());
        second.close();
        try (Lease third = a.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5))) {
            assertTrue(third.token() > second.token());
        }
    }

    @Test
    void theTokenIsNeverBelowTheServersClockInMilliseconds() throws Exception {
        String name = name();
        long before = Long.parseLong(admin.time().get(0)) * 1000;
        try (Lease lease = a.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5))) {
            long after = (Long.parseLong(admin.time().get(0)) + 1) * 1000;
            assertTrue(lease.token() >= before && lease.token() <= after, lease.token() + " in [" + before + ", "
                    + after + "]");
        }
        // a counter above the clock (e.g. many acquisitions within one millisecond) keeps counting by one
        admin.set("stockade:token:{" + name + "}", Long.toString(Long.parseLong(admin.time().get(0)) * 1000 + 60_000));
        long high = Long.parseLong(admin.get("stockade:token:{" + name + "}"));
        try (Lease lease = b.acquire(name, Duration.ofSeconds(5), Duration.ofSeconds(5))) {
            assertEquals(high + 1, lease.token());
        }
    }

    @Test
    void aWaitingHolderGetsTheLockWhenTheHolderReleases() throws Exception {
        String name = name();
        Lease first = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return b.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(20));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        assertThrows(TimeoutException.class, () -> waiting.get(300, TimeUnit.MILLISECONDS));
        first.close();
        try (Lease second = waiting.get(10, TimeUnit.SECONDS)) {
            assertTrue(second.token() > first.token());
            assertTrue(second.isValid());
        }
    }

    @Test
    void theWatchdogRenewsPastTheTtl() throws Exception {
        String name = name();
        // a 3 s lease, waited past: with 1 s the renew deadline (667 ms) was shorter than a renewal's wait for a core
        // on a loaded 2-core host (the pattern that lost PgBouncerSdkIT's and KubernetesLeaseIT's leases)
        try (Lease lease = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5))) {
            Thread.sleep(3500); // past the TTL, three renewals: the point is that time passes
            assertTrue(lease.isValid(), "renewed: " + lease.lossReason());
            lease.checkpoint(Duration.ofMillis(200));
            assertTrue(admin.pttl(name) > 0, "the key's ttl was extended");
            assertThrows(TimeoutException.class, () -> b.acquire(name, Duration.ofSeconds(1), Duration.ofMillis(300)));
        }
    }

    /**
     * The lock expires in Redis (its TTL cut short by hand: what a holder that stopped renewing looks like), another
     * holder takes it, and the first holder's next renewal — a compare-and-PEXPIRE on its own value — is refused.
     */
    @Test
    void anExpiredLockIsTakenByAnotherHolderAndTheFirstHearsRenewalRefused() throws Exception {
        String name = name();
        Lease first = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> heard = heard(first);
        admin.pexpire(name, 1);
        try (Lease second = b.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(2))) {
            assertTrue(second.token() > first.token());
            assertEquals(LossReason.RENEWAL_REFUSED, heard.get(3, TimeUnit.SECONDS));
            assertThrows(LeaseLostException.class, () -> first.checkpoint(Duration.ZERO));
            first.close(); // never deletes the second holder's lock: the value is not ours
            assertTrue(admin.get(name).startsWith(second.token() + ":"), admin.get(name));
            assertTrue(second.isValid());
        }
        try (Lease again = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5))) {
            assertTrue(again.token() > first.token(), "re-acquiring after a loss gets a new token");
        }
        assertEquals(1, heardCount(first), "a loss is reported once");
    }

    private static int heardCount(Lease lease) {
        AtomicInteger n = new AtomicInteger();
        lease.addListener((l, r) -> n.incrementAndGet()); // added after the end: called once, at once
        return n.get();
    }

    @Test
    void aDeletedKeyIsReportedAsRevoked() throws Exception {
        String name = name();
        Lease lease = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> heard = heard(lease);
        admin.del(name);
        assertEquals(LossReason.REVOKED, heard.get(3, TimeUnit.SECONDS), "noticed within one renew interval");
        assertThrows(LeaseLostException.class, () -> lease.checkpoint(Duration.ZERO));
        lease.close();
    }

    /** The same identity taking the lock again replaces its own lease with a new token (as with PostgreSQL). */
    @Test
    void theSameIdentityReplacesItsOwnLockWithANewToken() throws Exception {
        String name = name();
        try (LeaseProvider restarted = Leases.newBuilder().holderIdentity("a").redis(redis.url())) {
            Lease before = a.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(5));
            CompletableFuture<LossReason> heard = heard(before);
            try (Lease after = restarted.acquire(name, Duration.ofSeconds(3), Duration.ofMillis(100))) {
                assertTrue(after.token() > before.token());
                assertEquals(LossReason.RENEWAL_REFUSED, heard.get(3, TimeUnit.SECONDS));
            }
        }
    }

    /**
     * Eight threads with their own identities race for one lock, 40 acquisitions in all: never two holders at once
     * (each holder checks that nobody else is inside while it holds), and the tokens rise in the order the lock was
     * taken.
     */
    @Test
    void racingHoldersNeverOverlapAndTheirTokensRiseInOrder() throws Exception {
        String name = name();
        int threads = 8;
        int rounds = 5;
        List<LeaseProvider> providers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            providers.add(Leases.newBuilder().holderIdentity("racer-" + i).redis(redis.url()));
        }
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (LeaseProvider p : providers) {
                done.add(pool.submit(() -> {
                    go.await();
                    for (int r = 0; r < rounds; r++) {
                        try (Lease lease = p.acquire(name, Duration.ofSeconds(3), Duration.ofSeconds(30))) {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            tokens.add(lease.token());
                            Thread.sleep(5);
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            go.countDown();
            for (Future<?> f : done) {
                f.get(60, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
            providers.forEach(LeaseProvider::close);
        }
        assertEquals(0, overlaps.get(), "two holders at once");
        assertEquals(threads * rounds, tokens.size());
        for (int i = 1; i < tokens.size(); i++) {
            assertTrue(tokens.get(i) > tokens.get(i - 1), "token " + i + " did not rise: " + tokens);
        }
    }

    /**
     * With the AOF on ({@code appendfsync always}), a {@code kill -9} of Redis keeps the counter: after the restart it
     * still holds the last token, and the next holder's token is higher.
     */
    @Test
    void tokensRiseAcrossARedisCrashWithTheAofOn() throws Exception {
        try (RedisServer own = RedisServer.start(RedisServer.options().aof(true));
             LeaseProvider p = Leases.newBuilder().holderIdentity("p").redis(own.url());
             Jedis direct = new Jedis(own.url())) {
            Lease before = p.acquire("jobs/aof", Duration.ofSeconds(3), Duration.ofSeconds(5));
            CompletableFuture<LossReason> heard = heard(before);
            own.restart(); // SIGKILL, then start on the same port and directory: the AOF is replayed
            try (Jedis after = new Jedis(own.url())) {
                assertEquals(Long.toString(before.token()), after.get("stockade:token:{jobs/aof}"),
                        "the counter survived the crash");
                assertTrue(after.get("jobs/aof").startsWith(before.token() + ":"), "and so did the lock");
                // the holder's lease survives too: its next renewal (the pool reconnects) finds its own value and
                // moves the key's expiry forward again
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (after.pttl("jobs/aof") > 2600 && System.nanoTime() < deadline) {
                    Thread.sleep(20); // the time to live runs down ...
                }
                while (after.pttl("jobs/aof") <= 2800 && System.nanoTime() < deadline) {
                    Thread.sleep(20); // ... until a renewal sets it back to 3 s
                }
                assertTrue(after.pttl("jobs/aof") > 2800, "no renewal after the restart: " + before.lossReason());
            }
            assertFalse(heard.isDone(), String.valueOf(before.lossReason()));
            assertTrue(before.isValid());
            before.close();
            try (Lease next = p.acquire("jobs/aof", Duration.ofSeconds(3), Duration.ofSeconds(5))) {
                assertTrue(next.token() > before.token(), next.token() + " > " + before.token());
            }
        }
    }

    /**
     * Without persistence a restart forgets the counter and the lock; the next token is still higher, because the
     * token is never below the server's clock (the same floor that keeps it rising across a failover).
     */
    @Test
    void withoutPersistenceTheClockStillKeepsTokensRising() throws Exception {
        try (RedisServer own = RedisServer.start(RedisServer.options());
             LeaseProvider p = Leases.newBuilder().holderIdentity("p").redis(own.url())) {
            Lease before = p.acquire("jobs/volatile", Duration.ofSeconds(3), Duration.ofSeconds(5));
            CompletableFuture<LossReason> heard = heard(before);
            own.restart();
            try (Jedis after = new Jedis(own.url())) {
                assertNull(after.get("stockade:token:{jobs/volatile}"), "nothing persisted");
            }
            assertEquals(LossReason.REVOKED, heard.get(3, TimeUnit.SECONDS), "its lock is gone");
            try (Lease next = p.acquire("jobs/volatile", Duration.ofSeconds(3), Duration.ofSeconds(5))) {
                assertTrue(next.token() > before.token(), next.token() + " > " + before.token());
            }
        }
    }

    @Test
    void aLostConnectionEndsTheLease() throws Exception {
        try (RedisServer own = RedisServer.start(RedisServer.options());
             LeaseProvider p = Leases.newBuilder().redis(own.url())) {
            Lease lease = p.acquire("jobs/conn", Duration.ofSeconds(3), Duration.ofSeconds(10));
            CompletableFuture<LossReason> heard = heard(lease);
            own.kill();
            LossReason r = heard.get(5, TimeUnit.SECONDS);
            assertEquals(LossReason.CONNECTION_LOST, r);
            assertFalse(lease.isValid());
            lease.close();
            IllegalStateException down = assertThrows(IllegalStateException.class,
                    () -> p.acquire("jobs/conn", Duration.ofSeconds(3), Duration.ofSeconds(1)));
            assertTrue(down.getMessage().contains("redis://127.0.0.1:" + own.port()), down.getMessage());
        }
    }

    /** A stopped Redis (SIGSTOP) answers nothing: the renewal gets only the time left, then the lease is lost. */
    @Test
    void aRedisThatStopsAnsweringEndsTheLeaseBeforeItsValidityRunsOut() throws Exception {
        try (RedisServer own = RedisServer.start(RedisServer.options());
             LeaseProvider p = Leases.newBuilder().redis(own.url())) {
            Lease lease = p.acquire("jobs/stopped", Duration.ofSeconds(3), Duration.ofSeconds(10));
            CompletableFuture<LossReason> heard = heard(lease);
            long stopped = System.nanoTime();
            own.pause();
            try {
                LossReason r = heard.get(6, TimeUnit.SECONDS);
                Duration after = Duration.ofNanos(System.nanoTime() - stopped);
                assertTrue(r == LossReason.CONNECTION_LOST || r == LossReason.EXPIRED, r.toString());
                assertTrue(after.compareTo(Duration.ofMillis(3500)) < 0, "lost after " + after);
            } finally {
                own.resume();
            }
        }
    }

    @Test
    void namesThatWouldCollideWithTheCountersAreRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> a.acquire("stockade:token:{x}", Duration.ofSeconds(3), Duration.ZERO));
        assertTrue(e.getMessage().contains("token counters"), e.getMessage());
    }

    @Test
    void aBadUrlIsRefusedWhenTheProviderIsBuilt() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Leases.newBuilder().redis("http://127.0.0.1:6379"));
        assertTrue(e.getMessage().contains("redis://host:port"), e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> Leases.newBuilder().redis("redis://app:secret@127.0.0.1:6379/x"));
        assertFalse(e.getMessage().contains("secret"), "the password must not reach a message: " + e.getMessage());
    }
}
