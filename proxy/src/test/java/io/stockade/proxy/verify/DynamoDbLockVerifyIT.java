package io.stockade.proxy.verify;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

import io.stockade.proxy.VerifiedJobs;
import io.stockade.testing.Dynalite;
import io.stockade.testing.Http;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.TcpRelay;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.ReturnValue;

import static io.stockade.proxy.verify.dynamodb.DynamoDbLockVerifier.KEY;
import static io.stockade.proxy.verify.dynamodb.DynamoDbLockVerifier.LEASE_DURATION;
import static io.stockade.proxy.verify.dynamodb.DynamoDbLockVerifier.RELEASED;
import static io.stockade.proxy.verify.dynamodb.DynamoDbLockVerifier.RVN;
import static io.stockade.proxy.verify.dynamodb.DynamoDbLockVerifier.TOKEN;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify: {kind: dynamodb}} through a real proxy and the file backend, against dynalite (a real DynamoDB
 * API server). The lock items are written here by hand with the recipe's conditional writes, by the attribute names
 * the verifier reads (that the client SDK's provider writes the same is checked by client-sdk's
 * {@code VerifierWireFormatIT}). Every refusal is
 * checked to have written nothing and left the fence alone.
 */
@RequiresTools(Tools.Tool.DYNALITE)
class DynamoDbLockVerifyIT {
    private static Dynalite dynalite;
    private static DynamoDbClient db;
    private static int tables;

    @TempDir
    Path dir;
    String table;
    String prefix = "locks/";
    VerifiedJobs jobs;

    /** A lock as its holder knows it. */
    record Held(String key, long token, String rvn) {
    }

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
    void start() throws Exception {
        table = dynalite.createLockTable("locks-" + ++tables);
        jobs = new VerifiedJobs(dir, Dynalite.SECRET_KEY);
        start(dynalite.endpoint().toString());
    }

    @AfterEach
    void stop() {
        jobs.close();
    }

    /** (Re)starts the proxy, its verifier asking the DynamoDB API at {@code endpoint}. */
    void start(String endpoint) throws Exception {
        jobs.start("""
                kind: dynamodb
                table: ${TABLE}
                prefix: ${PREFIX}
                region: us-east-1
                endpoint: ${ENDPOINT}
                access-key: ${AWS_KEY}
                secret-key: ${AWS_SECRET}
                timeout: 1s
                cache: {enabled: false}
                """, Map.of("ENDPOINT", endpoint, "TABLE", table, "PREFIX", prefix,
                "AWS_KEY", Dynalite.ACCESS_KEY, "AWS_SECRET", Dynalite.SECRET_KEY));
    }

    /** The recipe's acquisition: absent (or released / expired with this rvn), SET holder and a new rvn, ADD 1. */
    Held take(String key, long leaseMillis, String seenRvn) {
        String rvn = UUID.randomUUID().toString();
        Map<String, AttributeValue> values = new HashMap<>(Map.of(":owner", AttributeValue.fromS("worker"),
                ":rvn", AttributeValue.fromS(rvn), ":lease", AttributeValue.fromN(Long.toString(leaseMillis)),
                ":no", AttributeValue.fromBool(false), ":one", AttributeValue.fromN("1")));
        Map<String, String> names = new HashMap<>(Map.of("#owner", "owner", "#rvn", RVN, "#lease",
                LEASE_DURATION, "#released", RELEASED, "#token", TOKEN));
        String condition;
        if (seenRvn == null) {
            condition = "attribute_not_exists(#key)";
            names.put("#key", KEY);
        } else {
            condition = "#rvn = :seen";
            values.put(":seen", AttributeValue.fromS(seenRvn));
        }
        Map<String, AttributeValue> item = db.updateItem(b -> b.tableName(table)
                .key(Map.of(KEY, AttributeValue.fromS(key)))
                .updateExpression("SET #owner = :owner, #rvn = :rvn, #lease = :lease, #released = :no"
                        + " ADD #token :one")
                .conditionExpression(condition).expressionAttributeNames(names).expressionAttributeValues(values)
                .returnValues(ReturnValue.ALL_NEW)).attributes();
        return new Held(key, Long.parseLong(item.get(TOKEN).n()), rvn);
    }

    /** The recipe's renewal or release: a new rvn on the condition that ours is still there. */
    Held write(Held held, boolean release) {
        String rvn = UUID.randomUUID().toString();
        db.updateItem(b -> b.tableName(table).key(Map.of(KEY, AttributeValue.fromS(held.key())))
                .updateExpression(release ? "SET #rvn = :new, #released = :yes REMOVE #owner" : "SET #rvn = :new")
                .conditionExpression("#rvn = :old")
                .expressionAttributeNames(release ? Map.of("#rvn", RVN, "#released", RELEASED, "#owner", "owner")
                        : Map.of("#rvn", RVN))
                .expressionAttributeValues(release ? Map.of(":new", AttributeValue.fromS(rvn), ":old",
                        AttributeValue.fromS(held.rvn()), ":yes", AttributeValue.fromBool(true))
                        : Map.of(":new", AttributeValue.fromS(rvn), ":old", AttributeValue.fromS(held.rvn()))));
        return new Held(held.key(), held.token(), rvn);
    }

    @Test
    void theHoldersTokenWritesAndKeepsWritingWhileItRenews() throws Exception {
        Held a = take("locks/job-a", 60_000, null);
        assertEquals(1, a.token(), "the first holder's token");
        assertEquals(201, jobs.put("a", "v1", a.token()).status());
        assertEquals(Optional.of("v1"), jobs.stored("a"));
        assertEquals(Optional.of(a.token()), jobs.fence("a"));
        a = write(a, false);
        assertEquals(2, jobs.put("a", "v2", a.token()).status() / 100, "a renewal keeps the token");
        assertEquals(Optional.of("v2"), jobs.stored("a"));
    }

    @Test
    void anInventedOrInflatedTokenIsRefused() throws Exception {
        Held b = take("locks/job-b", 60_000, null);
        b = take("locks/job-b", 60_000, b.rvn()); // a second acquisition: token 2
        assertEquals(2, b.token());
        for (long forged : List.of(Long.MAX_VALUE, b.token() + 1, b.token() - 1, 0L)) {
            jobs.assertRefused(jobs.put("b", "evil", forged), "b",
                    "not the token of the holder of the DynamoDB lock 'locks/job-b' (table " + table + ")",
                    "token " + b.token(),
                    Optional.empty(), Optional.empty());
        }
        assertEquals(201, jobs.put("b", "honest", b.token()).status(), "the genuine holder is not locked out");
        assertEquals(Optional.of("honest"), jobs.stored("b"));
    }

    /**
     * The zombie: A holds the lock (lease 1.5 s) and writes, then stops renewing. Once the proxy has read A's rvn
     * unchanged for the lease duration it refuses A as expired, before anyone took over; B then takes the lock over
     * on the rvn it saw (the contender's rule) and A's token stays refused, now as another holder's.
     */
    @Test
    void anOldHolderThatStoppedRenewingIsRefusedThenTakenOver() throws Exception {
        Held a = take("locks/job-c", 1500, null);
        assertEquals(201, jobs.put("c", "from-a", a.token()).status()); // the proxy's first sighting of A's rvn
        long firstSeen = System.nanoTime();
        while (System.nanoTime() - firstSeen < 1_600_000_000L) {
            Thread.sleep(100);
        }
        jobs.assertRefused(jobs.put("c", "a-late", a.token()), "c",
                "the lease on the DynamoDB lock 'locks/job-c' (table " + table + ") has expired", null,
                Optional.of("from-a"), Optional.of(a.token()));

        Held b = take("locks/job-c", 60_000, a.rvn());
        assertTrue(b.token() > a.token(), "the next holder's token is higher");
        jobs.assertRefused(jobs.put("c", "a-zombie", a.token()), "c", "not the token of the holder",
                "token " + b.token(),
                Optional.of("from-a"), Optional.of(a.token()));
        assertEquals(2, jobs.put("c", "from-b", b.token()).status() / 100);
        assertEquals(Optional.of("from-b"), jobs.stored("c"));
        assertEquals(Optional.of(b.token()), jobs.fence("c"));
    }

    /** A holder that keeps renewing is never taken for expired, however long it holds. */
    @Test
    void aRenewingHolderIsNotExpired() throws Exception {
        Held d = take("locks/job-d", 1000, null);
        long start = System.nanoTime();
        int i = 0;
        while (System.nanoTime() - start < 2_500_000_000L) {
            assertEquals(2, jobs.put("d", "v" + i++, d.token()).status() / 100);
            d = write(d, false); // renewed well within the lease
            Thread.sleep(200);
        }
        assertEquals(2, jobs.put("d", "last", d.token()).status() / 100);
    }

    @Test
    void aReleasedOrMissingItemIsRefused() throws Exception {
        Held r = take("locks/job-r", 60_000, null);
        write(r, true);
        jobs.assertRefused(jobs.put("r", "after", r.token()), "r",
                "nobody holds the DynamoDB lock 'locks/job-r' (table " + table + ") (released)", null,
                Optional.empty(), Optional.empty());
        jobs.assertRefused(jobs.put("m", "x", 1), "m",
                "nobody holds the DynamoDB lock 'locks/job-m' (table " + table + ") (no such item)", null,
                Optional.empty(), Optional.empty());
    }

    /** An item written by something else than the recipe is not taken as a lock: fail closed with 503. */
    @Test
    void anItemThatIsNotALockItemIs503() throws Exception {
        db.putItem(b -> b.tableName(table).item(Map.of(KEY, AttributeValue.fromS("locks/job-x"),
                TOKEN, AttributeValue.fromS("7"))));
        Http.Response r = jobs.put("x", "x", 7);
        jobs.assertUnavailable(r, "x", Optional.empty(), Optional.empty());
        assertTrue(r.body().contains("is not a lock item"), r.body());
    }

    @Test
    void aMissingTableOrWrongCredentialsOrNoAnswerIs503() throws Exception {
        Held f = take("locks/job-f", 60_000, null);
        String realTable = table;
        table = "no-such-table";
        start(dynalite.endpoint().toString());
        Http.Response missing = jobs.put("f", "x", f.token());
        jobs.assertUnavailable(missing, "f", Optional.empty(), Optional.empty());
        assertTrue(missing.body().contains("no table 'no-such-table'"), missing.body());
        table = realTable;

        // dynalite answers, but never: the SDK's attempts end at the timeout
        try (TcpRelay relay = TcpRelay.to(dynalite.port())) {
            relay.dropToClient(true);
            start("http://127.0.0.1:" + relay.port());
            long t0 = System.nanoTime();
            Http.Response silent = jobs.put("f", "x", f.token());
            jobs.assertUnavailable(silent, "f", Optional.empty(), Optional.empty());
            assertTrue((System.nanoTime() - t0) / 1_000_000 < 5_000, "bounded by the 1s timeout");
        }
        start(dynalite.endpoint().toString());
        assertEquals(201, jobs.put("f", "x", f.token()).status(), "and back once DynamoDB answers");
    }

    @Test
    void aScopeLongerThanAPartitionKeyIsRefused() throws Exception {
        prefix = "p".repeat(2040) + "/";
        start(dynalite.endpoint().toString());
        String id = "k".repeat(8);
        jobs.assertRefused(jobs.put(id, "x", 1), id, "cannot be a DynamoDB partition key", null, Optional.empty(),
                Optional.empty());
    }
}
