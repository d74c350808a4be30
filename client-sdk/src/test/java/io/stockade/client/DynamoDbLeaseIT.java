package io.stockade.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.stockade.testing.Dynalite;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The DynamoDB provider against dynalite, a real DynamoDB API server (a third-party implementation, not AWS; its
 * conditional writes are checked first by the proxy's {@code DynaliteConditionalWritesIT}).
 */
@RequiresTools(Tools.Tool.DYNALITE)
class DynamoDbLeaseIT {
    private static Dynalite dynalite;
    private static DynamoDbClient db;
    private static int tables;

    private final List<LeaseProvider> providers = new ArrayList<>();
    private String table;

    @TempDir
    Path dir;

    @BeforeAll
    static void startDynalite() {
        dynalite = Dynalite.start();
        db = dynalite.client();
    }

    @AfterAll
    static void stopDynalite() {
        if (db != null) {
            db.close();
        }
        if (dynalite != null) {
            dynalite.close();
        }
    }

    @BeforeEach
    void table() {
        table = "locks-" + ++tables;
        DynamoDbLockTable.create(db, table);
    }

    @AfterEach
    void stop() {
        providers.forEach(LeaseProvider::close);
    }

    private LeaseProvider provider(String holder) {
        return provider(holder, db);
    }

    private LeaseProvider provider(String holder, DynamoDbClient client) {
        LeaseProvider p = Leases.newBuilder().holderIdentity(holder).dynamodb(client, table, "locks/");
        providers.add(p);
        return p;
    }

    private Map<String, AttributeValue> item(String name) {
        return db.getItem(b -> b.tableName(table).key(Map.of("key", AttributeValue.fromS("locks/" + name)))
                .consistentRead(true)).item();
    }

    private static DynamoDbLeaseService.Handle handle(Lease lease) {
        return (DynamoDbLeaseService.Handle) ((WatchedLease) lease).grant().handle();
    }

    private static CompletableFuture<LossReason> lossOf(Lease lease) {
        CompletableFuture<LossReason> reported = new CompletableFuture<>();
        lease.addListener((l, reason) -> reported.complete(reason));
        return reported;
    }

    @Test
    void theTokenIsTheItemsCounterAndASecondHolderWaitsForTheRelease() throws Exception {
        String name = "files/" + UUID.randomUUID();
        Lease first = provider("w1").acquire(name, Duration.ofSeconds(10), Duration.ofSeconds(5));
        assertEquals(1, first.token());
        Map<String, AttributeValue> item = item(name);
        assertEquals("1", item.get("token").n());
        assertEquals("w1", item.get("owner").s());
        assertEquals(handle(first).rvn, item.get("rvn").s());
        assertEquals("10000", item.get("leaseDuration").n());
        assertEquals(false, item.get("released").bool());

        LeaseProvider second = provider("w2");
        TimeoutException busy = assertThrows(TimeoutException.class,
                () -> second.acquire(name, Duration.ofSeconds(10), Duration.ofMillis(300)));
        assertTrue(busy.getMessage().contains("held by 'w1'"), busy.getMessage());

        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return second.acquire(name, Duration.ofSeconds(10), Duration.ofSeconds(10));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        first.close();
        assertEquals(LossReason.RELEASED, first.lossReason().orElseThrow());
        Lease next = waiting.get(10, TimeUnit.SECONDS);
        assertEquals(2, next.token(), "the counter rises across the release");
        assertEquals("w2", item(name).get("owner").s());
        next.close();
        item = item(name);
        assertEquals(true, item.get("released").bool());
        assertFalse(item.containsKey("owner"));
        assertEquals("2", item.get("token").n(), "a release keeps the item and its counter");
    }

    /** Racing contenders, each holding a moment: never two holders at once, every token one above the last. */
    @Test
    void racingContendersHoldOneAtATimeWithRisingTokens() throws Exception {
        int contenders = 6;
        int rounds = 3;
        AtomicInteger inside = new AtomicInteger();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        ExecutorService pool = Executors.newFixedThreadPool(contenders);
        try {
            List<Future<?>> all = new ArrayList<>();
            for (int c = 0; c < contenders; c++) {
                LeaseProvider p = provider("racer-" + c);
                all.add(pool.submit(() -> {
                    for (int r = 0; r < rounds; r++) {
                        try (Lease lease = p.acquire("files/raced", Duration.ofSeconds(5), Duration.ofSeconds(60))) {
                            assertEquals(1, inside.incrementAndGet(), "two holders at once");
                            tokens.add(lease.token());
                            Thread.sleep(10);
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        List<Long> expected = new ArrayList<>();
        for (long t = 1; t <= contenders * rounds; t++) {
            expected.add(t);
        }
        assertEquals(expected, tokens, "tokens in the order the holders held, one above the last");
    }

    @Test
    void theWatchdogRenewsAndTheLeaseOutlivesItsTtl() throws Exception {
        // a 3 s lease, waited past (1 s gave a renewal 667 ms to answer on a loaded host: RedisLeaseIT's note)
        Lease lease = provider("w1").acquire("files/renewed", Duration.ofSeconds(3), Duration.ofSeconds(5));
        String first = handle(lease).rvn;
        Thread.sleep(3500);
        assertTrue(lease.isValid());
        assertNotEquals(first, handle(lease).rvn, "renewed: a new record version");
        assertEquals(handle(lease).rvn, item("files/renewed").get("rvn").s());
        assertEquals(1, lease.token(), "a renewal keeps the token");
    }

    /**
     * The rvn trick: a holder that stopped renewing (here: acquired through the service alone, no watchdog) is taken
     * over once a contender has read its rvn unchanged for its lease duration, on the contender's clock, not before;
     * the old holder's renewal is then refused.
     */
    @Test
    void anAbandonedLockIsTakenOverAfterItsLeaseDurationAndTheOldHolderIsRefused() throws Exception {
        DynamoDbLeaseService raw = new DynamoDbLeaseService(db, table, "locks/", Ticker.system());
        Duration ttl = Duration.ofMillis(1500);
        LeaseService.Grant abandoned = raw.acquire("files/abandoned", "stopped", ttl, Duration.ofSeconds(5));
        long t0 = System.nanoTime();
        Lease next = provider("w2").acquire("files/abandoned", Duration.ofSeconds(10), Duration.ofSeconds(10));
        long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertTrue(waited >= 1500, "taken over only after the lease duration: " + waited + "ms");
        assertEquals(abandoned.token() + 1, next.token());
        assertEquals(LeaseService.Renewal.REFUSED, raw.renew("files/abandoned", "stopped", abandoned, ttl,
                Duration.ofSeconds(5)));
        raw.release("files/abandoned", "stopped", abandoned);
        assertEquals("w2", item("files/abandoned").get("owner").s(), "the old holder's release leaves it alone");
        assertTrue(next.isValid());
    }

    /**
     * A caller that tries again and again with timeouts shorter than the lease (as a job loop does) still takes an
     * abandoned lock over: the rvn it waits out is remembered across its acquire calls.
     */
    @Test
    void shortAcquireAttemptsAddUpToTheLeaseDuration() throws Exception {
        DynamoDbLeaseService raw = new DynamoDbLeaseService(db, table, "locks/", Ticker.system());
        LeaseService.Grant abandoned = raw.acquire("files/loop", "stopped", Duration.ofSeconds(1),
                Duration.ofSeconds(5));
        LeaseProvider contender = provider("w2");
        long t0 = System.nanoTime();
        Lease next = null;
        for (int attempt = 0; attempt < 40 && next == null; attempt++) {
            try {
                next = contender.acquire("files/loop", Duration.ofSeconds(10), Duration.ofMillis(200));
            } catch (TimeoutException held) {
                Thread.sleep(50); // between attempts: time the sighting must still count
            }
        }
        assertTrue(next != null, "never taken over with 200 ms attempts");
        assertTrue(System.nanoTime() - t0 >= 1_000_000_000L, "not before the lease duration");
        assertEquals(abandoned.token() + 1, next.token());
    }

    @Test
    void aLockTakenOverOrReleasedUnderTheHolderEndsTheLease() throws Exception {
        Lease taken = provider("w1").acquire("files/taken", Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> takenLoss = lossOf(taken);
        db.updateItem(b -> b.tableName(table).key(Map.of("key", AttributeValue.fromS("locks/files/taken")))
                .updateExpression("SET rvn = :r ADD #t :one").expressionAttributeNames(Map.of("#t", "token"))
                .expressionAttributeValues(Map.of(":r", AttributeValue.fromS("someone-else"),
                        ":one", AttributeValue.fromN("1"))));
        assertEquals(LossReason.RENEWAL_REFUSED, takenLoss.get(5, TimeUnit.SECONDS));
        assertFalse(taken.isValid());

        Lease released = provider("w1").acquire("files/released", Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> releasedLoss = lossOf(released);
        db.updateItem(b -> b.tableName(table).key(Map.of("key", AttributeValue.fromS("locks/files/released")))
                .updateExpression("SET released = :y, rvn = :r")
                .expressionAttributeValues(Map.of(":y", AttributeValue.fromBool(true),
                        ":r", AttributeValue.fromS("operator"))));
        assertEquals(LossReason.REVOKED, releasedLoss.get(5, TimeUnit.SECONDS));
    }

    /** The answer to the taking write is lost (injected after DynamoDB applied it): the next read recognises it. */
    @Test
    void aTakingWriteWhoseAnswerWasLostIsRecognisedByItsRvn() throws Exception {
        AtomicBoolean lose = new AtomicBoolean(true);
        ExecutionInterceptor loseOneAnswer = new ExecutionInterceptor() {
            @Override
            public void afterExecution(Context.AfterExecution context, ExecutionAttributes attributes) {
                if (context.request() instanceof UpdateItemRequest && lose.getAndSet(false)) {
                    throw SdkClientException.create("injected: the answer was lost on the way back");
                }
            }
        };
        try (DynamoDbClient lossy = DynamoDbClient.builder().endpointOverride(dynalite.endpoint())
                .region(Region.of(Dynalite.REGION)).httpClient(Apache5HttpClient.builder().build())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(Dynalite.ACCESS_KEY,
                        Dynalite.SECRET_KEY)))
                .overrideConfiguration(c -> c.addExecutionInterceptor(loseOneAnswer)).build()) {
            // with a 60 s lease, waiting out "someone else's" lock would miss the 5 s timeout
            Lease lease = provider("w1", lossy).acquire("files/lost", Duration.ofSeconds(60), Duration.ofSeconds(5));
            assertFalse(lose.get(), "the answer was lost");
            assertEquals(1, lease.token());
            assertEquals(handle(lease).rvn, item("files/lost").get("rvn").s());
            lease.close();
        }
    }

    @Test
    void badNamesAndTablesAreClearErrors() {
        assertThrows(IllegalArgumentException.class, () -> Leases.newBuilder().dynamodb(db, "x", "locks/"));
        IllegalArgumentException longKey = assertThrows(IllegalArgumentException.class,
                () -> provider("w1").acquire("k".repeat(2100), Duration.ofSeconds(5), Duration.ofSeconds(1)));
        assertTrue(longKey.getMessage().contains("at most 2048"), longKey.getMessage());
        IllegalStateException noTable = assertThrows(IllegalStateException.class,
                () -> Leases.newBuilder().dynamodb(db, "no-such-table", "").acquire("a", Duration.ofSeconds(5),
                        Duration.ofSeconds(1)));
        assertTrue(noTable.getMessage().contains("no-such-table") || String.valueOf(noTable.getCause())
                .contains("ResourceNotFound"), noTable.getMessage());
    }

    /**
     * A real proxy (a child JVM) verifying against the same dynalite: the holder writes; it stops renewing (its
     * watchdog never runs: acquired through the service alone) and once the proxy has read its rvn unchanged for the
     * lease duration its write is refused (403, nothing reaches the storage); a contender takes over and writes; the
     * old token is then stale (409).
     */
    @Test
    void aHolderThatStoppedRenewingIsRefusedByARealProxy() throws Exception {
        String name = "d-" + UUID.randomUUID();
        Path stored = dir.resolve("files").resolve("files").resolve(name);
        try (Children.Proxy proxy = new Children.Proxy(dir, "{kind: dynamodb, table: " + table
                + ", prefix: locks/, region: " + Dynalite.REGION + ", endpoint: \"" + dynalite.endpoint()
                + "\", access-key: " + Dynalite.ACCESS_KEY + ", secret-key: " + Dynalite.SECRET_KEY
                + ", cache: {enabled: false}}")) {
            HttpClient http = HttpClient.newHttpClient();
            URI file = URI.create(proxy.base + "/files/" + name);
            DynamoDbLeaseService raw = new DynamoDbLeaseService(db, table, "locks/", Ticker.system());
            LeaseService.Grant old = raw.acquire("files/" + name, "stopped", Duration.ofMillis(1500),
                    Duration.ofSeconds(5));
            assertEquals(201, put(http, file, "old", old.token()).statusCode());
            assertEquals("old", Files.readString(stored));

            Thread.sleep(1700);
            HttpResponse<String> zombie = put(http, file, "zombie", old.token());
            assertEquals(403, zombie.statusCode(), zombie.body());
            assertTrue(zombie.body().contains("has expired"), zombie.body());
            assertEquals("old", Files.readString(stored), "nothing reached the storage");

            try (Lease next = provider("w2").acquire("files/" + name, Duration.ofSeconds(10), Duration.ofSeconds(10))) {
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
